"""The proxy's listening side: HTTP/1.1 on one event loop, model calls forwarded from it too.

Anything on the machine can connect to the proxy's port, so connections are held on one event
loop, not a thread each: 3,000 connections that send half a head cost no thread (a thread per
connection made 3,006 of them, and a scan that could not end). The limits are the MCP
server's (targets/mcp_connections.py, the same :class:`Connections` and :class:`Acceptor`): a
connection cap from the descriptors the process may open, silent connections closed to make
room, a head due within ``HEAD_TIMEOUT`` of the connection or of the last answer, a body
within ``BODY_TIMEOUT`` of its head. A request is read strictly (incoming.py) and its route
decided at its head (routes.py), so a request without the scan's credential, or over the size
cap, is answered before its body is read; a refused request's connection is closed.

A request that is forwarded becomes a task on the same loop, whose upstream call is made on
the loop too (ForwardingClient.forward): a worker thread per call, and the hand-offs between it
and the loop, were about a fifth of the proxy's CPU per model call (bench/bench_proxy.py). At
most :data:`WORKERS_MIN` or twice the scan's concurrency are forwarded at once; a connection
reads at most one more request's worth until its request is answered. Closing the proxy cancels
the calls in flight instead of waiting for the model (a stopped scan ends at once). The proxy's
own work on a request (parse, plant, rewrite, read the reply) runs on the loop between its
reads and writes: about 0.2 ms a call, and at most some tens of milliseconds for a body at the
16 MiB cap, which the loop's other connections wait out.
Each answer is written in one piece with ``TCP_NODELAY``, so no reply waits out a delayed ACK.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from probegate.errors import UsageError
from probegate.targets.mcp_connections import (
    BODY_TIMEOUT,
    HEAD_TIMEOUT,
    LISTEN_BACKLOG,
    Acceptor,
    BoundedLog,
    Connections,
    connection_cap,
)
from probegate.targets.model_proxy.incoming import (
    MAX_HEAD_BYTES,
    MAX_REQUEST_BYTES,
    Body,
    Head,
    Refused,
    parse_head,
)
from probegate.targets.model_proxy.routes import Forward

WORKERS_MIN = 16
# Bytes kept from a connection while its request is answered, before its reading pauses.
_HELD_MAX = MAX_HEAD_BYTES + MAX_REQUEST_BYTES
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    408: "Request Timeout",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


@dataclass(frozen=True)
class Request:
    """A request the proxy forwards: its head, where it goes, and its whole body."""

    head: Head
    forward: Forward
    body: bytes


Reply = tuple[int, dict[str, str], bytes]
Route = Callable[[Head], Forward]
Handle = Callable[[Request], Awaitable[Reply]]
# (status, message) -> the API's error body
ErrorBody = Callable[[int, str], bytes]


class Counts:
    """What the server refused, by the report's ``proxy.refused`` field; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def add(self, field: str) -> None:
        with self._lock:
            self._counts[field] = self._counts.get(field, 0) + 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    # -- the MCP server's Counter, which Connections and Acceptor report to ----------------
    def unauthenticated(self, what: str) -> None:
        self.add({"refused": "connections", "requests": "no_credential"}.get(what, what))

    def turned_away(self, why: str) -> None:
        return None  # the connection was counted where it was closed


def answer_bytes(status: int, headers: dict[str, str], body: bytes, *, close: bool) -> bytes:
    head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head.append(f"Content-Length: {len(body)}")
    if close:
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


