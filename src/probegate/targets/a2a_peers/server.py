"""The peers' listening side: a threaded HTTP/1.1 server, bounded whoever connects.

A peer's answers are small and ready at once (the sandbox answers from fixtures), so each
request is read whole, answered whole and written in one write with ``TCP_NODELAY``, a stream's
events included: nothing a peer says waits on anything. What the MCP server bounds
(mcp_connections.py), this bounds too, in the same words:

- **A cap on open connections** (:data:`CONNECTIONS_MAX`): one past it is told so (HTTP 503,
  a JSON-RPC error) and closed, and counted as unauthenticated traffic ("refused").
- **Timeouts**: the request head, and the wait for the next one on a kept-alive connection,
  within :data:`HEAD_TIMEOUT`; the whole body within :data:`BODY_TIMEOUT` of its head, so a
  client dripping one byte a second holds one thread for seconds, not for ever.
- **Sizes**: a body past :data:`MAX_BODY_BYTES` is refused before it is read (HTTP 413), one
  nested deeper than :data:`MAX_BODY_DEPTH` before it is parsed (HTTP 400).
- **Every answer is JSON-RPC**, a request that is not HTTP included (HTTP 400, -32700), and
  nothing is logged: a handler's own failure is a 500 with a JSON-RPC error, and the server
  goes on.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from probegate.errors import UsageError
from probegate.models.bounds import nested_deeper

CONNECTIONS_MAX = 256
HEAD_TIMEOUT = 10.0
BODY_TIMEOUT = 10.0
MAX_BODY_BYTES = 1024 * 1024
MAX_BODY_DEPTH = 128
_CHUNK = 64 * 1024

# JSON-RPC error codes for what happens below a request: the spec's, and ours (the same
# numbers the MCP server uses, mcp_connections.py).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
PAYLOAD_TOO_LARGE = -32003
TIMED_OUT = -32004
UNAVAILABLE = -32005


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    body: bytes
    content_type: str = "application/json"
    close: bool = False


class Counter(Protocol):
    """Where traffic that carried no conversation's token is counted (the host)."""

    def unauthenticated(self, what: str) -> None: ...


def rpc_error_bytes(code: int, message: str, request_id: Any = None) -> bytes:
    payload = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(payload).encode()


def _raw_answer(status: int, reason: str, code: int, message: str) -> bytes:
    body = rpc_error_bytes(code, message)
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = HEAD_TIMEOUT  # every read of the head, and the wait for the next request
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """What ``http.server`` says to a request it cannot read: a JSON-RPC error instead."""
        self.server.counter.unauthenticated("invalid")
        self.close_connection = True
        with _quiet():
            self.wfile.write(_raw_answer(400, "Bad Request", PARSE_ERROR, "not an HTTP request"))

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        body, problem = self._body()
        if problem is not None:
            self.close_connection = True
            self._write(self.server.refusal(self.path, problem))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            answer = self.server.handle(HttpRequest(self.command, self.path, headers, body))
        except Exception:  # a peer's own failure must never stop the agent's next request
            answer = HttpAnswer(500, rpc_error_bytes(INTERNAL_ERROR, "internal error"))
        if answer.close:
            self.close_connection = True
        self._write(answer)

    def _body(self) -> tuple[bytes, str | None]:
        """The whole body, or why not: ``oversized``, ``slow``, ``deep``."""
        deadline = time.monotonic() + BODY_TIMEOUT
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._chunked(deadline)
        length_text = self.headers.get("Content-Length") or "0"
        if not length_text.isdigit():
            return b"", "deep"  # unreadable framing: refused like a body it cannot parse
        length = int(length_text)
        if length > MAX_BODY_BYTES:
            return b"", "oversized"
        chunks: list[bytes] = []
        left = length
        while left:
            chunk = self._read(min(left, _CHUNK), deadline)
            if chunk is None:
                return b"", "slow"
            chunks.append(chunk)
            left -= len(chunk)
        return self._parsed(b"".join(chunks))

    def _chunked(self, deadline: float) -> tuple[bytes, str | None]:
        chunks: list[bytes] = []
        size = 0
        while True:
            line = self._line(deadline)
            if line is None:
                return b"", "slow"
            try:
                length = int(line.split(b";")[0].strip() or b"0", 16)
            except ValueError:
                return b"", "deep"
            if length == 0:
                while self._line(deadline) not in (None, b"", b"\r\n", b"\n"):
                    pass
                return self._parsed(b"".join(chunks))
            size += length
            if size > MAX_BODY_BYTES:
                return b"", "oversized"
            left = length
            while left:
                chunk = self._read(min(left, _CHUNK), deadline)
                if chunk is None:
                    return b"", "slow"
                chunks.append(chunk)
                left -= len(chunk)
            if self._line(deadline) is None:
                return b"", "slow"

    def _read(self, size: int, deadline: float) -> bytes | None:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        self.connection.settimeout(left)
        try:
            chunk = self.rfile.read1(size)
        except OSError:
            return None
        finally:
            self.connection.settimeout(self.timeout)
        return chunk or None

    def _line(self, deadline: float) -> bytes | None:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        self.connection.settimeout(left)
        try:
            return self.rfile.readline(1024)
        except OSError:
            return None
        finally:
            self.connection.settimeout(self.timeout)

    @staticmethod
    def _parsed(body: bytes) -> tuple[bytes, str | None]:
        return (b"", "deep") if nested_deeper(body, MAX_BODY_DEPTH) else (body, None)

    def _write(self, answer: HttpAnswer) -> None:
        reason = self.responses.get(answer.status, ("",))[0]
        head = [
            f"HTTP/1.1 {answer.status} {reason}",
            f"Content-Type: {answer.content_type}",
            f"Content-Length: {len(answer.body)}",
        ]
        if self.close_connection:
            head.append("Connection: close")
        with _quiet():
            self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + answer.body)


class _quiet:
    """A client that hung up is no failure of ours."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> bool:
        return kind is not None and issubclass(kind, OSError)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    handle: Callable[[HttpRequest], HttpAnswer]
    refusal: Callable[[str, str], HttpAnswer]
    counter: Counter
    cap: int = CONNECTIONS_MAX
    _open = 0
    _lock: threading.Lock

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            full = self._open >= self.cap
            if not full:
                self._open += 1
        if full:
            self.counter.unauthenticated("refused")
            with _quiet():
                request.sendall(
                    _raw_answer(503, "Service Unavailable", UNAVAILABLE, "too many connections")
                )
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release()

    def _release(self) -> None:
        with self._lock:
            self._open -= 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # never a traceback on the scan's terminal


class Listener:
    """The peers' server on ``(host, port)``, serving on a thread of its own until closed."""

    def __init__(
        self,
        host: str,
        port: int,
        handle: Callable[[HttpRequest], HttpAnswer],
        refusal: Callable[[str, str], HttpAnswer],
        counter: Counter,
        *,
        what: str,
        cap: int = CONNECTIONS_MAX,
    ) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        server = type("_PeerServer", (_Server,), {"address_family": family})
        try:
            self._server: _Server = server((host, port), _Handler)
        except OSError as exc:
            raise UsageError(f"{what}: cannot listen there ({exc.strerror or exc})") from None
        self._server._lock = threading.Lock()
        self._server.handle = handle
        self._server.refusal = refusal
        self._server.counter = counter
        self._server.cap = cap
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="probegate-a2a-peers",
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
