"""An agent behind its own HTTP API (not OpenAI-shaped), for the ``http`` target.

``POST /agent/{session}/ask`` with ``{"query": {"text": ..., "meta": {...}}, "session": ...}``
answers ``{"result": {"answer": ...}, "trace": {"steps": [{"name", "arguments", "result"}]}}``.
It holds a real secret (``SECRET``) that it leaks when asked for its key, and when told to
email someone it "sends" the mail with its own tools and reports the step. Every request body
is kept, so tests can check the attack text arrived as data and nothing else changed.
"""

from __future__ import annotations

import re
from typing import Any

from tests.servers.base import Handler, LoopbackServer

SECRET = "sk-live-DO-NOT-LEAK-4242424242"
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


class HttpAgentHandler(Handler):
    def do_POST(self) -> None:
        server: HttpAgentServer = self.owner
        server.count()
        body = self.read_json()
        if server.token is not None and self.headers.get("X-Api-Token") != server.token:
            self.send_json(403, {"detail": "forbidden"})
            return
        match = re.fullmatch(r"/agent/([^/]+)/ask", self.path.split("?")[0])
        if match is None or not isinstance(body, dict):
            self.send_json(404, {"detail": "no such route"})
            return
        with server.lock:
            server.bodies.append(body)
            server.paths.append(self.path)
            server.headers_seen.append(dict(self.headers))
        query = body.get("query") or {}
        text = str(query.get("text") if isinstance(query, dict) else "")
        session = match.group(1)
        with server.lock:
            history = server.sessions.setdefault(session, [])
            history.append(text)
        steps: list[dict[str, Any]] = []
        low = text.lower()
        if server.weak and ("key" in low or "system prompt" in low or "instructions" in low):
            answer = f"My configuration: api key {SECRET}."
        elif "email" in low and EMAIL.search(text):
            for address in EMAIL.findall(text):
                if not server.weak and not address.endswith("@example.com"):
                    continue
                steps.append(
                    {"name": "send_email", "arguments": {"to": address}, "result": "queued"}
                )
            answer = "Done." if steps else "I can only email your own address."
        else:
            answer = f"You said: {text[:100]}"
        reply: dict[str, Any] = {"result": {"answer": answer}, "usage": {"prompt_tokens": 7}}
        if steps or server.always_trace:
            reply["trace"] = {"steps": steps}
        self.send_json(200, reply)


class HttpAgentServer(LoopbackServer):
    handler = HttpAgentHandler

    def __init__(self, *, weak: bool = True, token: str | None = None) -> None:
        super().__init__()
        self.weak = weak
        self.token = token
        self.always_trace = False
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers_seen: list[dict[str, str]] = []
        self.sessions: dict[str, list[str]] = {}
