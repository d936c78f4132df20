"""The model-API proxy's upstream calls (``ForwardingClient.forward``, on its event loop, over
transport/async_connections.py) against the same calls over ``http.client``, the blocking wire
every other request of probegate uses: the same answer and the same failure, byte for byte and
word for word, from every peer the blocking client's own tests meet.

The reference is the same client with its one try (``_once``) made by the blocking
``HttpClient._exchange``, as the proxy made it on worker threads before; retries, the body cap
and the wording are shared, so what is compared is the wire. Each case is sent both ways, each
to a fresh peer, and the outcomes compared whole: the status, headers and body passed on and
what ``parse`` read, or the error's type, reason, cause and fatality; and how many requests
the peer saw (a retry of an unreadable body, the one more try after a dropped connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import http.client
import io
import random
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from probegate.models.causes import Cause
from probegate.transport.async_connections import _plain_headers
from probegate.transport.forwarding import ForwardingClient
from probegate.transport.http_parts import Forwarded
from probegate.transport.usage import MalformedReply, TransportError
from tests.servers.base import Handler, LoopbackServer
from tests.servers.faults import FaultHandler, FaultServer
from tests.servers.peers import (
    BASIC,
    PROXY_PASSWORD,
    EchoServer,
    ProxyServer,
    ShortIdleServer,
    TcpPeer,
)

KEY = "sk-upstream-SECRET-0123456789"


class BlockingReference(ForwardingClient):
    """Each try over ``http.client`` (blocking the loop, which only this test runs)."""

    async def _once(
        self, method: str, url: str, body: bytes, headers: Mapping[str, str]
    ) -> Forwarded:
        reply, raw = self._exchange(
            method, url, body, None, headers, time.monotonic() + self.timeout
        )
        return self._forwarded(reply, raw)  # type: ignore[arg-type]  # the same status, headers


@dataclass(frozen=True)
class Outcome:
    """What a forwarded call came to, in the terms a caller can see."""

    kind: str  # "answer" or the error's class name
    status: int | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    read: Any = None
    reason: str = ""
    cause: Cause | None = None
    fatal: bool = False


def _read(data: object) -> str:
    """A caller's parse (as the proxy's): a reply without ``choices`` is missing evidence."""
    if not isinstance(data, dict) or "choices" not in data:
        raise MalformedReply("unreadable reply: HTTP 200 with JSON that is not a chat completion")
    return f"{len(data['choices'])} choices"


def forward(
    url: str,
    *,
    on_loop: bool,
    parse: Callable[[Any], Any] | None = None,
    times: int = 1,
    **options: Any,
) -> list[Outcome]:
    """``times`` calls of one fresh client, over the loop's wire or the blocking reference's,
    each as an Outcome."""
    settings: dict[str, Any] = {"timeout": 2.0, "retries": 1, "backoff_base": 0.01}
    client = (ForwardingClient if on_loop else BlockingReference)(**(settings | options))
    client.add_secret(KEY)
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}

    async def run() -> list[Outcome]:
        out = []
        for _ in range(times):
            try:
                answer = await client.forward("POST", url, body=b"{}", headers=headers, parse=parse)
            except TransportError as exc:
                out.append(_failed(exc))
                continue
            out.append(_answered(answer))
        client.close_async()
        return out

    try:
        return asyncio.run(run())
    finally:
        client.close()


def _answered(answer: Forwarded) -> Outcome:
    """The answer, its clock left out: a ``Date``, and a ``Retry-After`` given as a date (the
    two calls compared are seconds apart)."""
    shown = tuple(
        sorted(
            (k.lower(), "(a date)" if k.lower() == "retry-after" and not v.isdigit() else v)
            for k, v in answer.headers.items()
            if k.lower() != "date"
        )
    )
    return Outcome("answer", answer.status, shown, answer.body, answer.read)


def _failed(exc: TransportError) -> Outcome:
    return Outcome(type(exc).__name__, reason=exc.reason, cause=exc.cause, fatal=exc.fatal)


# --- every fault the blocking client's tests inject ---------------------------------------

FAULTS = sorted(
    name.removeprefix("fault_") for name in vars(FaultHandler) if name.startswith("fault_")
)
SLOW = {"timeout", "drip", "headerdrip"}


@pytest.mark.parametrize("parse", [None, _read], ids=["passed on", "read"])
@pytest.mark.parametrize("fault", [*sorted(set(FAULTS) - SLOW), "garbage-1", "nochoices-1"])
def test_every_fault_ends_the_same_on_the_loop(fault: str, parse: Any) -> None:
    seen = []
    for on_loop in (False, True):
        with FaultServer() as peer:
            outcome = forward(f"{peer.endpoint(fault)}/x", on_loop=on_loop, parse=parse)
            seen.append((outcome, peer.snapshot()))
    assert seen[1] == seen[0]


@pytest.mark.parametrize("fault", sorted(SLOW))
def test_a_slow_peer_meets_the_same_deadline_on_the_loop(fault: str) -> None:
    """A drip of one byte a second resets no deadline on the loop either. (Which words the
    blocking client uses depends on whether its socket or its watchdog noticed first.)"""
    for on_loop in (False, True):
        with FaultServer() as peer:
            start = time.monotonic()
            [outcome] = forward(peer.endpoint(fault), on_loop=on_loop, parse=_read, timeout=0.5)
            elapsed = time.monotonic() - start
        assert outcome.kind == "TransportError" and outcome.cause is Cause.TIMEOUT
        assert "within 0.5s (timeout)" in outcome.reason
        assert elapsed < 1.5


# --- replies only a raw peer sends ----------------------------------------------------------

_GZIP = gzip.compress(b'{"choices": [1, 2]}')
CANNED: dict[str, bytes] = {
    "continue": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 16\r\n\r\n"
    b'{"choices": [1]}',
    "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b'6;name=value\r\n{"choi\r\na\r\nces": [1]}\r\n0\r\nX-Trailer: yes\r\n\r\n',
    "gzipchunked": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked"
    + b"\r\n\r\n%x\r\n" % len(_GZIP)
    + _GZIP
    + b"\r\n0\r\n\r\n",
    "badchunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    "cutchunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n{}",
    "http10": b'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"choices": []}',
    "lf": b'HTTP/1.1 200 OK\nContent-Length: 15\n\n{"choices": []}',
    "close": b'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 15\r\n\r\n{"choices": []}',
    "nocontent": b"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n",
    "badgzip": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nnope",
    "nothttp": b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
    "badstatus": b"HTTP/1.1 2x0 OK\r\n\r\n",
    "http2": b"HTTP/2.0 200 OK\r\n\r\n",
    "longstatus": b"HTTP/1.1 200 " + b"O" * 70_000 + b"\r\n\r\n",
    "longheader": b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n",
    "manyheaders": b"HTTP/1.1 200 OK\r\n" + b"X-H: 1\r\n" * 101 + b"\r\n",
    # Plain header lines as servers write them (duplicates, no space, a tab, Latin-1), then
    # lines only http.client's own parser reads: a folded value, a bare CR, a name with a
    # space (which ends the headers there, the Content-Length after it unread).
    "plainheaders": b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nset-cookie:b=2\r\nX-T:\t caf\xe9 \r\n"
    b'Content-Length: 15\r\n\r\n{"choices": []}',
    "foldedheader": b"HTTP/1.1 200 OK\r\nX-Fold: a\r\n  b\r\nX-CR: a\rb\r\n"
    b"Content-Length: 2\r\n\r\n{}",
    "spacedname": b"HTTP/1.1 200 OK\r\nBad Name: v\r\nContent-Length: 2\r\n\r\n{}",
    "silent": b"",
    "halfhead": b"HTTP/1.1 200 OK\r\nContent-Le",
    "reset": b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{",
}


class _CannedHandler(socketserver.StreamRequestHandler):
    """Reads one request (its head and its Content-Length body) and writes the canned bytes
    its path names, then closes (``reset``: with an RST, as a crashed peer does)."""

    server: CannedServer

    def handle(self) -> None:
        head = self.rfile.readline(65537).decode("latin-1")
        length = 0
        while (line := self.rfile.readline(65537)) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        self.rfile.read(length)
        path = head.split(" ")[1].strip("/") if " " in head else ""
        with self.server.lock:
            self.server.hits[path] = self.server.hits.get(path, 0) + 1
        with contextlib.suppress(OSError):
            self.wfile.write(CANNED[path])
            self.wfile.flush()
            if path == "reset":
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
                )


class CannedServer(TcpPeer):
    """The canned replies, in the clear or (``tls``) over TLS with the given context."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(_CannedHandler)
        self.hits: dict[str, int] = {}
        self.scheme = "http"
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True)
            self.scheme = "https"

    def url(self, path: str) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/{path}"


