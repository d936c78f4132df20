"""The client's own connections (transport/connections.py) against real loopback peers.

What requests and urllib3 did for the client and the pool on ``http.client`` must still do:
verified TLS against the CA bundle the environment names, proxies from the environment (plain
HTTP asked for the absolute URL, HTTPS through a CONNECT tunnel, credentials sent and never
shown, ``NO_PROXY`` honoured), idle connections the peer closed never reused, at most
``maxsize`` idle connections kept, compressed bodies decoded under the body cap, and a header
HTTP cannot carry refused in words.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from probegate.transport.connections import ConnectionPool
from probegate.transport.http import HttpClient
from probegate.transport.limiter import RequestLimiter
from probegate.transport.usage import TransportError
from tests.servers.peers import BASIC, PROXY_PASSWORD, EchoServer, ProxyServer, ShortIdleServer

# --- TLS ---------------------------------------------------------------------------------


def https(server: EchoServer) -> str:
    return server.url.replace("http://", "https://")


def post(client: HttpClient, url: str) -> Any:
    return client.request_json("POST", url, body={"q": 1}, limiter=RequestLimiter())


def test_https_is_verified_against_the_ca_bundle_the_environment_names(
    tls_server: EchoServer, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(certificate[0]))
    client = HttpClient(timeout=5, retries=0)
    assert post(client, https(tls_server) + "/v1/x") == {
        "path": "/v1/x",
        "host": tls_server.url.removeprefix("http://"),
    }
    client.close()


def test_a_certificate_nobody_vouches_for_is_a_fatal_tls_error(
    tls_server: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default bundle (requests' own) does not know the test CA: verification fails, the
    scan stops at once (a wrong certificate will be wrong for every attempt), no retry."""
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    client = HttpClient(timeout=5, retries=2, backoff_base=0.01)
    with pytest.raises(TransportError) as info:
        post(client, https(tls_server) + "/v1/x")
    client.close()
    assert info.value.reason.startswith("TLS error:")
    assert "CERTIFICATE_VERIFY_FAILED" in info.value.reason
    assert info.value.fatal
    assert client.stats.tries == 1


# --- proxies -------------------------------------------------------------------------------


def test_plain_http_asks_the_environment_proxy_for_the_absolute_url(
    no_proxies: pytest.MonkeyPatch,
) -> None:
    with ProxyServer() as proxy:
        no_proxies.setenv("HTTP_PROXY", proxy.url())
        client = HttpClient(timeout=5, retries=0)
        reply = post(client, "http://agent.internal:8080/v1/chat?api=2")
        client.close()
    assert reply == {"request_line": "POST http://agent.internal:8080/v1/chat?api=2 HTTP/1.1"}
    assert proxy.seen == [("POST http://agent.internal:8080/v1/chat?api=2 HTTP/1.1", BASIC)]


def test_no_proxy_sends_the_request_straight_to_the_agent(no_proxies: pytest.MonkeyPatch) -> None:
    with ProxyServer() as proxy, EchoServer() as agent:
        no_proxies.setenv("HTTP_PROXY", proxy.url())
        no_proxies.setenv("NO_PROXY", "127.0.0.1,localhost")
        client = HttpClient(timeout=5, retries=0)
        reply = post(client, agent.url + "/v1/x")
        client.close()
    assert reply["path"] == "/v1/x"
    assert proxy.seen == []


def test_https_goes_through_a_connect_tunnel_and_is_verified_inside_it(
    no_proxies: pytest.MonkeyPatch, tls_server: EchoServer, certificate: tuple[Path, Path]
) -> None:
    no_proxies.setenv("REQUESTS_CA_BUNDLE", str(certificate[0]))
    with ProxyServer() as proxy:
        no_proxies.setenv("HTTPS_PROXY", proxy.url())
        client = HttpClient(timeout=5, retries=0)
        replies = [post(client, https(tls_server) + "/v1/x") for _ in range(3)]
        client.close()
    port = tls_server.httpd.server_address[1]
    assert [r["path"] for r in replies] == ["/v1/x"] * 3
    # One tunnel, kept alive for all three requests (http.client says HTTP/1.0 before 3.12).
    assert [(line.rpartition(" ")[0], auth) for line, auth in proxy.seen] == [
        (f"CONNECT 127.0.0.1:{port}", BASIC)
    ]


def test_a_proxy_that_refuses_the_tunnel_stops_the_scan_and_never_shows_the_password(
    no_proxies: pytest.MonkeyPatch,
) -> None:
    with ProxyServer(refuse=True) as proxy:
        no_proxies.setenv("HTTPS_PROXY", proxy.url())
        client = HttpClient(timeout=5, retries=2, backoff_base=0.01, secrets=[PROXY_PASSWORD])
        with pytest.raises(TransportError) as info:
            post(client, "https://agent.internal/v1/x")
        client.close()
    assert info.value.reason.startswith("the proxy refused the tunnel:")
    assert "407" in info.value.reason
    assert info.value.fatal
    assert len(proxy.seen) == 1  # not retried: the proxy will refuse every time
    assert PROXY_PASSWORD not in info.value.reason


