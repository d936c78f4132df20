"""The one HTTP client: every network target, the guard and the LLM judge share it.

Real endpoints misbehave in every way a scan must survive: they rate-limit, fail with 5xx,
answer with HTML error pages or half a JSON document, drop connections, stream a reply one byte
at a time, or send a gigabyte. Each of those ends here as a :class:`TransportError` with a short
reason, so the attempt is *unjudged* (never resisted) and the scan goes on.

Why each piece is the way it is:

- One pool of keep-alive connections sized to ``--concurrency`` (transport/connections.py, on
  ``http.client``): connection reuse is most of the throughput against a fast agent, a pool
  smaller than the worker count would serialise workers on the pool instead of on the agent,
  and the client's own CPU per request is what bounds a scan against a fast agent.
- Retries with exponential backoff and jitter on 429, 5xx, transient network failures and
  replies whose body cannot be read (an HTML page from a proxy, JSON cut off, an empty body,
  or, through the caller's ``parse``, a body without the fields its protocol needs): missing
  evidence is a transient fault, never a verdict;
  ``Retry-After`` (seconds or an HTTP date) is honoured by pausing *every* worker, because a
  server that says "slow down" means the whole client, not one thread, until the scan has
  paused for its ``max_wait`` in total: past that a 429 gets the ordinary backoff, so a server
  that asks every reply to wait cannot hold the scan. Other 4xx are the request's fault and
  are not retried. Every wait goes through the request limiter, so it ends when the scan stops
  or its deadline passes.
- A total deadline per request, enforced by a watchdog that shuts the socket down
  (transport/deadlines.py); the scan's own deadline, when it comes first, ends it too. A
  request's retries are one :class:`_Tries` (policy and state), and a request no scan spends
  from gets the null limiter (``UNLIMITED``), so the loop asks the same questions either way.
- A cap on the body size, read as a stream and abandoned at the cap; a body nested deeper than
  any reply needs has its deep values cut while it is parsed (models/bounds.py).
- Secrets (API keys, header values taken from the environment) are scrubbed from every message
  this module produces, in every spelling and piece redaction hides (models/spellings.py), and
  no message ever includes request headers.
"""

from __future__ import annotations

import http.client
import json
import random
import re
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from probegate import __version__
from probegate.models.bounds import loads_bounded
from probegate.models.causes import Cause, http_cause
from probegate.models.spellings import Spellings, hide
from probegate.terminal import clean
from probegate.transport.connections import (
    ConnectFailed,
    ConnectionPool,
    InvalidRequest,
    InvalidTarget,
    Reply,
)
from probegate.transport.deadlines import Watch, Watchdog
from probegate.transport.http_parts import (
    ClientStats,
    Failure,
    parse_retry_after,
)
from probegate.transport.limiter import UNLIMITED, Limits, RequestLimiter
from probegate.transport.sse import SseEvent, is_event_stream, parse_events
from probegate.transport.usage import UNREADABLE, MalformedReply, TransportError, Usage

MAX_BODY_BYTES = 2 * 1024 * 1024
EXCERPT_CHARS = 200
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# Credentials or the endpoint itself are wrong: every later request would fail the same way.
FATAL_STATUSES = frozenset({401, 403, 404, 407})
REDACTED = "[REDACTED]"
_BEARER = re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}")


# --- the client -------------------------------------------------------------------------------


@dataclass
class _Tries:
    """One request's retries: the client's policy and how far the request has got, in one
    object (as urllib3's ``Retry``), so the request loop keeps no counters of its own."""

    client: HttpClient
    attempt: int = 0
    failure: Failure | None = None

    def next_wait(self) -> float | None:
        """Seconds to wait before the next try (0 before the first); None: no more tries."""
        if self.failure is None:
            return 0.0
        if not self.failure.retry or self.attempt > self.client.retries:
            return None
        return self.client._delay(self.attempt, self.failure)

    def failed(self, failure: Failure) -> None:
        self.failure = failure

    def error(self) -> TransportError:
        """What the request ends with when no try got a reply it could use."""
        failure = self.failure
        assert failure is not None
        client = self.client
        tries = client._tries_note(failure)
        with client._lock:
            fatal = failure.fatal or (failure.status in FATAL_STATUSES and not client._answered)
        if failure.status in (401, 403, 407):
            fatal = True
        return TransportError(
            client.scrub(failure.reason + tries), cause=failure.cause, fatal=fatal
        )


