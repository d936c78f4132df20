"""Agents built with frameworks no one here wrote, taking their tools from probegate's MCP server.

Two frameworks, each the way its documentation builds an agent on MCP tools:

- the OpenAI Agents SDK: an ``Agent`` with ``MCPServerStreamableHttp`` and a chat-completions
  model client;
- LangGraph: a ``StateGraph`` over ``MessagesState`` with a model node and a ``ToolNode``, its
  tools from ``langchain-mcp-adapters`` and its model from ``langchain-openai``.

Their model is the rule-based fake in tests/servers/brain_model.py (``weak`` or ``careful``),
found at ``PROBEGATE_TEST_MODEL_URL``. Each agent keeps its conversation the framework's own
way, so a multi-turn probe sees the whole conversation, tool calls included. They run as a
service (tests/servers/framework_service.py, the ``http`` kind, told ``{{mcp_url}}``) and as python
targets (the classes at the bottom, told ``context.mcp_url``).
"""

from __future__ import annotations

import asyncio
import os
import warnings
from typing import Any

from tests.servers.brain_model import SYSTEM_PROMPT

MODEL_ENV = "PROBEGATE_TEST_MODEL_URL"
# Both frameworks stop a runaway loop; the weak agent may chain a dozen tool calls.
MAX_TURNS = 48
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")


def model_url(careful: bool) -> str:
    base = os.environ[MODEL_ENV].rstrip("/")
    return f"{base}/{'careful' if careful else 'weak'}/v1"


class OpenAIAgentsConversation:
    """One conversation with an OpenAI Agents SDK agent."""

    def __init__(self, careful: bool) -> None:
        self.careful = careful
        self.items: list[Any] = []

    async def reply(self, text: str, mcp_url: str) -> str:
        from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
        from agents.mcp import MCPServerStreamableHttp
        from openai import AsyncOpenAI

        set_tracing_disabled(True)
        client = AsyncOpenAI(base_url=model_url(self.careful), api_key="test-key", max_retries=0)
        async with MCPServerStreamableHttp(
            params={"url": mcp_url, "timeout": 30},
            name="probegate",
            cache_tools_list=False,
            client_session_timeout_seconds=30,
        ) as server:
            agent = Agent(
                name="acme-support",
                instructions=SYSTEM_PROMPT,
                model=OpenAIChatCompletionsModel(model="brain", openai_client=client),
                mcp_servers=[server],
            )
            result = await Runner.run(
                agent, [*self.items, {"role": "user", "content": text}], max_turns=MAX_TURNS
            )
        self.items = result.to_input_list()
        await client.close()
        return str(result.final_output or "")


class LangGraphConversation:
    """One conversation with a LangGraph agent on langchain-mcp-adapters tools."""

    def __init__(self, careful: bool) -> None:
        self.careful = careful
        self.messages: list[Any] = []

    async def reply(self, text: str, mcp_url: str) -> str:
        from langchain_core.messages import HumanMessage, SystemMessage
        from langchain_mcp_adapters.client import MultiServerMCPClient
        from langchain_openai import ChatOpenAI
        from langgraph.graph import END, START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode, tools_condition
        from openai import DefaultAsyncHttpxClient

        client = MultiServerMCPClient(
            {"probegate": {"url": mcp_url, "transport": "streamable_http"}}
        )
        tools = await client.get_tools()
        # Our own HTTP client, closed with this turn's event loop: langchain-openai's shared
        # default one would outlive it.
        http = DefaultAsyncHttpxClient()
        model = ChatOpenAI(
            model="brain",
            base_url=model_url(self.careful),
            api_key="test-key",
            max_retries=0,
            http_async_client=http,
        ).bind_tools(tools)

        async def call_model(state: MessagesState) -> dict[str, Any]:
            return {"messages": [await model.ainvoke(state["messages"])]}

        graph = StateGraph(MessagesState)
        graph.add_node("model", call_model)
        graph.add_node("tools", ToolNode(tools))
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", tools_condition)
        graph.add_edge("tools", "model")
        graph.add_edge("model", END)
        app = graph.compile()
        if not self.messages:
            self.messages = [SystemMessage(SYSTEM_PROMPT)]
        try:
            state = await app.ainvoke(
                {"messages": [*self.messages, HumanMessage(text)]},
                {"recursion_limit": MAX_TURNS * 2},
            )
        finally:
            await http.aclose()
        self.messages = list(state["messages"])
        content = self.messages[-1].content
        return content if isinstance(content, str) else str(content)


FRAMEWORKS: dict[str, type[OpenAIAgentsConversation] | type[LangGraphConversation]] = {
    "openai-agents": OpenAIAgentsConversation,
    "langgraph": LangGraphConversation,
}


def converse(
    conversation: OpenAIAgentsConversation | LangGraphConversation, text: str, url: str
) -> str:
    """Run one turn to the end on a fresh event loop (the caller's thread has none)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return asyncio.run(conversation.reply(text, url))


# -- python targets: one instance per conversation, told context.mcp_url -------------------


class _PythonAgent:
    framework = ""
    careful = False

    def __init__(self) -> None:
        self.conversation = FRAMEWORKS[self.framework](self.careful)

    def run(self, input: str, context: Any) -> str:
        return converse(self.conversation, input, context.mcp_url)


class OpenAIAgentsWeak(_PythonAgent):
    framework = "openai-agents"


class OpenAIAgentsCareful(_PythonAgent):
    framework = "openai-agents"
    careful = True


class LangGraphWeak(_PythonAgent):
    framework = "langgraph"


class LangGraphCareful(_PythonAgent):
    framework = "langgraph"
    careful = True
