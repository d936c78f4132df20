"""The model-API proxy's client: a peer's answer passed on as it came, not decoded for a caller.

:class:`HttpClient` asks a peer for JSON and retries until it gets some; a proxy's agent has its
own client that retries, so :class:`ForwardingClient` passes on any status at once and tries
again only where the agent could not (a body nobody could read, a keep-alive connection the
peer closed as it was used). The deadline, the body cap, the secret scrubbing and every
failure's reason and cause are the client's own.

It forwards on the proxy's event loop (transport/async_connections.py says why), with the
outcome the blocking client would give for the same peer, reason and cause word for word
(tests/transport/test_forward_async.py compares the two on every fault the client's tests
know).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import zlib
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from probegate.models.bounds import loads_bounded
from probegate.models.causes import Cause
from probegate.transport.async_connections import AsyncConnectionPool, AsyncReply
from probegate.transport.connections import ConnectFailed, InvalidRequest
from probegate.transport.http import HttpClient
from probegate.transport.http_parts import Dropped, Failure, Forwarded
from probegate.transport.sse import SseEvent, is_event_stream, parse_events
from probegate.transport.usage import MalformedReply, TransportError


class ForwardingClient(HttpClient):
    """:class:`HttpClient` for a proxy: answers passed on as they came; thread-safe, and its
    event-loop half kept on the loop of its first call."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._async_pool: AsyncConnectionPool | None = None

    def route(self, url: str) -> None:
        """Work out now where ``url``'s origin goes (the environment's proxies, ``NO_PROXY``).

        Reading those imports requests' rules (about 30 ms of CPU). A proxy that knows its one
        upstream does it as it starts, so that its event loop, and with it every agent's first
        model call, does not wait for the import on the first call. Whatever goes wrong here
        (a URL that cannot be routed, an environment requests cannot read) is left for that
        call, which reads the route again and fails in its own words, as it did before this
        was read early: starting the proxy gains no new way to fail.
        """
        with contextlib.suppress(Exception):
            self._pool.target(url)

    async def forward(
        self,
        method: str,
        url: str,
        *,
        body: bytes,
        headers: Mapping[str, str],
        parse: Callable[[list[SseEvent] | Any], Any] | None = None,
    ) -> Forwarded:
        """The peer's answer passed on as it is: for a proxy, whose own client retries.

        The deadline and the body cap hold as for every request; an answer of any status is
        returned, and only a failure to get one raises :class:`TransportError`. With ``parse``
        a 2xx answer is also read, as :meth:`request_events` reads one (a stream's events,
        else JSON), and what ``parse`` returns is the answer's ``read``. A body that cannot be
        read, or that ``parse`` finds malformed (a :class:`MalformedReply`), is missing
        evidence: it is asked for again like a 5xx, ``retries`` times with the client's
        backoff, and then a :class:`MalformedReply` says what was wrong. Apart from that, one
        more try is made only when the connection dropped before any reply: a pooled
        keep-alive connection the peer had closed meanwhile, which no request reached.

        It runs on an event loop, without a thread (the proxy's; transport/async_connections.py
        says why), and keeps its connections on the loop of its first call; :meth:`close_async`
        closes them there.
        """
        failure: Failure | None = None
        for attempt in range(self.retries + 1 if parse is not None else 1):
            if attempt:
                with self._lock:
                    self.stats.retries += 1
                await asyncio.sleep(self._delay(attempt, failure) or 0.0)
            try:
                answer = await self._once(method, url, body, headers)
            except Dropped:
                answer = await self._once(method, url, body, headers)
            if parse is None or not 200 <= answer.status < 300:
                return answer
            try:
                return replace(answer, read=parse(self._decoded(answer)))
            except MalformedReply as exc:
                with self._lock:
                    self.stats.unreadable += 1
                failure = Failure(exc.reason, True, Cause.UNREADABLE)
        assert failure is not None
        raise MalformedReply(self.scrub(failure.reason + self._tries_note(failure)))

    def close_async(self) -> None:
        """Close the connections :meth:`forward` keeps, on the loop it ran on."""
        if self._async_pool is not None:
            self._async_pool.close()

    async def _once(
        self, method: str, url: str, body: bytes, headers: Mapping[str, str]
    ) -> Forwarded:
        """One try: the answer, or the error it ends with (:class:`Dropped` when no reply came
        at all)."""
        if self._async_pool is None:
            self._async_pool = AsyncConnectionPool(self._pool)
        reply: AsyncReply | None = None
        raw: bytes | Failure
        try:
            async with asyncio.timeout(self.timeout):
                reply = await self._async_pool.send(method, url, body=body, headers=headers)
                raw = await self._read_async(reply)
        except TimeoutError:
            raw = self._slow()
        except (OSError, http.client.HTTPException, ConnectFailed, InvalidRequest) as exc:
            raw = self._network_failure(exc, expired=False, replied=reply is not None)
        finally:
            if reply is not None:
                reply.close()
        return self._forwarded(reply, raw)

    def _forwarded(self, reply: AsyncReply | None, raw: bytes | Failure) -> Forwarded:
        """A try's answer as :meth:`forward` returns it, or the error it ends with."""
        if isinstance(raw, Failure):
            if raw.dropped:
                raise Dropped(self.scrub(raw.reason), cause=raw.cause)
            raise TransportError(self.scrub(raw.reason), cause=raw.cause)
        assert reply is not None
        with self._lock:
            self.stats.tries += 1
            status = reply.status
            self.stats.by_status[status] = self.stats.by_status.get(status, 0) + 1
        return Forwarded(status, dict(reply.headers.items()), raw)

    def _decoded(self, answer: Forwarded) -> Any:
        """A forwarded answer's body as :meth:`_decode` reads one: events, else JSON."""
        kind = next((v for k, v in answer.headers.items() if k.lower() == "content-type"), "")
        if is_event_stream(kind):
            stream = parse_events(answer.body)
            if not stream:
                raise MalformedReply(self._no_events(answer.status, answer.body))
            return stream
        try:
            return loads_bounded(answer.body)
        except (UnicodeDecodeError, ValueError) as exc:
            raise MalformedReply(self._unreadable(answer.status, kind, answer.body, exc)) from None

    async def _read_async(self, reply: AsyncReply) -> bytes | Failure:
        """:meth:`_read` on the loop; the deadline is the caller's ``asyncio.timeout``."""
        if self._announced_too_large(reply.headers.get("Content-Length")):
            return self._too_large()
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in reply.chunks():
                size += len(chunk)
                if size > self.max_body_bytes:
                    return self._too_large()
                chunks.append(chunk)
        except zlib.error:
            return self._undecodable()
        return b"".join(chunks)
