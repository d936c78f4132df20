"""A framework agent deployed as a service: ``POST /chat`` with the conversation's MCP endpoint.

This is how a team runs an agent in production, minus the production: the service keeps each
conversation by ``session_id`` and runs one turn per request, taking its tools from the MCP
endpoint the request names (probegate's, during a scan). It reports no tool calls: probegate
sees them on its own server. Errors are the service's own 500s, the way a real one fails.
"""

from __future__ import annotations

from typing import Any

from tests.servers.base import Handler, LoopbackServer
from tests.servers.framework_agents import (
    FRAMEWORKS,
    LangGraphConversation,
    OpenAIAgentsConversation,
    converse,
)
from tests.servers.mcp_agent import http_target


class _ServiceHandler(Handler):
    def do_POST(self) -> None:
        service: AgentService = self.owner
        service.count()
        body = self.read_json()
        if self.path != "/chat" or not isinstance(body, dict):
            self.send_json(404, {"error": "POST /chat {input, session_id, mcp_url}"})
            return
        session = str(body.get("session_id") or "")
        with service.lock:
            conversation = service.conversations.get(session)
            if conversation is None:
                conversation = FRAMEWORKS[service.framework](service.careful)
                service.conversations[session] = conversation
        try:
            output = converse(conversation, str(body.get("input") or ""), str(body["mcp_url"]))
        except Exception as exc:  # the agent failed: a 500, as a deployed service answers
            with service.lock:
                service.failures.append(f"{type(exc).__name__}: {exc}")
            self.send_json(500, {"error": f"{type(exc).__name__}"})
            return
        self.send_json(200, {"output": output})


class AgentService(LoopbackServer):
    """``framework`` (openai-agents or langgraph), weak or careful, behind ``POST /chat``."""

    handler = _ServiceHandler

    def __init__(self, framework: str, *, careful: bool) -> None:
        super().__init__()
        self.framework = framework
        self.careful = careful
        self.conversations: dict[str, OpenAIAgentsConversation | LangGraphConversation] = {}
        self.failures: list[str] = []

    def target(self, tools: list[dict[str, Any]], canaries: list[str]) -> dict[str, Any]:
        """The probegate.yml ``target:`` section for this service."""
        return http_target(f"{self.url}/chat", tools, canaries)
