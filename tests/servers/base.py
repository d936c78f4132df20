"""A tiny threaded HTTP server base: one write per reply, no Nagle, bounded lifetimes.

Replies go out as one ``sendall`` of head and body together, with ``TCP_NODELAY``: a reply
split in two writes meets the client's delayed ACK and stalls ~40 ms, which would make every
timing in the tests and the bench measure the server instead of probegate.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Idle keep-alive connections end on their own, so server threads never outlive a test.
    timeout = 10

    server: LoopbackHTTPServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return None

    @property
    def owner(self) -> Any:
        return self.server.owner

    def read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"null")
        except ValueError:
            return None

    def send_raw(
        self,
        status: int,
        body: bytes,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        length: int | None = None,
    ) -> None:
        reason = self.responses.get(status, ("",))[0]
        head = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {content_type}"]
        head.append(f"Content-Length: {len(body) if length is None else length}")
        for key, value in (headers or {}).items():
            head.append(f"{key}: {value}")
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)

    def send_json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        self.send_raw(status, json.dumps(data).encode(), headers=headers)


class LoopbackHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    # socketserver's default listen backlog is 5: a scan that opens its 16 connections at once
    # had some of their SYNs dropped (TcpExtListenOverflows), each a 1 s wait for the kernel's
    # retransmission. A model API, an agent or a guard in service listens with a backlog in
    # the hundreds or thousands (listen()'s own default is 128).
    request_queue_size = 128
    owner: Any = None


class LoopbackServer:
    """Start with ``with``; ``url`` is ``http://127.0.0.1:PORT``."""

    handler: type[Handler] = Handler

    def __init__(self) -> None:
        self.httpd = LoopbackHTTPServer(("127.0.0.1", 0), self.handler)
        self.httpd.owner = self
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.requests = 0
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def count(self) -> int:
        with self.lock:
            self.requests += 1
            return self.requests

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)
