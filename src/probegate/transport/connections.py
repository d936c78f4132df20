"""Keep-alive HTTP/1.1 connections on the standard library's ``http.client``, pooled per route.

Why not a ``requests.Session``: against a fast agent the client's own CPU time is what bounds a
scan, because every worker thread takes turns on one interpreter lock. A request through
requests and urllib3 cost about 1.1 ms of CPU here (preparing and merging settings, hooks,
cookies, adapters, urllib3's pool and retry objects), the same request on ``http.client``
about 0.35 ms (bench/bench_throughput.py, whose bare loop is the yardstick). What the layers
above gave is kept, each in a few lines: a pool of idle connections per route (LIFO, at most
``maxsize`` kept, a connection the peer closed while idle is never reused), proxies from the
environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``, read once per origin), verified TLS
against the CA bundle requests would use, separate connect and read timeouts, and a reply body
read in pieces (with ``gzip``/``deflate`` decoded piece by piece, for a server that compresses
unasked). Redirects are never followed. Errors keep their own types; transport/http.py turns
them into reasons.
"""

from __future__ import annotations

import base64
import http.client
import os
import select
import socket
import ssl
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult, quote, unquote, urlencode, urlsplit

CHUNK_BYTES = 65536
# URLs read and kept (an http target with a session id in its path has one per attempt).
_TARGETS_KEPT = 1024
# Characters left as they are when a URL is put on the wire: the reserved set, and '%' so an
# escape already in the URL is not escaped twice (everything else, a space say, is escaped).
_URL_SAFE = "!#$%&'()*+,/:;=?@[]~"


class InvalidRequest(ValueError):
    """The request cannot be written at all: nothing a retry or the peer could change."""


class InvalidTarget(InvalidRequest):
    """The URL cannot be sent to: no host, a scheme that is not http or https, a bad port, a
    host name IDNA cannot spell, or a proxy the environment names that is not http://."""


class ConnectFailed(Exception):
    """No connection to the route: refused, unresolvable, timed out, TLS or proxy refused.

    ``cause`` is the error itself (a ``socket.gaierror``, ``ssl.SSLError``, ...); ``host`` is
    the one the URL names, for the message."""

    def __init__(self, cause: BaseException, host: str) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.host = host


@dataclass(frozen=True)
class Route:
    """Where a connection goes: the origin, and the proxy in front of it, if any."""

    scheme: str
    host: str
    port: int
    proxy: tuple[str, int] | None = None  # (host, port) of a plain HTTP proxy
    # "Basic ..." for a proxy URL with credentials: sent to the proxy, never shown.
    proxy_authorization: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Target:
    """One URL as it is sent: its route, its request line's target, the headers it implies."""

    route: Route
    # What the request line names: a path for a direct request, the absolute URL through a
    # plain HTTP proxy.
    request_target: str
    headers: Mapping[str, str]


class Reply:
    """One reply with its connection: read it in pieces, then :meth:`close` it, which hands a
    fully read keep-alive connection back to the pool and closes any other."""

    def __init__(
        self, pool: ConnectionPool, route: Route, conn: _Connection,
        response: http.client.HTTPResponse,
    ) -> None:  # fmt: skip
        self.status = response.status
        self.headers = response.msg
        self._pool = pool
        self._route = route
        self._conn: _Connection | None = conn
        self._response = response
        self._finished = False

    def chunks(self) -> Iterator[bytes]:
        """The body as it arrives, decoded when the server compressed it."""
        pieces = self._raw()
        if compressed(self.headers.get("Content-Encoding")):
            return _inflated(pieces, Inflater())
        return pieces

    def _raw(self) -> Iterator[bytes]:
        response = self._response
        while True:
            piece = response.read1(CHUNK_BYTES)
            if piece:
                yield piece
                continue
            if response.length:  # closed before the Content-Length it announced
                raise http.client.IncompleteRead(b"", response.length)
            self._finished = True
            return

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        reusable = self._finished and not self._response.will_close
        self._response.close()
        self._pool.release(self._route, conn, reusable=reusable)


def compressed(encoding: str | None) -> bool:
    """Whether a ``Content-Encoding`` is one :class:`Inflater` decodes (a server may compress
    unasked)."""
    return (encoding or "").strip().lower() in ("gzip", "x-gzip", "deflate")


class Inflater:
    """A gzip or deflate body decoded piece by piece, its output in bounded pieces, so a small
    bomb never becomes one huge string: the reader's body cap stops it after the first pieces
    over the limit. Raises ``zlib.error`` on a body that is not what it claims."""

    def __init__(self) -> None:
        # 32 + MAX_WBITS reads either a gzip or a zlib header.
        self._decoder = zlib.decompressobj(32 + zlib.MAX_WBITS)

    def feed(self, piece: bytes) -> Iterator[bytes]:
        data = piece
        while data:
            out = self._decoder.decompress(data, CHUNK_BYTES)
            if out:
                yield out
            data = self._decoder.unconsumed_tail

    def flush(self) -> bytes:
        return self._decoder.flush()


