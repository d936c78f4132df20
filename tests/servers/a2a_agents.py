"""Agents built on the official ``a2a-sdk`` (1.3), served on 127.0.0.1 for the tests.

Nothing here speaks A2A by hand: the agents are ``AgentExecutor`` subclasses behind the SDK's
own request handler, card route and JSON-RPC routes (1.0, with 0.3 on the same endpoint, or
0.3 alone through the SDK's 0.3 adapter), run by uvicorn on a thread that stops when the
``with`` block ends; the peers they call are reached with the SDK's own client.

:class:`BrainExecutor` is an agent that calls other agents. Each message's metadata tells it
where its tools are (probegate's MCP server, ``tools``) and where the agents it works with
are (``peers``: name -> base URL, probegate's A2A peers). It decides like probegate's bundled
demo agents (the rules of ``targets/demo``): the weak one acts on instructions wherever it
reads them, a peer's agent card and a peer's task artifacts included; the careful one
(demo-careful's policy) does the user's task, reads what peers say as data, and says what
bait it saw. It reads each peer's card with the SDK's card resolver (the card's name,
description and skills are part of what it knows about that agent), calls tools with the
``mcp`` client and peers with the ``a2a`` client, streamed or not.

The others are faults: an agent that leaves its task working for ever, one whose artifact is
larger than any reply should be, one that fails, and (a route beside the SDK's) a card that
is not one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import ssl
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, Self

import httpx
import uvicorn
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import (
    get_artifact_text,
    get_message_text,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    GetTaskRequest,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from probegate.models.canaries import Canaries
from probegate.models.tools import ToolSpec
from probegate.models.transcript import ToolCall, Turn
from probegate.targets.demo.agent import DemoSession
from probegate.targets.demo.tools import DEMO_TOOLS
from probegate.transport.limiter import RequestLimiter
from tests.servers.brain_model import SECRETS

PEER = re.compile(r"^\[message from agent ([^\]]*)\] ", re.S)
ERROR = re.compile(r"\s*error\b", re.I)
_TLS = ssl.create_default_context()
# What the agent holds (declared to probegate under target.canaries).
HELD = Canaries(system=SECRETS[0], credential=SECRETS[1], pii="")


def metadata_template() -> dict[str, Any]:
    """The ``target.a2a.metadata`` that tells a BrainExecutor where its tools and peers are."""
    return {
        "tools": "{{mcp_url}}",
        "peers": {"billing": "{{a2a_url.billing}}", "shipping": "{{a2a_url.shipping}}"},
    }


PEERS: list[dict[str, Any]] = [
    {
        "name": "billing",
        "description": "Billing agent: invoices, refunds and payment questions.",
        "skills": [{"name": "billing-questions", "description": "Answers billing questions."}],
    },
    {"name": "shipping", "description": "Shipping agent: parcel tracking and labels."},
]


# --------------------------------------------------------------------------- the server


class A2aAgentServer:
    """An SDK agent on 127.0.0.1: ``url`` is its base URL, its card below it."""

    def __init__(
        self,
        executor: AgentExecutor,
        *,
        version: str = "1.0",
        streaming: bool = True,
        card: Callable[[Request], Awaitable[Response]] | None = None,
        name: str = "Acme support agent",
        app: Callable[[str], Starlette] | None = None,
    ) -> None:
        self.executor = executor
        self.version = version
        self.streaming = streaming
        self.card_route = card
        self.name = name
        self.app = app  # another application, given its endpoint URL (examples/a2a/agent.py)
        self.methods: list[str] = []  # every JSON-RPC method the agent was sent
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def agent_card(self) -> AgentCard:
        return AgentCard(
            name=self.name,
            description="Answers Acme customers; works with the billing and shipping agents.",
            version="1.0.0",
            supported_interfaces=[
                AgentInterface(
                    url=f"{self.url}/", protocol_binding="JSONRPC", protocol_version=self.version
                )
            ],
            capabilities=AgentCapabilities(streaming=self.streaming),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
            skills=[
                AgentSkill(
                    id="support", name="Support", description="Customer support.", tags=["support"]
                )
            ],
        )

    def _app(self) -> Starlette:
        if self.app is not None:
            return self.app(f"{self.url}/")
        card = self.agent_card()
        handler = DefaultRequestHandler(
            agent_executor=self.executor, task_store=InMemoryTaskStore(), agent_card=card
        )
        routes: list[Route] = []
        if self.card_route is not None:
            routes.append(Route("/.well-known/agent-card.json", self.card_route, methods=["GET"]))
        else:
            routes += create_agent_card_routes(card)
        if self.version.startswith("0.3"):
            # Imported after the SDK's routes: importing the adapter first is a cycle in 1.3.
            from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter

            routes.append(
                Route("/", _v03_only(JSONRPC03Adapter(handler), self.methods), methods=["POST"])
            )
        else:
            inner = create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True)[0]
            routes.append(Route("/", _watched(inner.endpoint, self.methods), methods=["POST"]))
        return Starlette(routes=routes)

    def __enter__(self) -> Self:
        config = uvicorn.Config(
            self._app(),
            log_level="critical",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)  # the SDK's tasks ask for it as they end

            async def run() -> None:
                assert self._server is not None
                task = asyncio.ensure_future(self._server.serve(sockets=[self._sock]))
                while not self._server.started and not task.done():
                    await asyncio.sleep(0.01)
                ready.set()
                await task

            try:
                loop.run_until_complete(run())
            finally:
                ready.set()
                # The SDK's own tasks (stream watchers, event dispatchers) end with the loop,
                # quietly: cancelled and awaited, not destroyed pending.
                pending = asyncio.all_tasks(loop)
                for task in pending:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.close()

        self._thread = threading.Thread(target=serve, name="a2a-agent", daemon=True)
        self._thread.start()
        ready.wait(timeout=20)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._sock.close()

    def target(self, **a2a: Any) -> dict[str, Any]:
        """A probegate.yml ``target:`` section for this agent (its tools and peers through
        probegate, its secrets declared)."""
        return {
            "kind": "a2a",
            "endpoint": self.url,
            "a2a": {"metadata": metadata_template(), **a2a},
            "canaries": list(SECRETS),
            "tools": [_tool_config(t) for t in DEMO_TOOLS if t.name != "ask_agent"],
            "peers": PEERS,
        }


def _tool_config(tool: ToolSpec) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "capabilities": sorted(c.value for c in tool.capabilities),
        "parameters": tool.parameters,
    }


def _watched(endpoint: Callable[[Request], Awaitable[Response]], methods: list[str]) -> Any:
    async def watched(request: Request) -> Response:
        with contextlib.suppress(ValueError, AttributeError):
            methods.append(str((await request.json()).get("method")))
        return await endpoint(request)

    return watched


def _v03_only(adapter: Any, methods: list[str]) -> Any:
    """JSON-RPC as a server of A2A 0.3 alone answers it: the SDK's 0.3 adapter, and a
    method-not-found error for anything else (a 1.0 method included)."""

    async def endpoint(request: Request) -> Response:
        body = await request.json()
        method = str(body.get("method"))
        methods.append(method)
        if not adapter.supports_method(method):
            error = {"code": -32601, "message": "Method not found"}
            return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "error": error})
        return await adapter.handle_request(body.get("id"), method, body, request)

    return endpoint


# --------------------------------------------------------------------------- the brain


class _Links:
    """What one message's work reaches: the MCP session and each peer, on the agent's loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, streaming: bool) -> None:
        self.loop = loop
        self.streaming = streaming
        self.mcp: Any = None
        self.descriptions: dict[str, str] = {}
        self.peers: dict[str, str] = {}
        self.http: httpx.AsyncClient | None = None
        self.cards: dict[str, AgentCard] = {}
        # A python agent's tools: probegate's context.call_tool instead of MCP.
        self.local: Callable[[str, dict[str, Any]], str] | None = None
        self.latency = 0.0

    def run(self, coro: Awaitable[Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)  # type: ignore[arg-type]

    async def card(self, name: str) -> AgentCard:
        if name not in self.cards:
            assert self.http is not None
            self.cards[name] = await A2ACardResolver(self.http, self.peers[name]).get_agent_card()
        return self.cards[name]

    async def ask(self, name: str, text: str) -> tuple[str, bool]:
        """(what the peer said, whether its task failed), through the SDK's client."""
        card = await self.card(name)
        config = ClientConfig(streaming=self.streaming, httpx_client=self.http)
        client = ClientFactory(config).create(card)
        message = new_text_message(text, role=Role.ROLE_USER)
        task: Task | None = None
        said: list[str] = []
        async for event in client.send_message(SendMessageRequest(message=message)):
            kind = event.WhichOneof("payload")
            if kind == "task":
                task = event.task
            elif kind == "message":
                said.append(get_message_text(event.message))
            elif kind == "artifact_update":
                said.append(get_artifact_text(event.artifact_update.artifact))
            elif kind == "status_update" and event.status_update.status.HasField("message"):
                said.append(get_message_text(event.status_update.status.message))
                state = event.status_update.status.state
                if state == TaskState.TASK_STATE_FAILED:
                    return "\n".join(dict.fromkeys(said)), True
        if task is not None and not _settled(task.status.state):
            # A peer still working on it: wait for its answer, as an agent that needs it does.
            task = await self._wait(client, task.id)
        if task is not None:
            said += [get_artifact_text(a) for a in task.artifacts]
            if task.status.HasField("message"):
                said.append(get_message_text(task.status.message))
            if task.status.state == TaskState.TASK_STATE_FAILED:
                return "\n".join(dict.fromkeys(said)), True
        return "\n".join(dict.fromkeys(s for s in said if s)), False

    @staticmethod
    async def _wait(client: Any, task_id: str) -> Task:
        while True:
            await asyncio.sleep(0.05)
            task: Task = await client.get_task(GetTaskRequest(id=task_id))
            if _settled(task.status.state):
                return task

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        if self.local is not None:
            text = self.local(name, arguments)
            return text, text.startswith("ERROR:")
        result = await self.mcp.call_tool(name, arguments)
        text = "".join(getattr(c, "text", "") for c in result.content)
        return text, bool(result.isError)


def _settled(state: Any) -> bool:
    return state not in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)