# --- connections and bodies ----------------------------------------------------------------


def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    """A keep-alive connection the agent closed while idle is noticed before it is used:
    the next request opens a new one, with no failure and no retry."""
    client = HttpClient(timeout=5, retries=0)
    with ShortIdleServer() as server:
        first = post(client, server.url + "/a")
        time.sleep(0.6)  # the server has closed the idle connection by now
        second = post(client, server.url + "/b")
    client.close()
    assert (first["path"], second["path"]) == ("/a", "/b")
    assert client.stats.retries == 0
    assert server.connections == 2


def test_the_pool_keeps_at_most_maxsize_idle_connections() -> None:
    pool = ConnectionPool(maxsize=2, connect_timeout=5, read_timeout=5, user_agent="t")
    with EchoServer() as server:
        url = server.url + "/x"
        first = [pool.send("POST", url, body=b"{}", headers={}) for _ in range(4)]
        for reply in first:
            assert reply.status == 200 and json.loads(b"".join(reply.chunks()))["path"] == "/x"
            reply.close()
        opened = server.connections
        second = [pool.send("POST", url, body=b"{}", headers={}) for _ in range(4)]
        for reply in second:
            b"".join(reply.chunks())
            reply.close()
        pool.close()
    assert opened == 4
    assert server.connections == 6  # two reused, two opened anew


def test_a_compressed_body_is_decoded_and_a_compression_bomb_is_cut_at_the_cap() -> None:
    client = HttpClient(timeout=5, retries=0, max_body_bytes=1 << 20)
    with EchoServer() as server:
        assert post(client, server.url + "/gzip") == {"ok": "compressed"}
        with pytest.raises(TransportError) as info:
            post(client, server.url + "/bomb")
    client.close()
    assert "response too large (over 1024 KiB)" in info.value.reason


def test_a_header_http_cannot_carry_is_refused_in_words_without_its_value() -> None:
    client = HttpClient(timeout=5, retries=2, backoff_base=0.01)
    with EchoServer() as server, pytest.raises(TransportError) as info:
        client.request_json(
            "POST",
            server.url + "/x",
            body={},
            headers={"Authorization": "Bearer sk-live-1234567890\r\nX-Injected: 1"},
            limiter=RequestLimiter(),
        )
    client.close()
    assert info.value.reason == "a request header has a value HTTP cannot carry (a line break?)"
    assert info.value.fatal
    assert server.requests == 0


def test_a_url_that_is_not_http_is_an_invalid_url() -> None:
    client = HttpClient(timeout=5, retries=2, backoff_base=0.01)
    with pytest.raises(TransportError) as info:
        post(client, "ftp://agent.internal/v1/x")
    client.close()
    assert info.value.reason.startswith("invalid URL:")
    assert info.value.fatal


@pytest.mark.parametrize(
    ("url", "proxy"),
    [
        ("ftp://scanner:pw-NOT-REGISTERED-99@agent.internal/v1/x", None),
        ("http://agent.internal:99999/v1/x", None),
        ("http://agent.internal/v1/x", "http://127.0.0.1:notaport"),
        ("http://\u200d.test/v1/x", None),  # a label IDNA cannot spell
    ],
)
def test_a_url_or_proxy_that_cannot_be_sent_to_is_an_invalid_url_that_shows_no_password(
    no_proxies: pytest.MonkeyPatch, url: str, proxy: str | None
) -> None:
    if proxy is not None:
        no_proxies.setenv("HTTP_PROXY", proxy)
    client = HttpClient(timeout=5, retries=2, backoff_base=0.01)
    with pytest.raises(TransportError) as info:
        post(client, url)
    client.close()
    assert info.value.reason.startswith("invalid URL:"), info.value.reason
    assert info.value.fatal and client.stats.retries == 0
    assert "pw-NOT-REGISTERED" not in info.value.reason


class _Writes:
    """A socket stand-in that records each write and passes it on."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.writes: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self.sock.sendall(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


@pytest.mark.parametrize(("method", "body"), [("POST", b'{"q": 1}'), ("GET", None)])
def test_a_request_goes_out_in_one_write(method: str, body: bytes | None) -> None:
    """Head and body in one send: each write hands the interpreter lock to another worker and
    back, which at --concurrency 64 cost more CPU than the request itself."""
    pool = ConnectionPool(maxsize=1, connect_timeout=5, read_timeout=5, user_agent="t")
    with EchoServer() as server:
        conn = pool._open(pool.target(server.url + "/x", None).route)
        conn.connect()
        assert conn.sock is not None
        writes = _Writes(conn.sock)
        conn.sock = writes
        conn.send_request(method, "/x", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200 and json.loads(response.read())["path"] == "/x"
        conn.close()
    assert len(writes.writes) == 1
    head, _, sent = writes.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(f"{method} /x HTTP/1.1".encode()) and sent == (body or b"")