def _inflated(pieces: Iterator[bytes], inflater: Inflater) -> Iterator[bytes]:
    for piece in pieces:
        yield from inflater.feed(piece)
    tail = inflater.flush()
    if tail:
        yield tail


class _Connection(http.client.HTTPConnection):
    """An HTTP/1.1 connection that writes a request's head and body in one send.

    http.client writes them in two; each write lets go of the interpreter lock and takes it
    back, which at 64 workers is a hand-off to another thread and back per write (the lock
    hand-offs, not the work, were a third of a scan's CPU at ``--concurrency 64``)."""

    _held: list[bytes] | None = None

    def send_request(
        self, method: str, target: str, body: bytes | None, headers: dict[str, str]
    ) -> None:
        self._held = [] if body else None
        try:
            self.request(method, target, body=body, headers=headers)
        except ValueError:  # http.client refuses a header with a line break in its value
            raise InvalidRequest(
                "a request header has a value HTTP cannot carry (a line break?)"
            ) from None
        held, self._held = self._held, None
        if held:  # the body was never written (no body after all): the head goes alone
            super().send(b"".join(held))

    def send(self, data: Any) -> None:
        held = self._held
        if held is None or not isinstance(data, bytes):
            super().send(data)
            return
        held.append(data)
        if len(held) == 2:
            self._held = None
            super().send(b"".join(held))


class _TLSConnection(_Connection, http.client.HTTPSConnection):
    """:class:`_Connection` over TLS."""


class ConnectionPool:
    """Idle keep-alive connections per route, shared by every worker thread of one client."""

    def __init__(
        self,
        *,
        maxsize: int,
        connect_timeout: float,
        read_timeout: float,
        user_agent: str,
        proxies_for: Callable[[str], Mapping[str, str]] | None = None,
    ) -> None:
        self.maxsize = max(1, maxsize)
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.user_agent = user_agent
        self._proxies_for = proxies_for or environment_proxies
        self._idle: dict[Route, list[_Connection]] = {}
        self._routes: dict[str, Route] = {}
        self._targets: dict[tuple[str, tuple[tuple[str, str], ...]], Target] = {}
        self._lock = threading.Lock()
        self._tls: ssl.SSLContext | None = None
        self._closed = False

    def send(
        self,
        method: str,
        url: str,
        *,
        body: bytes | None,
        headers: Mapping[str, str],
        params: Mapping[str, str] | None = None,
        on_connection: Callable[[http.client.HTTPConnection], None] | None = None,
    ) -> Reply:
        """Send one request and return its reply once the status line and headers are in.

        :class:`ConnectFailed` when no connection could be made; any other error (a timeout,
        the peer closing, a malformed reply) is raised as it is, the connection closed."""
        target = self.target(url, params)
        conn = self._take(target.route) or self._open(target.route)
        if on_connection is not None:
            on_connection(conn)
        if conn.sock is None:
            try:
                conn.connect()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                route = target.route
                raise ConnectFailed(exc, route.proxy[0] if route.proxy else route.host) from exc
            assert conn.sock is not None
            conn.sock.settimeout(self.read_timeout)
            # No write waits for the peer's delayed ACK of the one before (Nagle's algorithm:
            # ~40 ms a request when two writes meet it), as urllib3 set it.
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sent = self.headers_for(target, headers)
        try:
            conn.send_request(method, target.request_target, body, sent)
            response = conn.getresponse()
        except BaseException:
            conn.close()
            raise
        return Reply(self, target.route, conn, response)

    def headers_for(self, target: Target, headers: Mapping[str, str]) -> dict[str, str]:
        """What a request to ``target`` carries: the client's own headers, the URL's, the
        caller's (later ones winning by name)."""
        return _merged({"User-Agent": self.user_agent, "Accept": "*/*"}, target.headers, headers)

    def release(self, route: Route, conn: _Connection, *, reusable: bool) -> None:
        if reusable and conn.sock is not None:
            with self._lock:
                idle = self._idle.setdefault(route, [])
                if not self._closed and len(idle) < self.maxsize:
                    idle.append(conn)
                    return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle = [conn for conns in self._idle.values() for conn in conns]
            self._idle.clear()
        for conn in idle:
            conn.close()

    # -- routes and connections ----------------------------------------------------------
    def target(self, url: str, params: Mapping[str, str] | None = None) -> Target:
        """Where ``url`` goes and how it is asked for; read once per URL and query (a scan
        sends thousands of requests to one URL, and each reading is tens of microseconds of
        the interpreter lock every worker waits on)."""
        key = (url, tuple(params.items()) if params else ())
        target = self._targets.get(key)
        if target is None:
            target = self._read_target(url, params)
            with self._lock:
                if len(self._targets) >= _TARGETS_KEPT:
                    self._targets.clear()
                self._targets[key] = target
        return target

    def _read_target(self, url: str, params: Mapping[str, str] | None) -> Target:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            # Not the URL itself: it may carry credentials.
            raise InvalidTarget(
                f"an http:// or https:// URL with a host is needed, not {scheme or 'no'} scheme"
            )
        port = _port(parts, 443 if scheme == "https" else 80)
        query = parts.query
        if params:
            query = f"{query}&{urlencode(params)}" if query else urlencode(params)
        path = quote(parts.path or "/", safe=_URL_SAFE) + (
            "?" + quote(query, safe=_URL_SAFE) if query else ""
        )
        origin = f"{scheme}://{parts.netloc}"
        route = self._routes.get(origin)
        if route is None:
            route = self._route(scheme, _ascii_host(parts.hostname), port, url)
            with self._lock:
                self._routes[origin] = route
        # Credentials in the URL are HTTP basic authentication, as requests sends them (a
        # caller's own Authorization header wins); they never go on the request line.
        headers = {}
        if parts.username is not None:
            headers["Authorization"] = _basic(parts.username, parts.password)
        if route.proxy is not None and scheme == "http":
            # A plain HTTP proxy is asked for the absolute URL.
            host = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
            return Target(route, f"http://{host}{path}", headers | tunnel_headers(route))
        return Target(route, path, headers)

    def _route(self, scheme: str, host: str, port: int, url: str) -> Route:
        """The route to an origin: direct, or through the proxy the environment names."""
        proxies = self._proxies_for(url)
        proxy = proxies.get(scheme) or proxies.get("all")
        if not proxy:
            return Route(scheme, host, port)
        parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if parts.scheme.lower() != "http" or not parts.hostname:
            raise InvalidTarget(
                f"the proxy for {scheme} URLs must be an http:// proxy, not {parts.scheme}://"
            )
        authorization = None
        if parts.username is not None:
            authorization = _basic(parts.username, parts.password)
        where = (_ascii_host(parts.hostname), _port(parts, 80))
        return Route(scheme, host, port, where, authorization)

    def _take(self, route: Route) -> _Connection | None:
        while True:
            with self._lock:
                idle = self._idle.get(route)
                if not idle:
                    return None
                conn = idle.pop()
            if not _dropped(conn):
                return conn
            conn.close()

    def _open(self, route: Route) -> _Connection:
        host, port = route.proxy or (route.host, route.port)
        if route.scheme == "http":
            return _Connection(host, port, timeout=self.connect_timeout)
        conn = _TLSConnection(host, port, timeout=self.connect_timeout, context=self.tls_context())
        if route.proxy is not None:
            # HTTPS through a proxy: a CONNECT tunnel, then TLS with the origin inside it.
            conn.set_tunnel(route.host, route.port, headers=tunnel_headers(route))
        return conn

    def tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            context = ssl.create_default_context(cafile=_ca_bundle())
            context.set_alpn_protocols(["http/1.1"])
            self._tls = context
        return self._tls


