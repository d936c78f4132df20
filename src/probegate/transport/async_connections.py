"""The connection pool's twin on an event loop: the model-API proxy's upstream calls.

The proxy answers its agents on one event loop (targets/model_proxy/server.py). Handing each
model call to a worker thread for a blocking upstream call, and its answer back to the loop,
was about a fifth of the proxy's CPU per call (0.94 to 1.08 ms a call on threads, 0.77 to 0.89
on the loop; bench/bench_proxy.py's docstring), spent in thread wake-ups and interpreter-lock
hand-offs rather than in any work. Here the call is made on the loop that received it.

Only the wire is this module's own. Where a URL goes (the environment's proxies, ``NO_PROXY``),
what the request line names, the request's headers and the TLS context (the CA bundle requests
would use) come from the blocking :class:`ConnectionPool`. The bytes are HTTP/1.1 as
``http.client`` writes and reads them, with its limits (a line of 64 KiB, 100 headers), and
every failure is raised as the error ``http.client`` or the blocking pool raises for the same
fault (:class:`ConnectFailed`, ``RemoteDisconnected``, ``IncompleteRead``, ``LineTooLong``,
``BadStatusLine``, ``ssl.SSLError``, ``OSError``), so transport/http.py gives it the same
reason and cause, and an agent reads the same answer either way.

Everything here runs on one event loop, so nothing is locked.
"""

from __future__ import annotations

import asyncio
import http.client
import io
import ipaddress
import re
import socket
import ssl
from collections.abc import AsyncIterator, Mapping

from probegate.transport.connections import (
    CHUNK_BYTES,
    ConnectFailed,
    ConnectionPool,
    Inflater,
    InvalidRequest,
    Route,
    compressed,
    tunnel_headers,
)

MAX_LINE = 65536  # http.client's: a status, header or chunk-size line
MAX_HEADERS = 100  # http.client's
# Bytes held unread before the socket's reading pauses (the reader takes them as they come).
_HIGH_WATER = 16 * CHUNK_BYTES
_LEGAL_NAME = re.compile(r"[^:\s][^:\r\n]*")
# A header name as the email package's parser takes one (its headerRE): printable ASCII but
# the colon, no space.
_HEADER_NAME = re.compile(r"[!-9;-~]+")
_BODY_METHODS = frozenset({"PATCH", "POST", "PUT"})


