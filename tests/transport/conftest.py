"""The TLS peer and the proxy environment that the blocking client's tests and the event
loop's share."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers.peers import EchoServer, self_signed


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its own CA) and its key, as PEM files."""
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[EchoServer]:
    server = EchoServer()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    server.httpd.socket = context.wrap_socket(server.httpd.socket, server_side=True)
    with server:
        yield server


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch
