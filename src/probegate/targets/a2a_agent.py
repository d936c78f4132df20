"""The ``a2a`` target: an agent that serves the Agent2Agent protocol.

probegate reads the agent's card (``/.well-known/agent-card.json`` below ``target.endpoint``,
else the older ``agent.json``) once, and speaks the version it names (1.0 preferred, 0.3
otherwise; ``target.a2a.version`` pins one). Each conversation is one A2A context: the first
message starts it, the agent's ``contextId`` carries every later one, and a task the agent
left waiting for input (``input-required``) is continued by its ``taskId``. A message is sent
whole (``SendMessage``) or streamed (``SendStreamingMessage``), as the card says it can or as
``target.a2a.stream`` asks; a task that is not settled when the answer ends is asked for again
(``GetTask``) until it is, within ``--timeout`` for the message. The reply is what the agent
said: a direct message, or the task's status message and artifacts (text parts as text, data
parts as JSON, files as their names and addresses).

A2A reports no tool calls. An agent that takes its tools from probegate's MCP server is told
where in each message's metadata (``target.a2a.metadata`` with ``{{mcp_url}}``), and one that
calls other agents is told where probegate's peers are (``{{a2a_url}}``, targets/a2a_peers/):
the sandbox then records every call, as for the ``http`` kind. Otherwise probegate sees only
what the agent says, and tool-call oracles say "cannot tell" (unjudged), never "resisted".

Every way the exchange can fail is a :class:`~probegate.transport.usage.TransportError`, so
the attempt is unjudged with the reason: the agent unreachable, a card that names no usable
endpoint, a JSON-RPC error, a reply that is no task or message, a reply over the body cap, a
task that failed, was canceled, asks for authentication, or never settles within the timeout.
"""

from __future__ import annotations

import itertools
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from probegate.errors import UsageError
from probegate.models.causes import Cause
from probegate.models.report import TargetInfo
from probegate.models.sections import KindSection
from probegate.models.tools import ToolSpec
from probegate.models.transcript import ToolCall, Turn
from probegate.targets.a2a_peers import (
    A2A_URL,
    PeerConfig,
    PeerEndpoint,
    PeerHost,
    PeerRecord,
    named_in,
    peers_for,
)
from probegate.targets.base import (
    AgentConfig,
    Notice,
    TargetSettings,
    TargetSpec,
    TargetTraits,
    ToolDelivery,
    env_value,
    header_secret_env,
    present,
)
from probegate.targets.configured import http_client, target_info, tool_specs
from probegate.targets.mcp_server import McpEndpoint, McpHost, require_sdk
from probegate.targets.sandbox import Sandbox
from probegate.targets.wire import peer_message, reply_turn
from probegate.transport import a2a
from probegate.transport.a2a import Card, CardError, Reply, State, Wire
from probegate.transport.http import HttpClient
from probegate.transport.http_parts import public_url
from probegate.transport.limiter import RequestLimiter
from probegate.transport.sse import SseEvent
from probegate.transport.usage import UNREADABLE, MalformedReply, TransportError, Usage

MCP_URL = re.compile(r"\{\{\s*mcp_url\s*\}\}")
SESSION_ID = re.compile(r"\{\{\s*session_id\s*\}\}")
# Waits between asking again for a task that is not settled: short first (most settle in
# milliseconds), then at most a second, within the message's --timeout.
POLL_FIRST = 0.05
POLL_MAX = 1.0


class A2aApi(BaseModel):
    """The ``target.a2a`` section: how to talk to the agent beyond its card."""

    model_config = ConfigDict(extra="forbid")

    # Where the card is, when not at the endpoint's /.well-known/agent-card.json.
    card_url: str | None = None
    version: Literal["auto", "1.0", "0.3"] = "auto"
    # Stream each message (SendStreamingMessage); by default as the card says it can.
    stream: bool | None = None
    # Each message's metadata, with {{session_id}}, {{mcp_url}}, {{a2a_url}}, {{a2a_url.NAME}}.
    metadata: dict[str, Any] = Field(default_factory=dict)
    headers: dict[str, str] = Field(default_factory=dict)
    headers_env: dict[str, str] = Field(default_factory=dict)