class _Wire(asyncio.Protocol):
    """One upstream connection's bytes: what has arrived and not been read, and how it ended."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.ended = False
        self.error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False

    # -- asyncio -------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > _HIGH_WATER and not self._paused and self.transport is not None:
            self.transport.pause_reading()
            self._paused = True
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        if exc is not None:
            self.error = exc
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- its user's side -----------------------------------------------------------------
    def usable(self) -> bool:
        """An idle connection that may carry another request: open, and silent since its last
        reply (a peer that closed it, or wrote unasked, has ended the exchange)."""
        transport = self.transport
        return (
            not self.ended
            and not self.buffer
            and transport is not None
            and not transport.is_closing()
        )

    def write(self, data: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            raise ConnectionResetError("the connection closed before the request was sent")
        self.transport.write(data)

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    async def fill(self) -> bool:
        """Wait for more bytes; False when none will come. A connection lost to an error
        (reset, TLS) raises it once what had arrived is read."""
        if self.ended:
            if self.error is not None:
                raise self.error
            return False
        if self._paused and self.transport is not None:
            self.transport.resume_reading()
            self._paused = False
        waiter = self.loop.create_future()
        self._waiter = waiter
        await waiter
        return True

    async def line(self, what: str) -> bytes:
        """One line, its ending kept (b"" at the end of the stream), at most ``MAX_LINE``."""
        while True:
            end = self.buffer.find(b"\n", 0, MAX_LINE + 1)
            if end >= 0:
                out = bytes(self.buffer[: end + 1])
                del self.buffer[: end + 1]
                return out
            if len(self.buffer) > MAX_LINE:
                raise http.client.LineTooLong(what)
            if not await self.fill():
                out = bytes(self.buffer)
                self.buffer.clear()
                return out

    async def some(self, most: int) -> bytes:
        """Up to ``most`` bytes as soon as any are there; b"" at the end of the stream."""
        while not self.buffer:
            if not await self.fill():
                return b""
        out = bytes(self.buffer[:most])
        del self.buffer[:most]
        return out


class AsyncReply:
    """One reply with its connection: read its body with :meth:`chunks`, then :meth:`close`,
    which keeps a fully read keep-alive connection for the next request and closes any other."""

    def __init__(
        self,
        pool: AsyncConnectionPool,
        route: Route,
        wire: _Wire,
        status: int,
        headers: http.client.HTTPMessage,
        *,
        length: int | None,
        chunked: bool,
        will_close: bool,
    ) -> None:
        self.status = status
        self.headers = headers
        self._pool = pool
        self._route = route
        self._wire: _Wire | None = wire
        self._length = length
        self._chunked = chunked
        self._will_close = will_close
        self._finished = False

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, decoded when the server compressed it."""
        if not compressed(self.headers.get("Content-Encoding")):
            async for piece in self._raw():
                yield piece
            return
        inflater = Inflater()
        async for piece in self._raw():
            for out in inflater.feed(piece):
                yield out
        tail = inflater.flush()
        if tail:
            yield tail

    async def _raw(self) -> AsyncIterator[bytes]:
        wire = self._wire
        assert wire is not None
        if self._chunked:
            while size := await _chunk_size(wire):
                async for piece in _exactly(wire, size):
                    yield piece
                await wire.line("chunk end")
            while (await wire.line("trailer")) not in (b"\r\n", b"\n", b""):
                pass  # trailers are read and dropped, as http.client does
        elif self._length is not None:
            async for piece in _exactly(wire, self._length):
                yield piece
        else:  # no length given: the body is what comes until the peer closes
            while piece := await wire.some(CHUNK_BYTES):
                yield piece
        self._finished = True

    def close(self) -> None:
        wire, self._wire = self._wire, None
        if wire is not None:
            self._pool.release(self._route, wire, reusable=self._finished and not self._will_close)


async def _chunk_size(wire: _Wire) -> int:
    line = await wire.line("chunk size")
    try:
        return int(line.split(b";", 1)[0], 16)
    except ValueError:
        raise http.client.IncompleteRead(b"") from None


async def _exactly(wire: _Wire, size: int) -> AsyncIterator[bytes]:
    left = size
    while left:
        piece = await wire.some(min(left, CHUNK_BYTES))
        if not piece:  # closed before the length it announced
            raise http.client.IncompleteRead(b"", left)
        left -= len(piece)
        yield piece