@pytest.fixture(params=["http", "https"])
def tls(
    request: pytest.FixtureRequest, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> ssl.SSLContext | None:
    """No TLS, or TLS the client verifies (an upstream model API is HTTPS; a peer that ends
    without TLS's close_notify, as these do, must read the same on both wires)."""
    if request.param == "http":
        return None
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(certificate[0]))
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    return context


@pytest.mark.parametrize("parse", [None, _read], ids=["passed on", "read"])
@pytest.mark.parametrize("reply", sorted(CANNED))
def test_every_framing_and_malformed_reply_ends_the_same_on_the_loop(
    reply: str, parse: Any, tls: ssl.SSLContext | None
) -> None:
    seen = []
    for on_loop in (False, True):
        with CannedServer(tls) as peer:
            outcomes = forward(peer.url(reply), on_loop=on_loop, parse=parse)
            seen.append((outcomes, dict(peer.hits)))
    assert seen[1] == seen[0]


def test_the_canned_replies_are_read_as_http_reads_them(tls: ssl.SSLContext | None) -> None:
    """The comparison above is not two wrongs agreeing: the framings are read, over TLS too
    (a body that runs to the end of the connection included, with no close_notify)."""
    with CannedServer(tls) as peer:
        got = {
            name: forward(peer.url(name), on_loop=True, parse=_read)[0]
            for name in ("continue", "chunked", "gzipchunked", "http10", "lf", "badchunk")
        }
    assert got["continue"].read == got["chunked"].read == "1 choices"
    assert got["gzipchunked"].read == "2 choices"
    assert got["http10"].read == got["lf"].read == "0 choices"
    assert got["badchunk"].reason == "connection dropped mid-reply (truncated body)"


