"""The MCP server's connections and logs: bounded, whoever connects (docs/agent-service.md).

Anything that can reach the server's port can open connections, and an agent needs a few per
conversation. Unbounded, a local process that opens thousands and sends nothing exhausts the
scan's file descriptors: accepting fails, the agent's own connections wait or fail, and every
failure is logged with its traceback, megabytes a second into the job log. So:

- **A cap on open connections**: half the file descriptors the process may open, less one
  batch of accepts (at most :data:`CONNECTIONS_MAX`). At the cap, a new connection whose
  request is already there (an HTTP client sends it with the connection) takes the place of
  the oldest connection that has sent nothing for :data:`GRACE`; one that has sent nothing is
  given :data:`PROBATION` to do so, then closed. Past the cap and one batch more, the server
  stops accepting: new connections wait in the kernel's queue (an agent's request is late,
  never lost) while connections silent for :data:`GRACE`, then those whose request head has
  taken that long, are closed to make room. Each is told so with a JSON-RPC error (HTTP 503).
- **Timeouts**: a request head must arrive within :data:`HEAD_TIMEOUT` of the connection (or
  of the last response); a connection idle after a response is closed after
  :data:`IDLE_TIMEOUT`; the body within :data:`BODY_TIMEOUT` (the router's, mcp_server.py).
  A timed-out connection is told so (HTTP 408) and closed.
- **Every answer is JSON-RPC**, a request that is not HTTP included (HTTP 400, -32700).
- **Bounded logs**: what the server's libraries log (the MCP SDK, uvicorn, the event loop) goes
  through one handler that writes one line per message, no traceback, at most
  :data:`LOG_BURST` lines per :data:`LOG_WINDOW` seconds and :data:`LOG_LINES_MAX` in all, then
  says how many it left out.

None of it is the agent's doing unless it carried the agent's token: the counts go to the
report's ``mcp.unauthenticated`` (:class:`~probegate.models.sections.McpUnauthenticated`). A
connection turned away while conversations were open may have been the agent's: those
conversations' attempts are unjudged, never judged as if the agent made no call.
"""

from __future__ import annotations

import contextlib
import json
import logging
import resource
import select
import socket
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from probegate.terminal import clean

if TYPE_CHECKING:
    # Only named in annotations: a scan that serves no MCP never imports the event loop.
    import asyncio

CONNECTIONS_MAX = 1024
# File descriptors left for everything else the scan opens (its clients, files, threads).
FD_RESERVE = 64
# Connections accepted at once: each holds a descriptor before the cap can close it, so the
# cap leaves room for one batch.
BACKLOG = 128
# The kernel's queue of connections not accepted yet (it holds them, not the process). Long,
# because a full queue makes the kernel drop a client's handshake and first bytes, which come
# again a second or more later: an agent's request that late looks like a silent connection.
# (The kernel caps it at net.core.somaxconn.)
LISTEN_BACKLOG = 4096
HEAD_TIMEOUT = 10.0
IDLE_TIMEOUT = 5.0
BODY_TIMEOUT = 10.0
# A client sends its request head within milliseconds of connecting (and one that waited in
# the kernel's queue has it waiting when accepted): at the cap, a connection this old with no
# request yet (silent, or a head under way) makes room.
GRACE = 0.5
# How often a full server looks for room again.
SWEEP = 0.1
# At the cap, how long a new connection that has sent nothing may take to send its request
# (one that waited in the kernel's queue has it there already), and how many may be on
# probation at once (raw sockets, within the descriptors the cap leaves).
PROBATION = 0.05
ON_PROBATION = 2 * BACKLOG
LOG_BURST = 5
LOG_WINDOW = 10.0
LOG_LINES_MAX = 50
# Loggers of the libraries that serve MCP: their records go through BoundedLog while it serves.
SERVER_LOGGERS = ("mcp.server", "uvicorn", "sse_starlette", "starlette")