class _Connection(asyncio.Protocol):
    """One agent connection: requests read one at a time, each answered before the next."""

    def __init__(self, server: ProxyServer) -> None:
        self.server = server
        self.loop = server.loop
        self.transport: asyncio.Transport | None = None
        self.opened = time.monotonic()
        self.talked = False  # a byte arrived
        self.served = False  # an answer was written
        self.busy = False  # a request is being answered
        self._paused = False  # reading paused while it is
        self._buffer = bytearray()
        self._body: Body | None = None
        self._forward: Forward | None = None
        self._timer: asyncio.TimerHandle | None = None

    # -- asyncio ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.connections.admit(self)
        self.server.live.add(self)
        self._arm(HEAD_TIMEOUT)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.server.connections.discard(self)
        self.server.live.discard(self)
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.talked = True
        self._buffer += data
        if not self.busy:
            self._read()
        elif len(self._buffer) > _HELD_MAX and self.transport is not None:
            # What comes while a request is answered waits; past a whole request's worth, the
            # socket is not read until the answer is written (a client that will not wait).
            self.transport.pause_reading()
            self._paused = True

    # -- Connections' view of it -------------------------------------------------------------
    def readable(self) -> bool:
        return bool(self._buffer)

    def refuse(self, status: int, reason: str, code: int, message: str) -> None:
        """Connections closes it to make room (or for lateness): told in the API's shape."""
        self._fail(Refused(status, "", message))

    # -- reading -----------------------------------------------------------------------------
    def _read(self) -> None:
        try:
            while self.transport is not None and not self.busy:
                if self._body is None and not self._head():
                    return
                assert self._body is not None
                if not self._body.feed(bytes(self._buffer)):
                    self._buffer.clear()
                    return
                self._buffer = bytearray(self._body.rest)
                self._dispatch(self._body)
        except Refused as refusal:
            self.server.counts.add(refusal.counted)
            self._fail(refusal)

    def _head(self) -> bool:
        """Read a head from the buffer, if it is all there: its route decided, its body next."""
        end = self._buffer.find(b"\r\n\r\n", 0, MAX_HEAD_BYTES + 4)
        if end < 0:
            if len(self._buffer) > MAX_HEAD_BYTES:
                raise Refused(431, "invalid", "a request head over 64 KiB")
            return False
        head = parse_head(bytes(self._buffer[:end]))
        del self._buffer[: end + 4]
        self._forward = self.server.route(head)
        self._body = Body(head)
        if head.expects_continue and head.has_body and self.transport is not None:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self._arm(BODY_TIMEOUT)
        return True

    def _dispatch(self, body: Body) -> None:
        assert self._forward is not None
        request = Request(body.head, self._forward, body.data)
        self._body = self._forward = None
        self.busy = True
        self._disarm()
        self.server.start(self._work(request))

    async def _work(self, request: Request) -> None:
        self._answered(request, await self.server.answer(request))

    def _answered(self, request: Request, reply: Reply) -> None:
        self.busy = False
        if self.transport is None or self.transport.is_closing():
            return
        status, headers, payload = reply
        close = not request.head.keep_alive
        self.transport.write(answer_bytes(status, headers, payload, close=close))
        self.served = True
        if close:
            self.transport.close()
            return
        if self._paused:
            self.transport.resume_reading()
            self._paused = False
        self._arm(HEAD_TIMEOUT)
        if self._buffer:
            self._read()

    # -- endings ------------------------------------------------------------------------------
    def _fail(self, refusal: Refused) -> None:
        """Answer ``refusal`` and close: what else the client sent is not read."""
        self._disarm()
        if self.transport is not None and not self.transport.is_closing():
            payload = self.server.error_body(refusal.status, refusal.message)
            headers = {"Content-Type": "application/json"}
            self.transport.write(answer_bytes(refusal.status, headers, payload, close=True))
            self.transport.close()

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._late)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _late(self) -> None:
        self._timer = None
        if self.busy or self.transport is None:
            return
        if self.served and not self._buffer and self._body is None:
            self.transport.close()  # an idle keep-alive connection: closed, nothing to say
            return
        self.server.counts.add("timed_out")
        self._fail(Refused(408, "timed_out", "no complete request in time"))


def _internal() -> Reply:
    body = b'{"error":{"message":"probegate model-API proxy: internal error"}}'
    return 500, {"Content-Type": "application/json"}, body


class ProxyServer:
    """The server on ``(host, port)``, on an event loop thread of its own until :meth:`close`.

    ``route`` decides a request at its head (raising :class:`Refused`); ``handle`` answers a
    forwarded one on the loop; ``error_body`` writes a refusal in the API's shape;
    ``stopping`` runs on the loop as it stops (the upstream's connections are closed there).
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        route: Route,
        handle: Handle,
        error_body: ErrorBody,
        stopping: Callable[[], None],
        workers: int,
        what: str,
    ) -> None:
        self.route = route
        self.handle = handle
        self.error_body = error_body
        self.stopping = stopping
        self.counts = Counts()
        self._workers = max(WORKERS_MIN, workers)
        self._slots: asyncio.Semaphore | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.connections = Connections(self.counts, connection_cap())
        self.live: set[_Connection] = set()
        self.log = BoundedLog(name="probegate model-API proxy")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._sock.bind((host, port))
            self._sock.listen(LISTEN_BACKLOG)
        except OSError as exc:
            self._sock.close()
            raise UsageError(f"{what}: cannot listen there ({exc.strerror or exc})") from None
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(self.log.loop_exception)
        self._acceptor = Acceptor(
            self.loop, self._sock, lambda: _Connection(self), self.connections, self.log
        )
        self._thread = threading.Thread(
            target=self._serve, name="probegate-model-proxy", daemon=True
        )
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._sock.getsockname()[:2]
        return str(host), int(port)

    def start(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as a task of the loop, kept until it ends (or :meth:`close` cancels
        it)."""
        task = self.loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def answer(self, request: Request) -> Reply:
        """The proxy's answer, or a 500 that never stops the agent's next call; at most
        ``workers`` at once."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._workers)
        async with self._slots:
            try:
                return await self.handle(request)
            except Exception:  # the proxy's own failure must never stop the agent's next call
                return _internal()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self._acceptor.resume()
        try:
            self.loop.run_forever()
            # The cancelled calls' endings, then the closings they scheduled.
            tasks = list(self._tasks)
            if tasks:
                self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self.loop.run_until_complete(asyncio.sleep(0))
        finally:
            with contextlib.suppress(RuntimeError):
                self.loop.close()

    def close(self) -> None:
        """Stop at once: every connection closed, calls in flight abandoned (not awaited)."""
        if self._thread.is_alive():
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._stop)
            self._thread.join(timeout=2)
        self._sock.close()
        self.log.close()

    def _stop(self) -> None:
        self._acceptor.stop()
        for task in list(self._tasks):
            task.cancel()
        self.stopping()
        for connection in list(self.live):
            if connection.transport is not None:
                connection.transport.abort()
        # After the connections' own endings, which abort() has just scheduled.
        self.loop.call_soon(self.loop.stop)