# --- connections ---------------------------------------------------------------------------


def test_keep_alive_connections_are_reused_on_the_loop() -> None:
    with EchoServer() as peer:
        outcomes = forward(f"{peer.url}/v1/x", on_loop=True, times=5)
        opened = peer.connections
    assert [o.status for o in outcomes] == [200] * 5 and opened == 1


def test_a_connection_the_peer_closed_is_not_reused_on_the_loop() -> None:
    with ShortIdleServer() as peer:
        client = ForwardingClient(timeout=5, retries=0)

        async def run() -> list[int]:
            statuses = []
            for _ in range(3):
                answer = await client.forward("POST", f"{peer.url}/x", body=b"{}", headers={})
                statuses.append(answer.status)
                await asyncio.sleep(0.6)  # the peer drops a connection idle for 0.2 s
            client.close_async()
            return statuses

        statuses = asyncio.run(run())
        client.close()
        opened = peer.connections
    assert statuses == [200, 200, 200] and opened == 3
    assert client.stats.tries == 3 and client.stats.retries == 0


class _Closing(Handler):
    """Answers the first request of each connection; on the next one it reads the request and
    closes the connection without a reply, as a server does when its idle timeout strikes just
    as a pooled keep-alive connection is used again."""

    def do_POST(self) -> None:
        self.owner.count()
        self.read_json()
        served = getattr(self, "served", 0)
        self.served = served + 1
        if served:
            self.close_connection = True
            return
        self.send_json(200, {"ok": True})


class ClosingServer(LoopbackServer):
    handler = _Closing


