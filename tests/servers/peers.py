"""Peers for the HTTP client's own tests: an echo server (and one that drops idle connections
fast), a self-signed certificate for 127.0.0.1, and a small forward proxy (CONNECT tunnels,
plain requests answered with their request line), as the blocking and the event-loop clients
both meet them (tests/transport)."""

from __future__ import annotations

import base64
import contextlib
import datetime
import gzip
import ipaddress
import json
import select
import socket
import socketserver
import threading
import time
from pathlib import Path
from typing import Self

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.servers.base import Handler, LoopbackServer

PROXY_USER, PROXY_PASSWORD = "scanner", "p@ss-SECRET-7781"


class _Echo(Handler):
    """Answers every request with what it saw; ``/gzip`` and ``/bomb`` compress unasked."""

    def setup(self) -> None:
        super().setup()
        with self.owner.lock:
            self.owner.connections += 1

    def handle(self) -> None:
        with contextlib.suppress(ConnectionError):  # a client that stopped reading a bomb
            super().handle()

    def do_POST(self) -> None:
        self.read_json()
        if self.path.startswith("/gzip"):
            body = gzip.compress(json.dumps({"ok": "compressed"}).encode())
            self.send_raw(200, body, headers={"Content-Encoding": "gzip"})
        elif self.path.startswith("/bomb"):  # 8 MiB of zeros in about 8 KiB
            bomb = gzip.compress(b"0" * (8 << 20))
            self.send_raw(200, bomb, headers={"Content-Encoding": "gzip"})
        else:
            seen = {"path": self.path, "host": self.headers.get("Host")}
            self.send_json(200, seen)

    do_GET = do_POST


class EchoServer(LoopbackServer):
    handler = _Echo

    def __init__(self) -> None:
        super().__init__()
        self.connections = 0  # opened by clients


class _ShortIdle(_Echo):
    timeout = 0.2  # the server drops a keep-alive connection idle for 0.2 s


class ShortIdleServer(EchoServer):
    handler = _ShortIdle


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its own CA) and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "probegate test peer")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "peer.pem", folder / "peer.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


class _ProxyHandler(socketserver.StreamRequestHandler):
    """A small forward proxy: CONNECT tunnels to the named host; a plain request is answered
    by the proxy itself with the request line and the credentials it was given."""

    server: ProxyServer

    def handle(self) -> None:
        head = self.rfile.readline(65537).decode("latin-1").rstrip("\r\n")
        headers: dict[str, str] = {}
        while line := self.rfile.readline(65537).decode("latin-1").rstrip("\r\n"):
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        self.server.seen.append((head, headers.get("proxy-authorization")))
        method, target, _ = head.split(" ", 2)
        if method != "CONNECT":
            length = int(headers.get("content-length") or 0)
            self.rfile.read(length)
            body = json.dumps({"request_line": head}).encode()
            self.wfile.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            return
        if self.server.refuse:
            self.wfile.write(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
            return
        host, _, port = target.rpartition(":")
        with socket.create_connection((host, int(port)), timeout=5) as upstream:
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            self.wfile.flush()
            _pipe(self.connection, upstream)


def _pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until either side closes (or 10 s pass: tests end on their own)."""
    end = time.monotonic() + 10
    while time.monotonic() < end:
        ready, _, _ = select.select([a, b], [], [], 0.2)
        for sock in ready:
            data = sock.recv(65536)
            if not data:
                return
            (b if sock is a else a).sendall(data)


class TcpPeer(socketserver.ThreadingTCPServer):
    """A raw TCP peer on 127.0.0.1 (a thread per connection), served inside ``with``."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, handler: type[socketserver.BaseRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.lock = threading.Lock()
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5)


class ProxyServer(TcpPeer):
    def __init__(self, *, refuse: bool = False) -> None:
        super().__init__(_ProxyHandler)
        self.seen: list[tuple[str, str | None]] = []
        self.refuse = refuse

    def url(self, credentials: bool = True) -> str:
        who = f"{PROXY_USER}:{PROXY_PASSWORD.replace('@', '%40')}@" if credentials else ""
        return f"http://{who}127.0.0.1:{self.port}"


BASIC = "Basic " + base64.b64encode(f"{PROXY_USER}:{PROXY_PASSWORD}".encode()).decode()
