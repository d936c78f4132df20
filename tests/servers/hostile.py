"""A hostile agent of every kind, saying whatever a test sets (issue 14).

:class:`HostileReply` is one reply: text (any code point, lone surrogates too, repeated to
any size), tool calls (any name, any number) and arguments nested to any depth. The same
reply is served as an OpenAI chat completion (``/v1/chat/completions``, for the ``openai``
kind and for the agent behind a ``guard``), as an agent API's answer (``/agent``, for the
``http`` kind), and returned in-process by :func:`python_agent` (``python`` kind), where the
arguments are Python objects nested deeper than any JSON decoder would go.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.servers.base import Handler, LoopbackServer


@dataclass(frozen=True)
class HostileReply:
    text: str = ""
    calls: int = 0
    name: str = "send_email"
    depth: int = 0
    argument: str = ""
    deep_body: int = 0  # nest an unused field of the body this deep (JSON kinds)

    def arguments(self) -> dict[str, Any]:
        value: Any = self.argument
        for _ in range(self.depth):
            value = {"a": value}
        return {"to": "ops@evil.test", "body": value}

    def arguments_json(self) -> str:
        # Built by hand: json.dumps recurses, and the point is a depth past any recursion.
        inner = json.dumps(self.argument)
        deep = '{"a":' * self.depth + inner + "}" * self.depth
        return '{"to": "ops@evil.test", "body": ' + deep + "}"

    def completion(self) -> bytes:
        call = {"type": "function", "function": {"name": self.name, "arguments": "ARGS"}}
        calls = [{**call, "id": f"call_{i}"} for i in range(self.calls)]
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if calls:
            message["tool_calls"] = calls
        body = json.dumps({"choices": [{"index": 0, "message": message}]})
        return self._deepen(body.replace('"ARGS"', json.dumps(self.arguments_json())))

    def agent_answer(self) -> bytes:
        calls = [{"name": self.name, "arguments": "ARGS", "result": "ok"}] * self.calls
        body = json.dumps({"output": self.text, "tool_calls": calls})
        return self._deepen(body.replace('"ARGS"', self.arguments_json()))

    def _deepen(self, body: str) -> bytes:
        if self.deep_body:
            nested = "[" * self.deep_body + "]" * self.deep_body
            body = body[:-1] + ', "x": ' + nested + "}"
        return body.encode()


class HostileHandler(Handler):
    def do_POST(self) -> None:
        server: HostileServer = self.owner
        server.count()
        self.read_json()
        reply = server.reply
        if self.path.endswith("/chat/completions"):
            self.send_raw(200, reply.completion())
        else:
            self.send_raw(200, reply.agent_answer())


class HostileServer(LoopbackServer):
    handler = HostileHandler

    def __init__(self) -> None:
        super().__init__()
        self.reply = HostileReply()


CURRENT: list[HostileReply] = [HostileReply()]


def python_agent(input: str, context: Any) -> dict[str, Any]:
    """The ``python`` kind's hostile agent: the current reply, arguments as Python objects."""
    reply = CURRENT[0]
    calls = [{"name": reply.name, "arguments": reply.arguments(), "result": "ok"}] * reply.calls
    return {"output": reply.text, "tool_calls": calls}