def test_one_more_try_when_a_pooled_connection_closes_as_it_is_used() -> None:
    seen = []
    for on_loop in (False, True):
        with ClosingServer() as peer:
            outcomes = forward(f"{peer.url}/v1/x", on_loop=on_loop, times=3)
            seen.append((outcomes, peer.requests))
    assert seen[1] == seen[0]
    # The model call must not fail for it (no reply came, so nothing was done): two requests
    # reached a connection that closed unanswered, and were sent again.
    assert [o.status for o in seen[1][0]] == [200] * 3 and seen[1][1] == 5
    assert seen[1][0][0].body == b'{"ok": true}'


def test_a_body_nobody_can_read_is_asked_for_again_and_other_answers_are_passed_on(
    faults: FaultServer,
) -> None:
    """With parse (the proxy's), an HTML page or JSON of the wrong shape is retried like a 5xx;
    a 5xx itself is the agent's to retry, passed on at once."""
    http = ForwardingClient(timeout=1.0, retries=2, backoff_base=0.01)
    base = faults.url

    async def run() -> None:
        answer = await http.forward(
            "POST", f"{base}/garbage-2/v1/x", body=b"{}", headers={}, parse=_read
        )
        assert answer.status == 200 and answer.read == "1 choices"
        assert http.stats.unreadable == 2 and http.stats.retries == 2
        answer = await http.forward("POST", f"{base}/500/v1/x", body=b"{}", headers={}, parse=_read)
        assert answer.status == 500 and answer.read is None and http.stats.retries == 2
        with pytest.raises(MalformedReply) as caught:
            await http.forward(
                "POST", f"{base}/nochoices/v1/x", body=b"{}", headers={}, parse=_read
            )
        assert caught.value.reason.endswith("not a chat completion (gave up after 3 tries)")
        http.close_async()

    asyncio.run(run())
    http.close()


def test_a_closed_port_is_the_same_refusal_on_the_loop() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1/x"
    blocking, looped = (forward(url, on_loop=flag) for flag in (False, True))
    assert looped == blocking
    assert looped[0].reason == "connection refused" and looped[0].cause is Cause.REFUSED


def test_a_name_that_does_not_resolve_is_the_same_on_the_loop() -> None:
    url = "http://probegate-no-such-host.invalid/v1/x"
    blocking, looped = (forward(url, on_loop=flag) for flag in (False, True))
    assert looped == blocking and looped[0].cause is Cause.DNS


# --- TLS and the environment's proxies -----------------------------------------------------


def https(server: EchoServer) -> str:
    return server.url.replace("http://", "https://")


def test_https_is_verified_the_same_on_the_loop(
    tls_server: EchoServer, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    untrusted = [forward(https(tls_server) + "/v1/x", on_loop=flag) for flag in (False, True)]
    assert untrusted[1] == untrusted[0]
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted[1][0].reason
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(certificate[0]))
    trusted = [
        forward(https(tls_server) + "/v1/x", on_loop=flag, times=2) for flag in (False, True)
    ]
    assert trusted[1] == trusted[0] and trusted[1][0].status == 200


def test_the_environment_proxy_is_used_the_same_on_the_loop(
    no_proxies: pytest.MonkeyPatch, tls_server: EchoServer, certificate: tuple[Path, Path]
) -> None:
    no_proxies.setenv("REQUESTS_CA_BUNDLE", str(certificate[0]))
    port = tls_server.httpd.server_address[1]
    seen = []
    for on_loop in (False, True):
        with ProxyServer() as proxy:
            no_proxies.setenv("HTTP_PROXY", proxy.url())
            no_proxies.setenv("HTTPS_PROXY", proxy.url())
            plain = forward("http://agent.internal:8080/v1/chat?api=2", on_loop=on_loop)
            tunnelled = forward(https(tls_server) + "/v1/x", on_loop=on_loop, times=3)
            seen.append(
                (plain, tunnelled, [(line.rpartition(" ")[0], a) for line, a in proxy.seen])
            )
    assert seen[1] == seen[0]
    plain, tunnelled, requests = seen[1]
    assert b"POST http://agent.internal:8080/v1/chat?api=2 HTTP/1.1" in plain[0].body
    assert [o.status for o in tunnelled] == [200] * 3
    # One tunnel for the three requests, asked for with the proxy's credentials.
    assert requests == [
        ("POST http://agent.internal:8080/v1/chat?api=2", BASIC),
        (f"CONNECT 127.0.0.1:{port}", BASIC),
    ]


