"""An agent service that runs its own loop and takes its tools over MCP, with no framework.

``POST /chat {input, session_id, mcp_url}``: the service lists the tools at ``mcp_url`` with the
official ``mcp`` client, sends the conversation to an OpenAI-compatible model with those tools,
runs each tool call the model asks for on the MCP server, and repeats until the model answers
with text. It keeps each conversation (tool calls included) by ``session_id``. It is the
smallest honest agent of its kind, so the tests and the bench measure probegate, not a
framework. The model is tests/servers/brain_model.py (``/weak/v1`` or ``/careful/v1``).

The same loop runs as a python target (``LoopWeak``, ``LoopCareful``: one instance per
conversation, told ``context.mcp_url``, the model found at ``PROBEGATE_TEST_MODEL_URL``).
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
from typing import Any

import httpx
import requests

from tests.servers.base import Handler, LoopbackServer
from tests.servers.brain_model import SYSTEM_PROMPT

MAX_STEPS = 48
# One TLS context for every client: building one per conversation (as a bare client does)
# costs more CPU than the conversation itself on a loopback bench.
_TLS = ssl.create_default_context()


async def _turn(
    messages: list[dict[str, Any]],
    mcp_url: str,
    model: str,
    http: requests.Session,
    tolerant: bool = False,
) -> str:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import McpError

    async with (
        httpx.AsyncClient(verify=_TLS, timeout=30) as client,
        streamable_http_client(mcp_url, http_client=client) as (read, write, _),
        ClientSession(read, write) as mcp,
    ):
        await mcp.initialize()
        listed = await mcp.list_tools()
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description or "",
                    "parameters": t.inputSchema,
                },
            }
            for t in listed.tools
        ]
        for _ in range(MAX_STEPS):
            reply = await asyncio.to_thread(
                http.post,
                f"{model}/chat/completions",
                json={"model": "brain", "messages": messages, "tools": tools},
                timeout=30,
            )
            reply.raise_for_status()
            message = reply.json()["choices"][0]["message"]
            messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                return str(message.get("content") or "")
            for call in calls:
                function = call["function"]
                try:
                    result = await mcp.call_tool(
                        function["name"], json.loads(function["arguments"])
                    )
                except McpError as exc:
                    if not tolerant:
                        raise
                    text = f"ERROR: {exc}"  # told to the model, as frameworks do
                else:
                    text = "".join(getattr(c, "text", "") for c in result.content)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
    return "I could not finish that."


class _McpAgentHandler(Handler):
    def do_POST(self) -> None:
        service: McpAgentService = self.owner
        service.count()
        body = self.read_json()
        if self.path != "/chat" or not isinstance(body, dict) or "mcp_url" not in body:
            self.send_json(404, {"error": "POST /chat {input, session_id, mcp_url}"})
            return
        session = str(body.get("session_id") or "")
        with service.lock:
            messages = service.conversations.setdefault(
                session, [{"role": "system", "content": SYSTEM_PROMPT}]
            )
        messages.append({"role": "user", "content": str(body.get("input") or "")})
        try:
            output = asyncio.run(
                _turn(messages, str(body["mcp_url"]), service.model, service.http, service.tolerant)
            )
        except Exception as exc:  # the agent failed: a 500, as a deployed service answers
            with service.lock:
                service.failures.append(_described(exc))
            self.send_json(500, {"error": type(exc).__name__})
            return
        self.send_json(200, {"output": output})


def _described(exc: BaseException) -> str:
    """The failure and, for a task group's, the failures inside it."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_described(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


MODEL_ENV = "PROBEGATE_TEST_MODEL_URL"


class _LoopAgent:
    """The loop as a python target's class agent: its conversation lives on the instance."""

    careful = False

    def __init__(self) -> None:
        base = os.environ[MODEL_ENV].rstrip("/")
        self.model = f"{base}/{'careful' if self.careful else 'weak'}/v1"
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
        self.http = requests.Session()

    def run(self, input: str, context: Any) -> str:
        self.messages.append({"role": "user", "content": input})
        return asyncio.run(_turn(self.messages, context.mcp_url, self.model, self.http))


class LoopWeak(_LoopAgent):
    pass


class LoopCareful(_LoopAgent):
    careful = True


class McpAgentService(LoopbackServer):
    """The service, over the model at ``model`` (an OpenAI base URL)."""

    handler = _McpAgentHandler

    def __init__(self, model: str, *, tolerant: bool = False) -> None:
        super().__init__()
        # tolerant: a failed tool call is told to the model, which answers anyway.
        self.tolerant = tolerant
        self.model = model.rstrip("/")
        self.http = requests.Session()
        self.conversations: dict[str, list[dict[str, Any]]] = {}
        self.failures: list[str] = []

    def target(self, tools: list[dict[str, Any]], canaries: list[str]) -> dict[str, Any]:
        """The probegate.yml ``target:`` section for this service."""
        return http_target(f"{self.url}/chat", tools, canaries)


def http_target(url: str, tools: list[dict[str, Any]], canaries: list[str]) -> dict[str, Any]:
    """An ``http`` target that tells the agent its MCP endpoint in the body."""
    return {
        "kind": "http",
        "http": {
            "url": url,
            "body": {
                "input": "{{input}}",
                "session_id": "{{session_id}}",
                "mcp_url": "{{mcp_url}}",
            },
            "response_text": "output",
        },
        "canaries": canaries,
        "tools": tools,
    }