class _Tools:
    """The demo agent's sandbox, made of the agent's real links: MCP tools and A2A peers."""

    def __init__(self) -> None:
        self.tools = {t.name: t for t in DEMO_TOOLS}
        self.canaries = HELD
        self.links: _Links | None = None
        self._memories: list[str] | None = None

    @property
    def memory(self) -> list[str]:
        return self._memories if self._memories is not None else ["(not read yet)"]

    def tool_description(self, tool: ToolSpec) -> str:
        links = self.links
        assert links is not None
        if tool.name != "ask_agent":
            return links.descriptions.get(tool.name, tool.description)
        # What the agent knows of the agents it can ask: their cards.
        parts = [tool.description]
        for name in links.peers:
            card = links.run(links.card(name))
            parts.append(f"Agent card: {card.name}. {card.description}")
            parts += [f"Skill {s.name}: {s.description}" for s in card.skills]
        return " ".join(parts)

    def call(self, name: str, arguments: dict[str, Any]) -> ToolCall:
        links = self.links
        assert links is not None
        if links.latency:
            time.sleep(links.latency)  # the model's decision to make this call
        if name == "ask_agent":
            if not links.peers:
                return ToolCall(id="c", name=name, arguments=arguments, error="no agents")
            agent = str(arguments.get("agent") or "")
            peer = agent if agent in links.peers else next(iter(links.peers))
            text, failed = links.run(links.ask(peer, str(arguments.get("message") or "")))
        else:
            text, failed = links.run(links.call_tool(name, arguments))
        if name == "recall":
            with contextlib.suppress(ValueError, AttributeError):
                self._memories = [str(m) for m in json.loads(text).get("memories", [])]
        if failed or ERROR.match(text):
            return ToolCall(id="c", name=name, arguments=arguments, error=text)
        return ToolCall(id="c", name=name, arguments=arguments, result=text)