class HttpClient:
    """JSON over HTTP with retries, deadlines, body caps and secret scrubbing; thread-safe."""

    def __init__(
        self,
        *,
        timeout: float,
        retries: int,
        pool_size: int = 8,
        seed: int = 0,
        max_body_bytes: int = MAX_BODY_BYTES,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        max_retry_after: float = 120.0,
        secrets: Iterable[str] = (),
        peer: str = "target",
    ) -> None:
        # Who answers, as error messages name it: "HTTP 503 from the guard".
        self.peer = peer
        self.timeout = timeout
        self.retries = retries
        self.max_body_bytes = max_body_bytes
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_retry_after = max_retry_after
        self.stats = ClientStats()
        self._secrets: list[str] = []
        self._spellings = Spellings({})
        for value in secrets:
            self.add_secret(value)
        self._rng = random.Random(seed)  # noqa: S311 -- backoff jitter, not a secret
        self._lock = threading.Lock()
        self._paused_until = 0.0
        self._answered = False
        self._watchdog = Watchdog()
        self._pool = ConnectionPool(
            maxsize=pool_size,
            connect_timeout=min(timeout, 30.0),
            read_timeout=timeout,
            user_agent=f"probegate/{__version__}",
        )

    # -- secrets -------------------------------------------------------------------------
    def add_secret(self, value: str) -> None:
        """Never let ``value`` appear in a message; short values would blank innocent text."""
        if value and len(value) >= 4 and value not in self._secrets:
            self._secrets.append(value)
            self._spellings = Spellings({f"S{i}": v for i, v in enumerate(self._secrets)})

    def scrub(self, text: str) -> str:
        text = hide(text, self._spellings, lambda _name: REDACTED)
        return _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)

    def excerpt(self, body: bytes | str) -> str:
        """A bounded, printable, secret-free piece of a body for an error message."""
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        text = " ".join(clean(self.scrub(text[: EXCERPT_CHARS * 4])).split())
        return text[:EXCERPT_CHARS] + ("..." if len(text) > EXCERPT_CHARS else "")

    # -- requests ------------------------------------------------------------------------
    def request_json(
        self,
        method: str,
        url: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        limiter: RequestLimiter | None = None,
        usage: Usage | None = None,
        parse: Callable[[Any], Any] | None = None,
    ) -> Any:
        """Send one request (retrying as allowed) and return the decoded JSON reply.

        Every try passes ``limiter.acquire()`` first, so retries count against the rate limit
        and the request budget like any other request; ``BudgetExhausted`` propagates.
        ``parse`` reads the decoded reply into what the caller needs and is what is returned:
        a :class:`MalformedReply` it raises (the body lacks the protocol's fields) is retried
        like a 5xx; any other :class:`TransportError` it raises ends the request at once.
        """
        return self._request(
            method, url, body, params, headers, limiter, usage, parse, events=False
        )

    def request_events(
        self,
        method: str,
        url: str,
        *,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        limiter: RequestLimiter | None = None,
        usage: Usage | None = None,
        parse: Callable[[list[SseEvent] | Any], Any] | None = None,
    ) -> Any:
        """As :meth:`request_json` for a streamed reply: the events of a ``text/event-stream``
        body, read whole (within the body cap and the deadline), or the JSON of a server that
        answered a stream request without streaming. ``parse`` reads either, as for
        :meth:`request_json`: a stream without the events its API needs is retried like a
        5xx."""
        return self._request(method, url, body, None, headers, limiter, usage, parse, events=True)

    def _request(
        self,
        method: str,
        url: str,
        body: Any,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
        limiter: RequestLimiter | None,
        usage: Usage | None,
        parse: Callable[[Any], Any] | None,
        *,
        events: bool,
    ) -> Any:
        limits: Limits = limiter if limiter is not None else UNLIMITED
        tries = _Tries(self)
        while (wait := tries.next_wait()) is not None:
            if tries.attempt:
                limits.sleep(wait)
            self._start_try(limits, usage, tries.attempt)
            tries.attempt += 1
            deadline = time.monotonic() + self.timeout
            if limits.deadline_at is not None:
                deadline = min(deadline, limits.deadline_at)
            result = self._try(method, url, body, params, headers, deadline, events, limiter)
            if not isinstance(result, Failure):
                result = self._parsed(result, parse, limits)
                if not isinstance(result, Failure):
                    return result
            tries.failed(result)
            limits.record_failure()
            limits.check()  # a request cut at the scan's deadline is not a timeout
            self._pause_for(result, limits)
        raise tries.error()

    def _start_try(self, limits: Limits, usage: Usage | None, attempt: int) -> None:
        """Before each try: the pause a server asked for, a rate slot, the counts."""
        self._wait_for_pause(limits)
        limits.acquire()
        if usage is not None:
            usage.requests += 1
        with self._lock:
            self.stats.tries += 1
            if attempt:
                self.stats.retries += 1

    def _parsed(self, result: Any, parse: Callable[[Any], Any] | None, limits: Limits) -> Any:
        """What ``parse`` reads from a reply; a malformed one is a failure to retry."""
        if parse is None:
            return result
        try:
            return parse(result)
        except MalformedReply as exc:
            with self._lock:
                self.stats.unreadable += 1
            return Failure(exc.reason, True, Cause.UNREADABLE)
        except TransportError:
            limits.record_failure()
            raise

    def _pause_for(self, failure: Failure, limits: Limits) -> None:
        """Honour a ``Retry-After`` by pausing every worker, while the scan has pause left."""
        if failure.retry_after is not None and not self._pause(failure.retry_after, limits):
            failure.reason += (
                f"; Retry-After {failure.retry_after:.0f}s not honoured: the scan has "
                f"paused for its {limits.max_wait:g}s (--max-wait)"
            )
            failure.retry_after = None

    def _tries_note(self, failure: Failure) -> str:
        return (
            f" (gave up after {self.retries + 1} tries)" if failure.retry and self.retries else ""
        )

    def _delay(self, attempt: int, failure: Failure | None) -> float | None:
        """Backoff before try ``attempt``; None when the server asked for too long a wait."""
        if failure is not None and failure.retry_after is not None:
            if failure.retry_after > self.max_retry_after:
                failure.reason += (
                    f"; the server asked to wait {failure.retry_after:.0f}s, more than the "
                    f"{self.max_retry_after:.0f}s probegate waits"
                )
                failure.retry = False
                return None
            return failure.retry_after
        with self._lock:
            jitter = 0.5 + self._rng.random() / 2
        return float(min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1)) * jitter)

    def _pause(self, seconds: float, limits: Limits) -> bool:
        """Pause every worker for ``seconds``; False when the scan has no pause left for it."""
        if seconds > self.max_retry_after:
            return True  # not honoured at all: _delay ends the attempt
        with self._lock:
            now = time.monotonic()
            extension = now + seconds - max(self._paused_until, now)
            if extension <= 0:
                return True
            if not limits.allow_wait(extension):
                return False
            self._paused_until = now + seconds
            return True

    def _wait_for_pause(self, limits: Limits) -> None:
        with self._lock:
            wait = self._paused_until - time.monotonic()
        if wait > 0:
            limits.sleep(wait)

    def _try(
        self,
        method: str,
        url: str,
        body: Any,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
        deadline: float,
        events: bool = False,
        limiter: RequestLimiter | None = None,
    ) -> Any:
        sent = dict(headers or {})
        data: bytes | None = None
        if body is not None:
            try:
                data = json.dumps(body, allow_nan=False).encode("utf-8")
            except ValueError:
                return Failure(
                    "the request body is not valid JSON (NaN or infinity)", False, Cause.OTHER
                )
            if not any(name.lower() == "content-type" for name in sent):
                sent["Content-Type"] = "application/json"
        reply, raw = self._exchange(method, url, data, params, sent, deadline, limiter)
        if isinstance(raw, Failure):
            return raw
        assert reply is not None
        return self._decode(reply, raw, events)

    def _exchange(
        self,
        method: str,
        url: str,
        body: bytes | None,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str],
        deadline: float,
        limiter: RequestLimiter | None = None,
    ) -> tuple[Reply | None, bytes | Failure]:
        """One request as every call sends it, its body read under the cap and the watchdog's
        ``deadline`` (or until ``limiter``'s scan stops): no redirect followed, the proxies the
        environment names, connect and read timeouts. The watch is released before the reply
        is closed: closing hands the connection back to the pool, and a later request on it
        must never be shut down by this one's deadline."""
        watch = self._watchdog.watch(deadline, limiter)
        if watch.expired:  # the scan stopped as it was sent
            self._watchdog.release(watch)
            return None, self._slow()

        def watched(conn: http.client.HTTPConnection) -> None:
            if watch.active:
                watch.conn = conn

        reply: Reply | None = None
        try:
            reply = self._pool.send(
                method, url, body=body, headers=headers, params=params, on_connection=watched
            )
            return reply, self._read(reply, watch)
        except (OSError, http.client.HTTPException, ConnectFailed, InvalidRequest) as exc:
            return reply, self._network_failure(
                exc, expired=watch.expired, replied=reply is not None
            )
        finally:
            self._watchdog.release(watch)
            if reply is not None:
                reply.close()

    def _read(self, reply: Reply, watch: Watch) -> bytes | Failure:
        if self._announced_too_large(reply.headers.get("Content-Length")):
            return self._too_large()
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in reply.chunks():
                size += len(chunk)
                if size > self.max_body_bytes:
                    return self._too_large()
                chunks.append(chunk)
                if watch.expired:
                    return self._slow()
        except zlib.error:
            return self._undecodable()
        if watch.expired:
            return self._slow()
        return b"".join(chunks)

    def _announced_too_large(self, declared: str | None) -> bool:
        """Whether a reply's ``Content-Length`` is over the cap before a byte of it is read."""
        return bool(declared and declared.isdigit() and int(declared) > self.max_body_bytes)

    def _undecodable(self) -> Failure:
        return Failure("reply body could not be decoded", False, Cause.UNREADABLE)

    def _too_large(self) -> Failure:
        return Failure(
            f"response too large (over {self.max_body_bytes // 1024} KiB)", False, Cause.TOO_LARGE
        )

    def _slow(self) -> Failure:
        return Failure(f"no complete reply within {self.timeout:g}s (timeout)", True, Cause.TIMEOUT)

    def _network_failure(self, exc: BaseException, *, expired: bool, replied: bool) -> Failure:
        """Why a request got no readable reply, in words; ``expired``: its deadline had passed
        (or its scan stopped); ``replied``: the status line and headers had come back, so a
        connection lost now cut the reply short."""
        if expired:
            return self._slow()
        if isinstance(exc, InvalidTarget | http.client.InvalidURL):
            return Failure(
                f"invalid URL: {self.excerpt(str(exc))}", False, Cause.NETWORK, fatal=True
            )
        if isinstance(exc, InvalidRequest):
            return Failure(str(exc), False, Cause.NETWORK, fatal=True)
        if isinstance(exc, ConnectFailed):
            return self._connect_failure(exc)
        if isinstance(exc, ssl.SSLError):
            return Failure(
                f"TLS error: {self.excerpt(str(exc))}", False, Cause.TLS, fatal=not self._answered
            )
        if isinstance(exc, TimeoutError):
            return Failure(f"no reply within {self.timeout:g}s (timeout)", True, Cause.TIMEOUT)
        if isinstance(exc, http.client.IncompleteRead) or (
            replied and isinstance(exc, OSError | http.client.HTTPException)
        ):
            return Failure("connection dropped mid-reply (truncated body)", True, Cause.DROPPED)
        if isinstance(exc, ConnectionError | http.client.RemoteDisconnected):
            return Failure("connection dropped before a reply", True, Cause.DROPPED, dropped=True)
        if isinstance(exc, http.client.HTTPException):
            # A status line or headers HTTP cannot read (too long, too many, not HTTP at all).
            return Failure(
                f"not a readable HTTP reply ({type(exc).__name__})", True, Cause.UNREADABLE
            )
        return Failure(f"{type(exc).__name__}: {self.excerpt(str(exc))}", True, Cause.NETWORK)

    def _connect_failure(self, exc: ConnectFailed) -> Failure:
        cause = exc.cause
        fatal = not self._answered
        if isinstance(cause, ssl.SSLError | ssl.CertificateError):
            return Failure(f"TLS error: {self.excerpt(str(cause))}", False, Cause.TLS, fatal=fatal)
        if isinstance(cause, socket.gaierror):
            # A name that does not exist will not resolve on the next try; a resolver that is
            # temporarily down may.
            return Failure(
                f"cannot resolve host {exc.host or 'of the URL'} (DNS lookup failed)",
                cause.errno == socket.EAI_AGAIN,
                Cause.DNS,
                fatal=fatal,
            )
        if isinstance(cause, ConnectionRefusedError):
            # Nothing listens there: fatal when it never answered, so an unreachable target
            # stops the scan at once instead of after every attempt's retries.
            return Failure("connection refused", True, Cause.REFUSED, fatal=fatal)
        if isinstance(cause, TimeoutError):
            return Failure("connection timed out", True, Cause.TIMEOUT)
        if str(cause).startswith("Tunnel connection failed"):
            return Failure(
                f"the proxy refused the tunnel: {self.excerpt(str(cause))}",
                False,
                Cause.NETWORK,
                fatal=fatal,
            )
        return Failure(
            f"cannot connect to {exc.host}: {self.excerpt(str(cause))}", True, Cause.NETWORK
        )

    def _decode(self, response: Reply, raw: bytes, events: bool = False) -> Any:
        status = response.status
        with self._lock:
            self.stats.by_status[status] = self.stats.by_status.get(status, 0) + 1
        if status >= 400 or status < 200 or 300 <= status < 400:
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            retry = status in RETRY_STATUSES
            return Failure(
                f"HTTP {status} from {self.peer}: {self.excerpt(raw) or '(empty body)'}",
                retry,
                http_cause(status),
                status=status,
                retry_after=retry_after if retry else None,
            )
        if events and is_event_stream(response.headers.get("Content-Type")):
            stream = parse_events(raw)
            if not stream:  # a stream cut off before its first event: nothing to read yet
                with self._lock:
                    self.stats.unreadable += 1
                return Failure(self._no_events(status, raw), True, Cause.UNREADABLE)
            with self._lock:
                self._answered = True
                self.stats.ok += 1
            return stream
        try:
            # Deeper than any reply needs is cut, not a RecursionError (models/bounds.py).
            data = loads_bounded(raw)
        except (UnicodeDecodeError, ValueError) as exc:
            with self._lock:
                self.stats.unreadable += 1
            kind = response.headers.get("Content-Type") or ""
            return Failure(self._unreadable(status, kind, raw, exc), True, Cause.UNREADABLE)
        with self._lock:
            self._answered = True
            self.stats.ok += 1
        return data

    def _no_events(self, status: int, raw: bytes) -> str:
        said = f": {self.excerpt(raw)}" if raw.strip() else ""
        return f"{UNREADABLE}: HTTP {status} with an event stream of no events{said}"

    def _unreadable(self, status: int, content_type: str, raw: bytes, exc: Exception) -> str:
        """What was wrong with a body that is not JSON, in words a user can act on."""
        head = f"{UNREADABLE}: HTTP {status} with"
        text = raw.strip()
        if not text:
            return f"{head} an empty body"
        kind = content_type.lower()
        if "html" in kind or text[:1] == b"<":
            return (
                f"{head} an HTML page, not JSON (a proxy or gateway answering for the agent?): "
                f"{self.excerpt(raw)}"
            )
        if isinstance(exc, json.JSONDecodeError) and _ends_early(exc):
            return f"{head} JSON cut off after {len(raw)} bytes: {self.excerpt(raw)}"
        return f"{head} a body that is not JSON: {self.excerpt(raw)}"

    def close(self) -> None:
        self._watchdog.close()
        self._pool.close()


def _ends_early(exc: json.JSONDecodeError) -> bool:
    """The JSON was fine as far as it went: the decoder ran out of text (a body cut off)."""
    return exc.pos >= len(exc.doc.rstrip()) or exc.msg.startswith("Unterminated string")