class A2aConfig(AgentConfig):
    """``kind: a2a``: the agent's base URL (``endpoint``), where its card is."""

    kind: Literal["a2a"] = "a2a"
    endpoint: str | None = None
    # The variable holding a bearer token (``--api-key-env``); any other header: a2a.headers_env.
    api_key_env: str | None = None
    a2a: A2aApi = Field(default_factory=A2aApi)
    # The agents the agent calls over A2A, served by probegate ({{a2a_url}}).
    peers: list[PeerConfig] = Field(default_factory=list)

    def secret_env(self) -> dict[str, str]:
        own = {"API_KEY": self.api_key_env} if self.api_key_env else {}
        return {**header_secret_env(self.a2a.headers_env), **own}

    def secret_urls(self) -> list[str]:
        return [url for url in (self.endpoint, self.a2a.card_url) if url]

    def without_secrets(self) -> A2aConfig:
        api = self.a2a.model_copy(update={"headers_env": {}})
        return self.model_copy(update={"api_key_env": None, "a2a": api})


def render_metadata(template: Any, values: dict[str, str]) -> Any:
    """The metadata template with probegate's values put in (each a URL or an id, never
    attack text): ``{{session_id}}``, ``{{mcp_url}}``, ``{{a2a_url}}``, ``{{a2a_url.NAME}}``."""
    if isinstance(template, dict):
        return {key: render_metadata(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [render_metadata(item, values) for item in template]
    if isinstance(template, str):
        text = SESSION_ID.sub(lambda _m: values["session_id"], template)
        text = MCP_URL.sub(lambda _m: values["mcp_url"], text)
        return A2A_URL.sub(lambda m: values[f"a2a_url.{m.group(1) or ''}"], text)
    return template


def _mentions(template: Any, pattern: re.Pattern[str]) -> bool:
    if isinstance(template, dict):
        return any(_mentions(value, pattern) for value in template.values())
    if isinstance(template, list):
        return any(_mentions(item, pattern) for item in template)
    return isinstance(template, str) and pattern.search(template) is not None


class A2aTarget:
    """An agent behind A2A, found by its card."""

    def __init__(
        self, config: A2aConfig, settings: TargetSettings, client: HttpClient | None = None
    ) -> None:
        endpoint = config.endpoint or config.a2a.card_url
        if not endpoint:
            raise UsageError("the a2a target needs target.endpoint (or --endpoint): its base URL")
        for url in (config.endpoint, config.a2a.card_url):
            if url and not url.startswith(("http://", "https://")):
                raise UsageError(f"target.endpoint {public_url(url)!r} is not an http(s) URL")
        self.config = config
        self.settings = settings
        self.endpoint = endpoint
        self.client, self.headers = http_client(
            settings,
            endpoint,
            headers=config.a2a.headers,
            headers_env=config.a2a.headers_env,
            what="target.a2a.headers_env",
            client=client,
        )
        if config.api_key_env:
            key = env_value(config.api_key_env, "target.api_key_env")
            self.client.add_secret(key)
            self.headers.setdefault("Authorization", f"Bearer {key}")
        metadata = config.a2a.metadata
        self.uses_mcp = _mentions(metadata, MCP_URL)
        if self.uses_mcp:
            require_sdk("target.a2a.metadata mentions {{mcp_url}}: the agent")
        peers = peers_for(config.peers, named_in(metadata), "target.a2a.metadata")
        self.peers = PeerHost(peers, settings.a2a_listen, settings.a2a_advertise) if peers else None
        self._tools = tool_specs(config) + (self.peers.tools() if self.peers else [])
        self.mcp = McpHost(settings.mcp_listen, settings.mcp_advertise)
        self._card: Card | None = None
        self._card_lock = threading.Lock()
        # A fresh nonce per scan: message and context ids never repeat an earlier scan's.
        self._nonce = secrets.token_hex(4)
        self._counter = itertools.count(1)

    def traits(self) -> TargetTraits:
        # A2A reports no tool calls: they are seen only when the agent makes them through
        # probegate (its MCP server, its peers).
        if self.uses_mcp:
            return TargetTraits.of(ToolDelivery.MCP, tool_calls_visible=True, system_canaries=False)
        if self.peers is not None and not self.config.tools:
            # Its only tools are its peers, and every message to them passes probegate.
            return TargetTraits.of(ToolDelivery.A2A, tool_calls_visible=True, system_canaries=False)
        return TargetTraits.of(ToolDelivery.OWN, tool_calls_visible=False, system_canaries=False)

    def info(self) -> TargetInfo:
        return target_info(
            self.settings, kind="a2a", ref=f"a2a:{public_url(self.endpoint)}", tools=self._tools
        )

    def tools(self) -> list[ToolSpec]:
        return list(self._tools)

    def report_sections(self) -> list[KindSection]:
        return present(self.mcp.summary(), self.peers.summary() if self.peers is not None else None)

    def notices(self) -> list[Notice]:
        return []

    def next_id(self) -> str:
        return f"pg-{self._nonce}-{next(self._counter)}"

    def open_session(self, sandbox: Sandbox, limiter: RequestLimiter) -> A2aSession:
        mcp = self.mcp.open(sandbox) if self.uses_mcp else None
        peers = self.peers.open(sandbox) if self.peers is not None else None
        return A2aSession(self, sandbox, limiter, self.next_id(), mcp, peers)

    def card(self, limiter: RequestLimiter, usage: Usage) -> Card:
        """The agent's card, read once (the first conversation reads it for all)."""
        with self._card_lock:
            if self._card is None:
                self._card = self._read_card(limiter, usage)
            return self._card

    def _read_card(self, limiter: RequestLimiter, usage: Usage) -> Card:
        explicit = self.config.a2a.card_url
        base = (self.config.endpoint or "").rstrip("/")
        urls = [explicit] if explicit else [base + a2a.CARD_PATH, base + a2a.LEGACY_CARD_PATH]
        for url in urls:
            try:
                data = self.client.request_json(
                    "GET", url, headers=self.headers, limiter=limiter, usage=usage
                )
            except TransportError as exc:
                if url != urls[-1] and exc.reason.startswith("HTTP 404"):
                    continue  # an older agent serves its card as agent.json
                raise TransportError(
                    f"agent card: {exc.reason}", cause=exc.cause, fatal=exc.fatal
                ) from None
            try:
                card = a2a.read_card(data)
            except CardError as exc:
                raise TransportError(
                    f"malformed agent card at {public_url(url)}: {exc}",
                    cause=Cause.UNREADABLE,
                    fatal=True,
                ) from None
            pinned = self.config.a2a.version
            if pinned != "auto":
                card = Card(
                    card.name, card.description, card.url, Wire(pinned), card.streaming, card.skills
                )
            return card
        raise AssertionError("unreachable: the last card URL raises")

    def close(self) -> None:
        try:
            self.mcp.close()
            if self.peers is not None:
                self.peers.close()
        finally:
            self.client.close()


@dataclass
class A2aSession:
    """One conversation: one A2A context."""

    target: A2aTarget
    sandbox: Sandbox
    limiter: RequestLimiter
    session_id: str
    endpoint: McpEndpoint | None = None
    peers: PeerEndpoint | None = None
    usage: Usage = field(default_factory=Usage)
    context_id: str | None = None
    # The task the agent left waiting for input: the next message continues it.
    waiting_task: str | None = None
    _requests: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _claimed: int = 0
    _refused: int = 0

    def __post_init__(self) -> None:
        self._claimed = len(self.sandbox.calls)
        self._refused = self.sandbox.over

    def send(self, message: Turn) -> Turn:
        card = self.target.card(self.limiter, self.usage)
        reply = self._exchange(card, peer_message(message))
        calls, made = self._recorded()
        return reply_turn(reply, calls, made=made)

    def peer_record(self) -> PeerRecord | None:
        """What the agent fetched from probegate's peers in this attempt (targets/a2a_peers/)."""
        return self.target.peers.record(self.sandbox) if self.target.peers else None

    # -- one message -----------------------------------------------------------------------
    def _exchange(self, card: Card, text: str) -> str:
        target = self.target
        wire = card.wire
        values = {
            "session_id": self.session_id,
            "mcp_url": self.endpoint.url if self.endpoint else "",
        }
        if self.peers is not None:
            values["a2a_url."] = self.peers.url()
            values.update({f"a2a_url.{n}": u for n, u in self.peers.urls().items()})
        metadata = render_metadata(target.config.a2a.metadata, values)
        body = a2a.message_json(
            wire,
            text,
            message_id=target.next_id(),
            context_id=self.context_id,
            task_id=self.waiting_task,
            metadata=metadata,
        )
        stream = card.streaming if target.config.a2a.stream is None else target.config.a2a.stream
        deadline = time.monotonic() + target.settings.timeout
        request = a2a.send_request(wire, next(self._requests), body, stream=stream)
        headers = {**target.headers, **a2a.headers(wire)}
        what = f"the agent ({a2a.METHODS[wire]['stream' if stream else 'send']})"
        if stream:
            headers["Accept"] = "text/event-stream"
            reply: Reply = target.client.request_events(
                "POST",
                card.url,
                body=request,
                headers=headers,
                limiter=self.limiter,
                usage=self.usage,
                parse=lambda data: _read_stream(wire, data, what),
            )
        else:
            reply = target.client.request_json(
                "POST",
                card.url,
                body=request,
                headers=headers,
                limiter=self.limiter,
                usage=self.usage,
                parse=lambda data: _read_send(wire, data, what),
            )
        reply = self._settle(card, reply, deadline)
        self._check_peers()
        return self._conclude(reply)

    def _settle(self, card: Card, reply: Reply, deadline: float) -> Reply:
        """Ask for the task again until it settles, within the message's deadline."""
        wait = POLL_FIRST
        while not reply.settled:
            if reply.task_id is None:
                raise MalformedReply(f"{UNREADABLE}: the agent's task has no id to follow")
            if time.monotonic() + wait > deadline:
                state = reply.state.value if reply.state else "unknown"
                raise TransportError(
                    f"the agent's task {reply.task_id[:64]} was still {state} after "
                    f"{self.target.settings.timeout:g}s: it never completed (timeout)",
                    cause=Cause.TIMEOUT,
                )
            self.limiter.sleep(wait)
            wait = min(wait * 2, POLL_MAX)
            request = a2a.task_request(card.wire, next(self._requests), "get", reply.task_id)
            again = self.target.client.request_json(
                "POST",
                card.url,
                body=request,
                headers={**self.target.headers, **a2a.headers(card.wire)},
                limiter=self.limiter,
                usage=self.usage,
                parse=lambda data: _read_send(card.wire, data, "the agent (GetTask)"),
            )
            again.artifacts = {**reply.artifacts, **again.artifacts}
            again.message = again.message or reply.message
            reply = again
        return reply

    def _conclude(self, reply: Reply) -> str:
        """The reply's text, and the conversation's state for the next message; a task that
        did not end in an answer is a fault, not the agent's word."""
        self.context_id = reply.context_id or self.context_id
        state = reply.state
        self.waiting_task = reply.task_id if state is State.INPUT_REQUIRED else None
        said = reply.text()
        if state in (State.FAILED, State.CANCELED):
            detail = f": {said[:300]}" if said else ""
            raise TransportError(f"the agent's task {state.value}{detail}", cause=Cause.AGENT_ERROR)
        if state is State.AUTH_REQUIRED:
            raise TransportError(
                "the agent asks for authentication (auth-required): give its credentials in "
                "target.a2a.headers_env or --api-key-env",
                cause=Cause.AUTH,
            )
        if state is State.REJECTED:
            return said or "(the agent rejected the task)"
        return said

    def _check_peers(self) -> None:
        for endpoint, what in ((self.endpoint, "MCP server"), (self.peers, "A2A peers")):
            if endpoint is not None and endpoint.undelivered is not None:
                # A call may be missing from the sandbox: what it recorded is not what happened.
                raise TransportError(
                    f"probegate's {what}: {endpoint.undelivered}", cause=Cause.TOOL_SERVER
                )

    def _recorded(self) -> tuple[list[ToolCall], int]:
        """The calls the agent made through probegate (its MCP server, its peers) this turn."""
        if self.endpoint is None and self.peers is None:
            return [], 0
        recorded = self.sandbox.calls_since(self._claimed)
        self._claimed += len(recorded)
        refused = self.sandbox.over - self._refused
        self._refused = self.sandbox.over
        return recorded, len(recorded) + refused

    def close(self) -> None:
        for endpoint in (self.endpoint, self.peers):
            if endpoint is not None:
                endpoint.close()


def _rpc_items(data: list[SseEvent] | Any, what: str) -> list[Any]:
    """The results of a stream's events (or of one JSON answer a server gave instead)."""
    if not isinstance(data, list):
        return [a2a.rpc_result(data, what)]
    items = []
    for event in data:
        payload = event.json()
        if payload is None:
            raise MalformedReply(f"{UNREADABLE}: {what} streamed an event that is not JSON")
        items.append(a2a.rpc_result(payload, what))
    return items


def _read_send(wire: Wire, data: Any, what: str) -> Reply:
    reply = Reply()
    a2a.read_into(reply, wire, a2a.rpc_result(data, what), what)
    return reply


def _read_stream(wire: Wire, data: list[SseEvent] | Any, what: str) -> Reply:
    reply = Reply()
    items = _rpc_items(data, what)
    if not items:
        raise MalformedReply(f"{UNREADABLE}: {what} streamed no event")
    for item in items:
        a2a.read_into(reply, wire, item, what)
    return reply


SPEC = TargetSpec(
    kinds=("a2a",),
    config=A2aConfig,
    summary="an agent that serves the Agent2Agent protocol (A2A 1.0 or 0.3)",
    build=A2aTarget,
    endpoint=True,
)