# JSON-RPC error codes for what happens below a request: the spec's parse error, and ours.
PARSE_ERROR = -32700
TIMED_OUT = -32004
UNAVAILABLE = -32005


def connection_cap(limit: int | None = None) -> int:
    """How many connections the server holds open: half of what the process may open, less
    what one batch of accepts, the connections on probation and everything else the scan
    opens may hold."""
    if limit is None:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        limit = CONNECTIONS_MAX * 4 if soft == resource.RLIM_INFINITY else soft
    return max(16, min(CONNECTIONS_MAX, (limit - FD_RESERVE - BACKLOG - ON_PROBATION) // 2))


def error_bytes(status: int, reason: str, code: int, message: str) -> bytes:
    """A whole HTTP response carrying a JSON-RPC error, then the connection closes."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    ).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class Counter(Protocol):
    """Where the connection counts go (the host's ``mcp.unauthenticated``)."""

    def unauthenticated(self, what: str) -> None: ...

    def turned_away(self, why: str) -> None: ...


class _Connection(Protocol):
    opened: float
    talked: bool
    served: bool

    @property
    def busy(self) -> bool: ...

    def readable(self) -> bool: ...

    def refuse(self, status: int, reason: str, code: int, message: str) -> None: ...


class Connections:
    """The open connections, oldest first; used on the server's event loop only."""

    def __init__(self, counter: Counter, cap: int) -> None:
        self.counter = counter
        self.cap = cap
        self.open: OrderedDict[_Connection, None] = OrderedDict()
        self.accepted = 0  # sockets accepted and not closed yet (open, or on their way)
        self.on_room: Callable[[], None] = lambda: None

    @property
    def full(self) -> bool:
        return self.accepted >= self.cap

    @property
    def overfull(self) -> bool:
        """Past the cap by one batch: accepting waits for room."""
        return self.accepted >= self.cap + BACKLOG

    def admit(self, connection: _Connection) -> None:
        self.open[connection] = None

    def discard(self, connection: _Connection) -> None:
        if self.open.pop(connection, False) is None:
            self.accepted -= 1
            if not self.overfull:
                self.on_room()

    def make_room(self, one: bool = False) -> None:
        """Close what a full server need not keep: connections silent for :data:`GRACE`, then
        (not for ``one``) those whose request head has taken that long (a client's request:
        undelivered)."""
        now = time.monotonic()
        late = [c for c in self.open if not c.busy and not c.served and now - c.opened > GRACE]
        for connection in late:
            if not connection.talked and connection.readable():
                continue  # its first bytes are waiting: a client
            if one and connection.talked:
                continue
            self.counter.unauthenticated("refused")
            if connection.talked:  # a request under way, if a slow one
                self.counter.turned_away("closed a connection whose request was late")
            connection.refuse(503, "Service Unavailable", UNAVAILABLE, "too many connections")
            if one:
                return


class Acceptor:
    """Accepts connections while the server has room, from the listening socket ``sock``;
    pauses at the cap, so what waits stays in the kernel's queue instead of being refused."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        factory: Callable[[], asyncio.Protocol],
        connections: Connections,
        log: BoundedLog,
    ) -> None:
        self.loop = loop
        self.sock = sock
        sock.setblocking(False)
        self.factory = factory
        self.connections = connections
        self.log = log
        self.reading = False
        self.stopped = False
        self._sweep: asyncio.TimerHandle | None = None
        self._probation: set[socket.socket] = set()
        connections.on_room = self.resume

    def resume(self) -> None:
        if not self.reading and not self.stopped:
            self.loop.add_reader(self.sock, self._ready)
            self.reading = True

    def stop(self) -> None:
        self.stopped = True
        self._pause()
        if self._sweep is not None:
            self._sweep.cancel()
        for conn in self._probation:
            conn.close()
        self._probation.clear()

    def _pause(self) -> None:
        if self.reading:
            self.loop.remove_reader(self.sock)
            self.reading = False

    def _ready(self) -> None:
        for _ in range(BACKLOG):
            if self.connections.overfull or len(self._probation) >= ON_PROBATION:
                self._pause()
                self._sweep_later()
                return
            try:
                conn, _address = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of descriptors (opened elsewhere): try again soon
                self.log.handle(_record(f"cannot accept a connection: {exc.strerror or exc}"))
                # An agent's connection may be waiting, and give up.
                self.connections.counter.turned_away("could not accept a connection")
                self._pause()
                self._sweep_later()
                return
            conn.setblocking(False)
            if not self.connections.full or _readable(conn):
                self._admit(conn)
            else:  # at the cap, and it has sent nothing yet
                self._probation.add(conn)
                self.loop.call_later(PROBATION, self._decide, conn)

    def _admit(self, conn: socket.socket) -> None:
        if self.connections.full:
            self.connections.make_room(one=True)
        self.connections.accepted += 1
        self.loop.create_task(self._connect(conn))

    def _decide(self, conn: socket.socket) -> None:
        """The end of a new connection's probation: its request came, or it is closed."""
        if conn not in self._probation:
            return  # closed when the server stopped
        self._probation.discard(conn)
        if _readable(conn):
            self._admit(conn)
        else:
            self.connections.counter.unauthenticated("refused")
            with contextlib.suppress(OSError):
                conn.send(
                    error_bytes(503, "Service Unavailable", UNAVAILABLE, "too many connections")
                )
            conn.close()
        if not self.connections.overfull and len(self._probation) < ON_PROBATION:
            self.resume()

    async def _connect(self, conn: socket.socket) -> None:
        try:
            await self.loop.connect_accepted_socket(self.factory, sock=conn)
        except OSError:
            conn.close()
            self.connections.accepted -= 1

    def _sweep_later(self) -> None:
        if self._sweep is None and not self.stopped:
            self._sweep = self.loop.call_later(SWEEP, self._swept)

    def _swept(self) -> None:
        self._sweep = None
        if self.stopped:
            return
        self.connections.make_room()
        if self.connections.overfull:
            self._sweep_later()
        else:
            self.resume()


def _readable(conn: socket.socket | int) -> bool:
    """Whether bytes (or the peer's close) wait on ``conn``.

    ``poll``, not ``select``: a process that may open more than 1,024 files gets descriptors
    ``select`` cannot take (it raised, and every connection at the cap looked silent)."""
    with contextlib.suppress(OSError, ValueError):
        poller = select.poll()
        poller.register(conn, select.POLLIN)
        return bool(poller.poll(0))
    return False


def _record(message: str) -> logging.LogRecord:
    return logging.LogRecord("mcp.server", logging.ERROR, __file__, 0, message, None, None)


def protocol_class(connections: Connections) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol with the cap, the head timeout and JSON-RPC refusals."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Bounded(H11Protocol):
        opened = 0.0
        talked = False  # a byte arrived
        served = False  # a response completed
        _deadline: asyncio.TimerHandle | None = None
        _seen: object = None  # the request cycle the deadline last saw start

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            self.opened = time.monotonic()
            connections.admit(self)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            connections.discard(self)
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            self.talked = True
            super().data_received(data)
            self._started()

        def on_response_complete(self) -> None:
            self.served = True
            super().on_response_complete()
            if not self._started() and not self.transport.is_closing():
                self._arm()  # the next request head is due in time too

        def send_400_response(self, msg: str) -> None:
            connections.counter.unauthenticated("invalid")
            self.refuse(400, "Bad Request", PARSE_ERROR, "not an HTTP request")

        @property
        def busy(self) -> bool:
            return self.cycle is not None and not self.cycle.response_complete

        def readable(self) -> bool:
            sock = self.transport.get_extra_info("socket")
            return sock is not None and _readable(sock.fileno())

        def refuse(self, status: int, reason: str, code: int, message: str) -> None:
            self._disarm()
            if not self.transport.is_closing():
                with contextlib.suppress(OSError, RuntimeError):
                    self.transport.write(error_bytes(status, reason, code, message))
                self.transport.close()

        def _started(self) -> bool:
            """Whether a new request started (its head arrived): it has no deadline then."""
            if self.cycle is not None and self.cycle is not self._seen:
                self._seen = self.cycle
                self._disarm()
                return True
            return False

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(HEAD_TIMEOUT, self._late)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _late(self) -> None:
            self._deadline = None
            if not self.busy:
                connections.counter.unauthenticated("timed_out")
                self.refuse(408, "Request Timeout", TIMED_OUT, "no request in time")

    return Bounded


class BoundedLog(logging.Handler):
    """One line per record, no traceback, rate-limited and capped; the count of the rest."""

    def __init__(
        self, stream: Callable[[], TextIO] = lambda: sys.stderr, name: str = "probegate MCP server"
    ) -> None:
        super().__init__(logging.WARNING)
        self._stream = stream
        self._name = name
        self._guard = threading.Lock()
        self._window = 0.0
        self._in_window = 0
        self._written = 0
        self.left_out = 0

    def emit(self, record: logging.LogRecord) -> None:
        with self._guard:
            now = time.monotonic()
            if now - self._window > LOG_WINDOW:
                self._window, self._in_window = now, 0
            if self._in_window >= LOG_BURST or self._written >= LOG_LINES_MAX:
                self.left_out += 1
                return
            self._in_window += 1
            self._written += 1
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            message = str(record.msg)
        if record.exc_info and record.exc_info[0] is not None:
            message += f" ({record.exc_info[0].__name__})"
        line = " ".join(clean(message).split())[:300]
        with contextlib.suppress(OSError, ValueError):
            self._stream().write(f"{self._name}: {record.levelname.lower()}: {line}\n")

    def close(self) -> None:
        with self._guard:
            left_out, self.left_out = self.left_out, 0
        if left_out:
            with contextlib.suppress(OSError, ValueError):
                self._stream().write(f"{self._name}: {left_out} more log message(s) left out\n")
        super().close()

    def loop_exception(self, _loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """The event loop's exception handler: its errors as records, not tracebacks."""
        exc = context.get("exception")
        record = logging.LogRecord(
            "asyncio", logging.ERROR, __file__, 0, str(context.get("message", "")), None, None
        )
        if isinstance(exc, BaseException):
            record.exc_info = (type(exc), exc, None)
        self.handle(record)


class _Attached:
    """Which loggers a BoundedLog holds, so nested servers in one process restore them once."""

    lock = threading.Lock()
    users = 0
    saved: dict[str, tuple[list[logging.Handler], bool]] = {}
    handler: BoundedLog | None = None


def attach_logs() -> BoundedLog:
    """Route the server's libraries' logs through one BoundedLog while any server runs."""
    with _Attached.lock:
        if _Attached.handler is None:
            _Attached.handler = BoundedLog()
            for name in SERVER_LOGGERS:
                logger = logging.getLogger(name)
                _Attached.saved[name] = (list(logger.handlers), logger.propagate)
                logger.handlers = [_Attached.handler]
                logger.propagate = False
        _Attached.users += 1
        return _Attached.handler


def detach_logs() -> None:
    """Undo :func:`attach_logs` when the last server stops; say what was left out."""
    with _Attached.lock:
        _Attached.users -= 1
        if _Attached.users > 0 or _Attached.handler is None:
            return
        for name, (handlers, propagate) in _Attached.saved.items():
            logger = logging.getLogger(name)
            logger.handlers = handlers
            logger.propagate = propagate
        _Attached.saved.clear()
        handler, _Attached.handler = _Attached.handler, None
    handler.close()