class BrainExecutor(AgentExecutor):
    """The weak or careful agent that calls other agents (module docstring)."""

    def __init__(
        self, *, careful: bool, streaming_peers: bool = True, latency: float = 0.0
    ) -> None:
        self.careful = careful
        self.streaming_peers = streaming_peers
        # Seconds a model would take per decision (each tool call, and the answer): the bench
        # gives the agent the latency its direct-loop twin has from the model.
        self.latency = latency
        self.conversations: dict[str, tuple[DemoSession, _Tools]] = {}
        self.failures: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = context.get_user_input()
        peer = PEER.match(text)
        turn = (
            Turn(role="agent", content=text[peer.end() :], name=peer.group(1))
            if peer
            else Turn(role="user", content=text)
        )
        metadata = MessageToDict(context.message.metadata) if context.message.metadata else {}
        try:
            reply = await self._reply(task.context_id, turn, metadata)
        except Exception as exc:
            self.failures.append(f"{type(exc).__name__}: {exc}")
            raise
        await updater.add_artifact([new_text_part(reply)], name="reply")
        await updater.complete()

    async def _reply(self, context_id: str, turn: Turn, metadata: dict[str, Any]) -> str:
        if context_id not in self.conversations:
            self.conversations[context_id] = _conversation(self.careful)
        session, tools = self.conversations[context_id]
        links = _Links(asyncio.get_running_loop(), self.streaming_peers)
        links.peers = {str(k): str(v) for k, v in dict(metadata.get("peers") or {}).items()}
        links.latency = self.latency
        if self.latency:
            await asyncio.sleep(self.latency)  # the model's answer
        return await _run_turn(session, tools, links, turn, str(metadata.get("tools") or ""))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


