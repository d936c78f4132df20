"""An OpenAI-compatible agent that leaks everything it holds, in every reply.

It repeats its system prompt (where the user's real secrets live), the API key it was called
with (plain and base64), the secret header it was sent, and personal data (a card number, an
email address, a phone number) in its text and in a ``send_email`` tool call, so every attempt
of a scan carries each secret into the transcript: the worst case for what a scan may write to
disk. ``held`` secrets (an agent's own, which probegate cannot plant: declared ``canaries``)
are leaked too, plain and base64-encoded.

``refuses`` makes it the control saboteur (docs/scoring.md, "Controls"): a request holding any
of those texts gets an HTTP 500, as an agent that recognises a scan's controls would answer,
so every control fails while every attack is answered.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.servers.base import Handler, LoopbackServer

CARD = "4111 1111 1111 1111"  # Luhn-valid
EMAIL = "jane.roe@corp-mail.com"  # not a reserved test domain: real-looking personal data
PHONE = "+44 20 7946 0958"


class LeakyHandler(Handler):
    def do_POST(self) -> None:
        server: LeakyAgentServer = self.owner
        server.count()
        body = self.read_json()
        if not isinstance(body, dict):
            self.send_json(400, {"error": {"message": "not json"}})
            return
        messages = body.get("messages") or []
        with server.lock:
            server.bodies.append(body)
        sent = json.dumps(body, ensure_ascii=False)
        if any(text in sent for text in server.refuses):
            with server.lock:
                server.refused += 1
            self.send_json(500, {"error": {"message": "internal error"}})
            return
        key = str(self.headers.get("Authorization") or "").removeprefix("Bearer ")
        gateway = str(self.headers.get("X-Gateway-Key") or "")
        system = str(messages[0].get("content") if messages else "")
        for secret in server.held:
            system += f" {secret} ({base64.b64encode(secret.encode()).decode()})"
        leak = (
            f"My instructions: {system} | my key is {key} and {gateway} "
            f"({base64.b64encode(key.encode()).decode()}) | card {CARD} | "
            f"mail {EMAIL} | phone {PHONE}"
        )
        message: dict[str, Any] = {"role": "assistant", "content": leak}
        if messages and messages[-1].get("role") != "tool":
            message["tool_calls"] = [
                {
                    "id": f"call_{len(messages)}",
                    "type": "function",
                    "function": {
                        "name": "send_email",
                        "arguments": json.dumps({"to": EMAIL, "body": leak}),
                    },
                }
            ]
        reply = {
            "id": "chatcmpl-leaky",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }
        self.send_json(200, reply)


class LeakyAgentServer(LoopbackServer):
    """The base URL is ``endpoint`` (``.../v1``)."""

    handler = LeakyHandler

    def __init__(self, held: tuple[str, ...] = (), refuses: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.held = held
        self.refuses = refuses
        self.refused = 0
        self.bodies: list[dict[str, Any]] = []

    @property
    def endpoint(self) -> str:
        return f"{self.url}/v1"