class AsyncConnectionPool:
    """Idle keep-alive connections per route on one event loop; routes, headers and TLS as
    ``blocking`` (the same client's :class:`ConnectionPool`) has them."""

    def __init__(self, blocking: ConnectionPool) -> None:
        self._blocking = blocking
        self._idle: dict[Route, list[_Wire]] = {}
        self._closed = False

    async def send(
        self, method: str, url: str, *, body: bytes | None, headers: Mapping[str, str]
    ) -> AsyncReply:
        """Send one request and return its reply once the status line and headers are in:
        :meth:`ConnectionPool.send` on the loop, raising what it raises."""
        target = self._blocking.target(url)
        sent = self._blocking.headers_for(target, headers)
        data = _request(method, target.request_target, target.route, sent, body)
        wire = self._take(target.route) or await self._connect(target.route)
        try:
            wire.write(data)
            return await self._reply(wire, method, target.route)
        except BaseException:
            wire.abort()
            raise

    def release(self, route: Route, wire: _Wire, *, reusable: bool) -> None:
        idle = self._idle.setdefault(route, [])
        if reusable and wire.usable() and not self._closed and len(idle) < self._blocking.maxsize:
            idle.append(wire)
            return
        wire.abort()

    def close(self) -> None:
        """Close every idle connection; on the loop the pool runs on."""
        self._closed = True
        for wires in self._idle.values():
            for wire in wires:
                wire.abort()
        self._idle.clear()

    # -- connections ---------------------------------------------------------------------
    def _take(self, route: Route) -> _Wire | None:
        idle = self._idle.get(route)
        while idle:
            wire = idle.pop()
            if wire.usable():
                return wire
            wire.abort()
        return None

    async def _connect(self, route: Route) -> _Wire:
        """A connection to the route, through its proxy's tunnel and in TLS as it needs;
        :class:`ConnectFailed` (with the error itself) when none can be made in time."""
        named = route.proxy[0] if route.proxy else route.host
        try:
            async with asyncio.timeout(self._blocking.connect_timeout):
                wire = await _open(*(route.proxy or (route.host, route.port)))
                try:
                    if route.scheme == "https":
                        if route.proxy is not None:
                            await _tunnel(wire, route)
                        await _tls(wire, route, self._blocking.tls_context())
                except BaseException:
                    wire.abort()
                    raise
        except TimeoutError:
            raise ConnectFailed(TimeoutError("timed out"), named) from None
        except (OSError, http.client.HTTPException, ssl.CertificateError) as exc:
            raise ConnectFailed(exc, named) from exc
        return wire

    async def _reply(self, wire: _Wire, method: str, route: Route) -> AsyncReply:
        version, status, _reason, headers = await _head(wire)
        while status == http.client.CONTINUE:  # a 100 Continue before the answer: skipped
            version, status, _reason, headers = await _head(wire)
        will_close = _will_close(version, headers)
        encoding = headers.get("transfer-encoding")
        chunked = bool(encoding) and str(encoding).lower() == "chunked"
        length = None if chunked else _length(headers.get("content-length"))
        if status in (204, 304) or 100 <= status < 200 or method == "HEAD":
            length, chunked = 0, False
        if not will_close and not chunked and length is None:
            will_close = True
        return AsyncReply(
            self, route, wire, status, headers,
            length=length, chunked=chunked, will_close=will_close,
        )  # fmt: skip


def _request(
    method: str, target: str, route: Route, headers: Mapping[str, str], body: bytes | None
) -> bytes:
    """The request in one piece, its head as ``http.client`` writes it."""
    names = {name.lower() for name in headers}
    lines = [f"{method} {target} HTTP/1.1"]
    if "host" not in names:
        host = f"[{route.host}]" if ":" in route.host else route.host
        default = 443 if route.scheme == "https" else 80
        lines.append(f"Host: {host}" if route.port == default else f"Host: {host}:{route.port}")
    if "accept-encoding" not in names:
        lines.append("Accept-Encoding: identity")
    for name, value in headers.items():
        if not _LEGAL_NAME.fullmatch(name) or "\r" in value or "\n" in value:
            raise InvalidRequest("a request header has a value HTTP cannot carry (a line break?)")
        lines.append(f"{name}: {value}")
    if "content-length" not in names and "transfer-encoding" not in names:
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        elif method.upper() in _BODY_METHODS:
            lines.append("Content-Length: 0")
    try:
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    except UnicodeEncodeError:
        raise InvalidRequest("a request header has a value HTTP cannot carry") from None
    return head + body if body else head


async def _head(wire: _Wire) -> tuple[str, int, str, http.client.HTTPMessage]:
    """A reply's version, status, reason and headers, read and checked as ``http.client``
    does."""
    raw = await wire.line("status line")
    if len(raw) > MAX_LINE:
        raise http.client.LineTooLong("status line")
    if not raw:
        raise http.client.RemoteDisconnected("Remote end closed connection without response")
    line = raw.decode("iso-8859-1")
    parts = line.split(None, 2)
    version = parts[0] if len(parts) >= 2 else ""
    if not version.startswith("HTTP/"):
        raise http.client.BadStatusLine(line)
    try:
        status = int(parts[1])
    except ValueError:
        raise http.client.BadStatusLine(line) from None
    if not 100 <= status <= 999:
        raise http.client.BadStatusLine(line)
    if version not in ("HTTP/1.0", "HTTP/0.9") and not version.startswith("HTTP/1."):
        raise http.client.UnknownProtocol(version)
    lines: list[bytes] = []
    while (header := await wire.line("header line")) not in (b"\r\n", b"\n", b""):
        if len(header) > MAX_LINE:
            raise http.client.LineTooLong("header line")
        lines.append(header)
        if len(lines) > MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")
    headers = _plain_headers(lines)
    if headers is None:
        headers = http.client.parse_headers(io.BytesIO(b"".join(lines) + b"\r\n"))
    return version, status, parts[2].strip() if len(parts) > 2 else "", headers