def _basic(username: str, password: str | None) -> str:
    pair = f"{unquote(username)}:{unquote(password or '')}"
    return "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")


def tunnel_headers(route: Route) -> dict[str, str]:
    auth = route.proxy_authorization
    return {"Proxy-Authorization": auth} if auth else {}


def _merged(*layers: Mapping[str, str]) -> dict[str, str]:
    """Headers, later layers winning by name in any case (``user-agent`` replaces
    ``User-Agent`` instead of sending both)."""
    out: dict[str, str] = {}
    names: dict[str, str] = {}
    for layer in layers:
        for name, value in layer.items():
            old = names.get(name.lower())
            if old is not None:
                del out[old]
            names[name.lower()] = name
            out[name] = value
    return out


def _dropped(conn: http.client.HTTPConnection) -> bool:
    """An idle connection the peer closed (or wrote to unasked) is readable: never reuse it.
    poll, not select: a process holding thousands of sockets has descriptors past 1024."""
    sock = conn.sock
    if sock is None:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def _ascii_host(host: str) -> str:
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        raise InvalidTarget("a host name IDNA cannot spell") from None


def _port(parts: SplitResult, default: int) -> int:
    try:
        return parts.port or default
    except ValueError as exc:  # not a number, or out of range
        raise InvalidTarget(str(exc)) from None


def _ca_bundle() -> str:
    """The CA bundle requests would verify against: the environment's, else certifi's."""
    named = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if named:
        return named
    from requests.utils import DEFAULT_CA_BUNDLE_PATH  # only when the first TLS peer is met

    return DEFAULT_CA_BUNDLE_PATH


def environment_proxies(url: str) -> Mapping[str, str]:
    """The proxies the environment names for ``url`` (none when ``NO_PROXY`` covers it), by
    requests' rules, which users of the tools around probegate already know."""
    from requests.utils import get_environ_proxies  # once per origin

    return dict(get_environ_proxies(url))