def test_a_refused_tunnel_is_the_same_on_the_loop(no_proxies: pytest.MonkeyPatch) -> None:
    seen = []
    for on_loop in (False, True):
        with ProxyServer(refuse=True) as proxy:
            no_proxies.setenv("HTTPS_PROXY", proxy.url())
            seen.append(
                forward("https://agent.internal/v1/x", on_loop=on_loop, secrets=[PROXY_PASSWORD])
            )
    assert seen[1] == seen[0]
    assert seen[1][0].reason.startswith(
        "the proxy refused the tunnel: Tunnel connection failed: 407"
    )
    assert PROXY_PASSWORD not in seen[1][0].reason


@pytest.fixture
def loop_thread() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)
    loop.close()


def test_a_call_in_flight_is_cancelled_at_once(loop_thread: asyncio.AbstractEventLoop) -> None:
    """The proxy closing cancels its calls: none waits out the model (or its deadline)."""
    ended = threading.Event()
    with FaultServer() as peer:
        client = ForwardingClient(timeout=30, retries=0)

        async def call() -> None:
            try:
                await client.forward("POST", peer.endpoint("timeout"), body=b"{}", headers={})
            finally:
                ended.set()

        running = asyncio.run_coroutine_threadsafe(call(), loop_thread)
        time.sleep(0.3)
        assert not ended.is_set()
        start = time.monotonic()
        running.cancel()
        assert ended.wait(5) and time.monotonic() - start < 0.5
        client.close()


# --- header lines: the plain ones read here, the others by http.client ----------------------

_PLAIN_LINES = (
    *(b"Content-Type: application/json\r\n", b"X-A:b\r\n", b"X-T:\t v \t\r\n", b"X-E:\r\n"),
    *(b"Set-Cookie: a=1\r\n", b"set-cookie: b=2\n", b"X-L: caf\xe9\r\n", b"X-C: \x00\x07\x7f\r\n"),
    *(b"X-Colon: a:b:c\r\n", b"X-U: a\x0bb\x0cc\x1cd\x85\r\n", b"x-lower:   \t  v\r\n"),
)
# Folded, bare CR, no colon, no name, a space or a tab or Latin-1 in the name, a Unix "From "
# line, no line end.
_ODD_LINES = (
    *(b" folded\r\n", b"\tfolded\r\n", b"X-R: a\rb\r\n", b"X-CR: v\r\r\n", b"NoColon\r\n"),
    *(b": v\r\n", b"Bad Name: v\r\n", b"X-Tab\t: v\r\n", b"\xe9X: v\r\n", b"From me: x\r\n"),
    b"X-NoEnd: v",
)


def test_plain_header_lines_are_read_as_http_client_reads_them() -> None:
    """Random blocks of header lines, plain and not: whenever the plain reading answers, it is
    what ``http.client.parse_headers`` makes of the same block (every header in order, each
    name's values, the content type); a block with any other line is left to it."""
    rng = random.Random(2026)
    plain = 0
    for _ in range(5000):
        lines = [rng.choice(_PLAIN_LINES + _ODD_LINES) for _ in range(rng.randint(0, 6))]
        expected = http.client.parse_headers(io.BytesIO(b"".join(lines) + b"\r\n"))
        got = _plain_headers(lines)
        if got is None:
            assert any(line in _ODD_LINES for line in lines), lines
            continue
        plain += 1
        assert list(got.items()) == list(expected.items()), lines
        assert all(got.get_all(name) == expected.get_all(name) for name in expected), lines
        assert got.get_content_type() == expected.get_content_type()
    assert plain > 500  # the plain reading is taken, not only ever declined