def _plain_headers(lines: list[bytes]) -> http.client.HTTPMessage | None:
    """The headers as ``http.client.parse_headers`` reads them, when every line is plain (a
    name, a colon, a value on that line alone); None for any other block, which goes to it.

    ``parse_headers`` drives the email package's feed parser: 16 us for a model API's reply
    of four headers, against 3 us here (about 2 % of the proxy's CPU on a model call, every
    call paying it once). A plain line is what that parser makes of it, with
    its own rules: the name kept as written, the value without the spaces and tabs after the
    colon and without the line's end, duplicates kept in order. A folded value, a bare CR, a
    name with a space or none, a line with no colon: not plain, read by ``parse_headers``
    (tests/transport/test_forward_async.py compares the two on such lines).
    """
    message = http.client.HTTPMessage()
    for raw in lines:
        if not raw.endswith(b"\n"):
            return None
        line = raw[:-1].decode("iso-8859-1").removesuffix("\r")
        colon = line.find(":")
        if colon < 1 or "\r" in line:  # a line ends at its first LF: none inside
            return None
        if not _HEADER_NAME.fullmatch(line, 0, colon):
            return None
        message.set_raw(line[:colon], line[colon + 1 :].lstrip(" \t"))
    return message


def _will_close(version: str, headers: http.client.HTTPMessage) -> bool:
    """Whether the peer closes the connection after this reply (``http.client``'s rule)."""
    connection = str(headers.get("connection") or "").lower()
    if version not in ("HTTP/1.0", "HTTP/0.9"):
        return "close" in connection
    if headers.get("keep-alive") or "keep-alive" in connection:
        return False
    return "keep-alive" not in str(headers.get("proxy-connection") or "").lower()


def _length(value: str | None) -> int | None:
    if not value:
        return None
    try:
        length = int(value)
    except ValueError:
        return None
    return length if length >= 0 else None


async def _open(host: str, port: int) -> _Wire:
    """A TCP connection to the first address of ``host`` that answers; the last address's
    error when none does (as ``socket.create_connection``)."""
    loop = asyncio.get_running_loop()
    try:
        ipaddress.ip_address(host)
        addresses = [host]
    except ValueError:  # a name: resolved once per connection, on the loop's resolver thread
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = [str(info[4][0]) for info in infos]
    error: OSError = OSError(f"no address for {host}")
    for address in addresses:
        try:
            _transport, wire = await loop.create_connection(lambda: _Wire(loop), address, port)
        except OSError as exc:
            error = exc
            continue
        return wire
    raise error


async def _tunnel(wire: _Wire, route: Route) -> None:
    """A CONNECT tunnel through the route's proxy to its origin, as ``http.client`` asks."""
    lines = [f"CONNECT {route.host}:{route.port} HTTP/1.0"]
    lines += [f"{name}: {value}" for name, value in tunnel_headers(route).items()]
    wire.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    _version, status, reason, _headers = await _head(wire)
    if status != http.client.OK:
        raise OSError(f"Tunnel connection failed: {status} {reason}")


async def _tls(wire: _Wire, route: Route, context: ssl.SSLContext) -> None:
    """TLS with the origin over the connection (direct, or the tunnel), verified."""
    loop = asyncio.get_running_loop()
    assert wire.transport is not None
    secured = await loop.start_tls(wire.transport, wire, context, server_hostname=route.host)
    assert isinstance(secured, asyncio.Transport)
    wire.transport = secured
