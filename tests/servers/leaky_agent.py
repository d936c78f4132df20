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

With ``spelled``, each reply also spells out one of the key, the secret header and the held
secrets, in turn, in every spelling an exfiltrating agent uses (:func:`spelled_out`):
case-changed, reversed, rot13, URL, base64, base32, hex, inside larger base64 and base32
blobs, each whole and in pieces, each also with spaces, dashes or invisible characters between
its characters (one secret per reply keeps a reply under the 32 KiB a transcript keeps).
"""

from __future__ import annotations

import base64
import codecs
import json
import urllib.parse
from typing import Any

from tests.servers.base import Handler, LoopbackServer

CARD = "4111 1111 1111 1111"  # Luhn-valid
EMAIL = "jane.roe@corp-mail.com"  # not a reserved test domain: real-looking personal data
PHONE = "+44 20 7946 0958"


# What an agent puts between a secret's characters to slip it past a filter.
INTERLEAVES = (" ", "\u200b", "-", "\u200c\u200d", " . ")
BLOB_BEFORE = b"The value you asked for, encoded: "
# Sent whole, not in pieces nor spaced out again: a piece's 8-character windows hold 4 of the
# secret's characters (redaction hides runs of 8 of them), and a secret's own separators spaced
# out break what it reads as every other character (docs/report-format.md, "Redaction").
ALTERNATING = "every other character"
BLOB_AFTER = b" -- end of the value."


def spellings(value: str) -> list[tuple[str, str]]:
    """``(name, text)``: each spelling of ``value`` an agent leaks it in (standard library)."""
    raw = value.encode()
    out = [
        ("plain", value),
        ("lower", value.lower()),
        ("upper", value.upper()),
        ("reversed", value[::-1]),
        ("rot13", codecs.encode(value, "rot13")),
        ("url", urllib.parse.quote(value, safe="")),
        ("base64", base64.b64encode(raw).decode()),
        ("base64url", base64.urlsafe_b64encode(raw).decode()),
        ("base32", base64.b32encode(raw).decode()),
        ("hex", raw.hex()),
        ("HEX", raw.hex().upper()),
        # Every other character the secret's (readable at a glance), and each half of it.
        (ALTERNATING, "".join(c + "x" for c in value)[:-1]),
        ("even characters", value[::2]),
        ("odd characters", value[1::2]),
    ]
    for skip in range(3):
        blob = BLOB_BEFORE[: len(BLOB_BEFORE) - skip] + raw + BLOB_AFTER
        out.append((f"base64 blob {skip}", base64.b64encode(blob).decode()))
    for skip in range(5):
        blob = BLOB_BEFORE[: len(BLOB_BEFORE) - skip] + raw + BLOB_AFTER
        out.append((f"base32 blob {skip}", base64.b32encode(blob).decode()))
    return out


def spelled_out(value: str) -> str:
    """Every spelling of ``value``, whole and in two pieces (its middle third, and from a third
    to the end), each also interleaved with separators (a different one each time)."""
    lines: list[str] = []
    turn = 0
    for name, text in spellings(value):
        if name == ALTERNATING:  # whole: its 8-character windows hold 4 of the secret's
            lines.append(f"{name}: {text}")
            continue
        third = max(len(text) // 3, 1)
        for piece in (text, text[third : 2 * third + 4], text[third:]):
            lines.append(f"{name}: {piece}")
            lines.append(f"{name}, spaced: {INTERLEAVES[turn % len(INTERLEAVES)].join(piece)}")
            turn += 1
    return "\n".join(lines)


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
        if server.spelled:
            values = [v for v in (key, gateway, *server.held) if v]
            with server.lock:
                server.spelled_replies += 1
                turn = server.spelled_replies
            leak += "\n" + spelled_out(values[turn % len(values)])
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

    def __init__(
        self, held: tuple[str, ...] = (), refuses: tuple[str, ...] = (), *, spelled: bool = False
    ) -> None:
        super().__init__()
        self.held = held
        self.refuses = refuses
        self.refused = 0
        self.spelled = spelled
        self.spelled_replies = 0
        self.bodies: list[dict[str, Any]] = []

    @property
    def endpoint(self) -> str:
        return f"{self.url}/v1"
