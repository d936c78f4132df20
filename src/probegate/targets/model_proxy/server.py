"""The proxy's listening side: a small threaded HTTP/1.1 server on the configured address.

Each connection gets a thread (the agent's SDK keeps a few open and reuses them); a request's
body is read whole (Content-Length or chunked, at most :data:`MAX_REQUEST_BYTES`), handed to
the proxy, and its answer written back in one write with ``TCP_NODELAY``, so no reply waits out
a delayed ACK. Nothing a client sends can take the server down: a handler that fails answers
500 and the server goes on.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from probegate.errors import UsageError

MAX_REQUEST_BYTES = 16 * 1024 * 1024
IDLE_SECONDS = 120  # an idle keep-alive connection is closed after this long

# (method, path with query, lowercased headers, body) -> (status, headers, body)
Handle = Callable[[str, str, dict[str, str], bytes], tuple[int, dict[str, str], bytes]]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE_SECONDS
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        body = self._body()
        if body is None:
            self._write(413, {"content-type": "application/json"}, b'{"error":"too large"}')
            self.close_connection = True
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            status, out, payload = self.server.handle(self.command, self.path, headers, body)
        except Exception:  # the proxy's own failure must never stop the agent's next call
            status, out = 500, {"content-type": "application/json"}
            payload = b'{"error":{"message":"probegate model-API proxy: internal error"}}'
        self._write(status, out, payload)

    def _body(self) -> bytes | None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            size = 0
            while True:
                line = self.rfile.readline(1024).split(b";")[0].strip()
                length = int(line or b"0", 16)
                if length == 0:
                    while self.rfile.readline(1024).strip():
                        pass  # trailers
                    return b"".join(chunks)
                size += length
                if size > MAX_REQUEST_BYTES:
                    return None
                chunks.append(self.rfile.read(length))
                self.rfile.readline(8)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_REQUEST_BYTES:
            return None
        return self.rfile.read(length) if length else b""

    def _write(self, status: int, headers: dict[str, str], body: bytes) -> None:
        reason = self.responses.get(status, ("",))[0]
        head = [f"HTTP/1.1 {status} {reason}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        head.append(f"Content-Length: {len(body)}")
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    handle: Handle


class Listener:
    """The server on ``(host, port)``, serving on a thread of its own until :meth:`close`."""

    def __init__(self, host: str, port: int, handle: Handle, what: str) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        server = type("_FamilyServer", (_Server,), {"address_family": family})
        try:
            self._server: _Server = server((host, port), _Handler)
        except OSError as exc:
            raise UsageError(f"{what}: cannot listen there ({exc.strerror or exc})") from None
        self._server.handle = handle
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="probegate-model-proxy",
            daemon=True,
        )
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
