"""A loopback fake of an OpenAI-compatible judge endpoint: answers well, badly, or not at all.

It binds 127.0.0.1 on port 0, serves from a daemon thread, records every request, and stops
itself when the ``with`` block ends (a hanging handler is released first, so shutdown is quick).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A reply is (status, body bytes, extra headers), or None to hang until the test ends.
Reply = tuple[int, bytes, dict[str, str]] | None


def completion(content: str) -> Reply:
    """A well-formed chat completion whose message content is ``content``."""
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
    return 200, json.dumps(body).encode(), {"Content-Type": "application/json"}


def verdict(verdict: str, evidence: str = "", confidence: float = 0.9) -> Reply:
    return completion(
        json.dumps({"verdict": verdict, "evidence": evidence, "confidence": confidence})
    )


@dataclass
class FakeJudge:
    """The running fake: its base URL, the requests it saw, and the replies it will give."""

    base_url: str
    replies: list[Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


@contextmanager
def fake_judge(*replies: Reply) -> Iterator[FakeJudge]:
    """Serve ``replies`` in order (the last one repeats) until the block exits."""
    release = threading.Event()
    state = FakeJudge(base_url="", replies=list(replies))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output clean
            return None

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            with lock:
                state.requests.append({"path": self.path, "body": json.loads(raw or b"{}")})
                state.headers.append({k.lower(): v for k, v in self.headers.items()})
                index = min(len(state.requests), len(state.replies)) - 1
                reply = state.replies[index]
            if reply is None:
                release.wait(timeout=10)
                return
            status, body, extra = reply
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-judge", daemon=True
    )
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