def _conversation(careful: bool) -> tuple[DemoSession, _Tools]:
    tools = _Tools()
    sandbox: Any = tools  # the demo agent reads it as its sandbox
    session = DemoSession(
        hardened=careful, careful=careful, sandbox=sandbox, limiter=RequestLimiter()
    )
    return session, tools


async def _run_turn(
    session: DemoSession, tools: _Tools, links: _Links, turn: Turn, mcp_url: str
) -> str:
    """One message of the conversation, with the links it needs open for its length."""
    async with AsyncExitStack() as stack:
        links.http = await stack.enter_async_context(
            httpx.AsyncClient(verify=_TLS, timeout=30, headers={"A2A-Version": "1.0"})
        )
        if mcp_url:
            from mcp import ClientSession
            from mcp.client.streamable_http import streamable_http_client

            read, write, _ = await stack.enter_async_context(
                streamable_http_client(mcp_url, http_client=links.http)
            )
            links.mcp = await stack.enter_async_context(ClientSession(read, write))
            await links.mcp.initialize()
            listed = await links.mcp.list_tools()
            links.descriptions = {t.name: t.description or "" for t in listed.tools}
        tools.links = links
        try:
            return (await asyncio.to_thread(session.send, turn)).content
        finally:
            tools.links = None


class PythonBrain:
    """The same agent as a python target: its tools are ``context.call_tool``, its peers
    ``context.a2a_urls``; one instance per conversation."""

    careful = False

    def __init__(self) -> None:
        self.session, self.tools = _conversation(self.careful)

    def run(self, input: str, context: Any) -> str:
        peer = PEER.match(input)
        turn = (
            Turn(role="agent", content=input[peer.end() :], name=peer.group(1))
            if peer
            else Turn(role="user", content=input)
        )

        async def turn_of() -> str:
            links = _Links(asyncio.get_running_loop(), streaming=True)
            links.peers = dict(context.a2a_urls)
            links.local = lambda name, args: context.call_tool(name, args)
            links.descriptions = {t["name"]: t["description"] for t in context.tools}
            return await _run_turn(self.session, self.tools, links, turn, "")

        return asyncio.run(turn_of())


class PythonBrainCareful(PythonBrain):
    careful = True


# --------------------------------------------------------------------------- faults


class StuckExecutor(AgentExecutor):
    """Takes the task, says it is working on it, and never finishes it."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        await TaskUpdater(event_queue, task.id, task.context_id).start_work()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class AskingExecutor(AgentExecutor):
    """Asks which order (its task waits for input), then answers within the same task."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []  # (task id, context id, what it was told)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        self.seen.append((task.id, task.context_id, context.get_user_input()))
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if len([s for s in self.seen if s[0] == task.id]) == 1:
            question = new_text_message("Which order?", role=Role.ROLE_AGENT)
            await updater.requires_input(question)
            return
        await updater.add_artifact([new_text_part(f"Noted: {context.get_user_input()}")])
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class HugeArtifactExecutor(AgentExecutor):
    """Completes every task with an artifact of ``size`` characters."""

    def __init__(self, size: int) -> None:
        self.size = size

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.add_artifact([new_text_part("A" * self.size)], name="dump")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class FailingExecutor(AgentExecutor):
    """Fails: reports its task failed, or (``raises``) raises, which the SDK answers with a
    JSON-RPC internal error."""

    def __init__(self, *, raises: bool = False) -> None:
        self.raises = raises

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if self.raises:
            raise RuntimeError("the agent's database is down")
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.failed(new_text_message("the agent's database is down", role=Role.ROLE_AGENT))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


def card_answer(body: bytes, status: int = 200) -> Callable[[Request], Awaitable[Response]]:
    """A card route that answers ``body`` (a card that is not one)."""

    async def route(request: Request) -> Response:
        return Response(body, status_code=status, media_type="application/json")

    return route
