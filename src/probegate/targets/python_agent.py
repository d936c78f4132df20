"""The ``python`` target: an agent in the user's own code, ``--python MODULE:ATTR``.

``ATTR`` is a function ``f(input, context)`` (or ``f(input)``), or a class with
``run(input, context)`` that is instantiated with no arguments once per conversation, so an
agent keeping history on ``self`` never mixes two attempts. The reply is an AgentResult
(``output``, ``tool_calls[{name, arguments, result}]``, ``token_usage``, ...; docs/targets.md),
as an object with those attributes, a dict, or a plain string.

The ``context`` is probegate's sandbox offered to the agent: ``context.tools`` lists the tools
the config declares, ``context.call_tool(name, args)`` answers a call with the probe's fixture
(the channel indirect attacks ride on), and ``context.mcp_url`` serves the same tools over MCP
to an agent built with a framework that takes its tools from MCP servers (the server starts the
first time an agent asks for it). Every call either way is recorded as the agent's action.
``context.a2a_url`` and ``context.a2a_urls`` are the agents it calls over A2A, played by
probegate's peers (``target.peers``, targets/a2a_peers/).
An agent that keeps its own tools can point its model base URL at probegate's model-API proxy
instead (``target.model_proxy``, targets/model_proxy/): the proxy sees its model calls and
delivers every probe through its own tools. An exception inside the agent makes the attempt
unjudged with its type and message; it is the agent's failure, not a verdict.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from probegate.errors import UsageError
from probegate.inprocess import (
    Outcome,
    agent_entry,
    call_with_timeout,
    describe_exception,
    field_of,
    load_attribute,
    source_file,
)
from probegate.models.bounds import text_of
from probegate.models.causes import Cause
from probegate.models.report import TargetInfo
from probegate.models.sections import KindSection
from probegate.models.tools import ToolSpec
from probegate.models.transcript import ToolCall, Turn
from probegate.targets.a2a_peers import PeerConfig, PeerEndpoint, PeerHost
from probegate.targets.base import (
    AgentConfig,
    Notice,
    TargetFlag,
    TargetSettings,
    TargetSpec,
    TargetTraits,
    ToolDelivery,
    present,
)
from probegate.targets.configured import target_info, tool_specs
from probegate.targets.mcp_server import McpEndpoint, McpHost
from probegate.targets.model_proxy import (
    PROXY_TRAITS,
    ModelProxy,
    ModelProxyConfig,
    ProxyConversation,
    unmarked,
)
from probegate.targets.python_process import AgentProcesses, RemoteConversation
from probegate.targets.sandbox import Sandbox, is_peer_tool
from probegate.targets.wire import (
    calls_reported,
    peer_message,
    reply_turn,
    reported_tool_calls,
    tool_reply,
    with_reported,
)
from probegate.transport.limiter import RequestLimiter
from probegate.transport.pricing import cost_usd
from probegate.transport.usage import TransportError, Usage


@dataclass
class AgentContext:
    """What a Python agent may use from probegate: the sandbox tools and the conversation."""

    tools: list[dict[str, Any]]
    history: list[dict[str, str]]
    session: int
    sender: str
    agent_name: str | None
    _sandbox: Sandbox
    _mcp: Callable[[], str]
    _a2a: Callable[[], dict[str, str]] = dict
    calls: list[ToolCall] = field(default_factory=list)
    # The model-API proxy's base URL for this scan (``target.model_proxy``), else None: an
    # agent that builds its model client per conversation passes it as ``base_url``.
    model_base_url: str | None = None

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """Run a tool in the sandbox; returns its result, or ``ERROR: ...`` when it failed."""
        args = dict(arguments or {})
        call = self._sandbox.call(str(name), args)
        self.calls.append(call)
        return tool_reply(call)

    def fields(self) -> dict[str, Any]:
        """The context as data, for an agent in a process of its own (python_child.py)."""
        return {
            "tools": self.tools,
            "history": self.history,
            "session": self.session,
            "sender": self.sender,
            "agent_name": self.agent_name,
            "model_base_url": self.model_base_url,
        }

    @property
    def mcp_url(self) -> str:
        """This conversation's endpoint on probegate's MCP server (streamable HTTP)."""
        return self._mcp()

    @property
    def a2a_url(self) -> str:
        """The base URL of this conversation's first A2A peer (its card is below it)."""
        return next(iter(self._a2a().values()))

    @property
    def a2a_urls(self) -> dict[str, str]:
        """Each declared A2A peer's base URL for this conversation, by the peer's name."""
        return dict(self._a2a())


class PythonConfig(AgentConfig):
    """``kind: python``: the agent's ``MODULE:ATTR``."""

    kind: Literal["python"] = "python"
    python: str | None = None
    # The agent's model calls pass through probegate (docs/targets.md, "The model-API proxy").
    model_proxy: ModelProxyConfig | None = None
    # The agents the agent calls over A2A, served by probegate (``context.a2a_url``).
    peers: list[PeerConfig] = Field(default_factory=list)
    # 0: the agent runs in probegate's process; N: in N child processes of its own
    # (targets/python_process.py), so its SDK's CPU does not share the scan's interpreter.
    processes: int = Field(default=0, ge=0, le=64)

    def secret_env(self) -> dict[str, str]:
        proxy = self.model_proxy.upstream_api_key_env if self.model_proxy is not None else None
        return {"UPSTREAM_API_KEY": proxy} if proxy else {}

    def secret_urls(self) -> list[str]:
        return [self.model_proxy.upstream] if self.model_proxy is not None else []

    def without_secrets(self) -> PythonConfig:
        if self.model_proxy is None:
            return self
        proxy = self.model_proxy.model_copy(update={"upstream_api_key_env": None})
        return self.model_copy(update={"model_proxy": proxy})


class PythonTarget:
    """An in-process agent; each conversation gets a fresh instance when ATTR is a class."""

    def __init__(
        self, config: PythonConfig, settings: TargetSettings, obj: Any | None = None
    ) -> None:
        spec = config.python
        self.config = config
        self.settings = settings
        # The agent's own processes (``target.processes``), else None: it runs in this one.
        self.remote: AgentProcesses | None = None
        self._factory: Callable[[], Callable[..., Any]] | None = None
        if obj is None and not spec:
            raise UsageError("the python target needs --python MODULE:ATTR (or target.python)")
        if config.processes:
            if obj is not None or not spec:
                raise UsageError("target.processes needs the agent as target.python MODULE:ATTR")
            # Imported in the children only: the scan's interpreter never runs the agent.
            self.remote = AgentProcesses(spec, settings.base_dir, config.processes)
            self.spec: str = spec
            self.with_context = self.remote.takes_context
            self._source = self.remote.source
        else:
            if obj is None:
                assert spec is not None
                obj = load_attribute(spec, flag="--python", search=[settings.base_dir, Path.cwd()])
            self.spec = spec or str(getattr(obj, "__qualname__", "agent"))
            entry = agent_entry(obj, what=self.spec)
            self._factory = entry.new_call
            self.with_context = entry.takes_context
            self._source = source_file(obj)
        try:
            self._serve(config, settings)
        except BaseException:
            if self.remote is not None:  # its children end with it, whatever stopped it
                self.remote.close()
            raise

    def _serve(self, config: PythonConfig, settings: TargetSettings) -> None:
        """What the target serves the agent: its peers and MCP tools (started when first
        asked for), and the proxy, which listens from here until :meth:`close`."""
        # Started only if an agent reads ``context.a2a_url``; the peers are declared.
        self.peers = (
            PeerHost(config.peers, settings.a2a_listen, settings.a2a_advertise)
            if config.peers
            else None
        )
        self._tools = tool_specs(config) + (self.peers.tools() if self.peers else [])
        # Started only if an agent reads ``context.mcp_url``.
        self.mcp = McpHost(settings.mcp_listen, settings.mcp_advertise)
        # Last: it listens from here until close().
        self.proxy = (
            ModelProxy(config.model_proxy, settings, self._tools, config.prices)
            if config.model_proxy is not None
            else None
        )

    def traits(self) -> TargetTraits:
        # An agent that never receives the context cannot read probegate's fixtures; the calls
        # it makes through the context are recorded, and it reports the others itself. Behind
        # the proxy, its model's calls are seen and the probe reaches its own tools.
        if self.proxy is not None:
            return PROXY_TRAITS
        return TargetTraits.of(
            ToolDelivery.CONTEXT if self.with_context else ToolDelivery.OWN,
            tool_calls_visible=True,
            system_canaries=False,
        )

    def info(self) -> TargetInfo:
        return target_info(
            self.settings,
            kind="python",
            ref=f"python:{self.spec}",
            tools=self._tools,
            fallback=self._source,
        )

    def tools(self) -> list[ToolSpec]:
        return list(self._tools)

    def report_sections(self) -> list[KindSection]:
        tools = self.proxy.summary() if self.proxy is not None else self.mcp.summary()
        return present(tools, self.peers.summary() if self.peers is not None else None)

    def notices(self) -> list[Notice]:
        if self.proxy is None:
            return []
        notices = self.proxy.notices()
        if self.remote is None and self.config.python and (os.cpu_count() or 1) > 1:
            # Its model SDK's CPU shares this interpreter with the proxy: one core for both.
            notices.append(
                Notice(
                    "the agent runs in probegate's process, beside the proxy: `processes: 2` "
                    "under target runs it in processes of its own, which scans an agent built "
                    'on a model SDK faster (docs/targets.md, "processes")'
                )
            )
        return notices

    def open_session(self, sandbox: Sandbox, limiter: RequestLimiter) -> PythonSession:
        if self.remote is not None:
            session = PythonSession(self, None, sandbox, limiter, remote=self.remote.conversation())
        else:
            assert self._factory is not None
            try:
                run = self._factory()
            except Exception as exc:
                raise TransportError(
                    f"agent constructor raised {describe_exception(exc)}", cause=Cause.AGENT_ERROR
                ) from None
            session = PythonSession(self, run, sandbox, limiter)
        if self.proxy is not None:
            session.conversation = self.proxy.open(sandbox, session.usage)
        return session

    def close(self) -> None:
        try:
            self.mcp.close()
            if self.peers is not None:
                self.peers.close()
        finally:
            if self.remote is not None:
                self.remote.close()
            if self.proxy is not None:
                self.proxy.close()


@dataclass
class PythonSession:
    target: PythonTarget
    run: Callable[..., Any] | None
    sandbox: Sandbox
    limiter: RequestLimiter
    # The conversation's instance in one of the agent's processes (``target.processes``).
    remote: RemoteConversation | None = None
    usage: Usage = field(default_factory=Usage)
    history: list[dict[str, str]] = field(default_factory=list)
    endpoint: McpEndpoint | None = None
    peers: PeerEndpoint | None = None
    # This conversation's share of the model-API proxy, when the target has one.
    conversation: ProxyConversation | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _failure: UsageError | None = None

    def a2a_urls(self) -> dict[str, str]:
        """The conversation's A2A peers, opened (and the server started) on first use."""
        with self._lock:
            if self.peers is None:
                host = self.target.peers
                try:
                    if host is None:
                        raise UsageError(
                            "the agent asked for context.a2a_url, and the config declares no "
                            "peer: name the agents it calls under target.peers "
                            "(docs/scan-your-agent/a2a.md)"
                        )
                    self.peers = host.open(self.sandbox)
                except UsageError as exc:
                    self._failure = exc  # raised again where the scan sees it, as mcp_url's
                    raise
            return self.peers.urls()

    def mcp_url(self) -> str:
        """The conversation's MCP endpoint, opened (and the server started) on first use."""
        with self._lock:
            if self.endpoint is None:
                try:
                    self.endpoint = self.target.mcp.open(self.sandbox)
                except UsageError as exc:
                    # Raised inside the agent's code, where it would read as the agent's failure;
                    # send() raises it again where the scan sees it (exit 2).
                    self._failure = exc
                    raise
            return self.endpoint.url

    def send(self, message: Turn) -> Turn:
        self.limiter.acquire()
        self.usage.requests += 1
        mark, over = len(self.sandbox.calls), self.sandbox.over
        text = peer_message(message)
        conversation = self.conversation
        if conversation is not None:
            # The message carries the conversation's mark, so the proxy knows its model calls.
            text = conversation.begin(text)
        try:
            outcome = self._call(text, self._context(message))
        finally:
            end = conversation.end(self.limiter) if conversation else None
        self._raise_failures(outcome)
        fault = end.fault(conversation.proxy.address_url) if end and conversation else None
        if fault is not None:
            raise fault
        refused = self.sandbox.over - over + (end.over if end else 0)
        stopped = end.stopped if end else []
        turn = self._to_turn(outcome.value, self.sandbox.calls_since(mark), refused, stopped)
        self.history.append({"role": "user", "content": text})
        self.history.append({"role": "assistant", "content": turn.content})
        return turn

    def _context(self, message: Turn) -> AgentContext:
        """What the agent's ``run(input, context)`` is given for ``message``."""
        return AgentContext(
            tools=[
                {
                    "name": spec.name,
                    "description": self.sandbox.tool_description(spec),
                    "parameters": spec.parameters,
                    "capabilities": sorted(c.value for c in spec.capabilities),
                }
                for spec in self._offered()
                if not is_peer_tool(spec)
            ],
            history=list(self.history),
            session=message.session,
            sender=message.role,
            agent_name=message.name,
            _sandbox=self.sandbox,
            _mcp=self.mcp_url,
            _a2a=self.a2a_urls,
            model_base_url=self.target.proxy.base_url if self.target.proxy is not None else None,
        )

    def _call(self, text: str, context: AgentContext) -> Outcome:
        """The agent's function called once, cut at --timeout or the scan's deadline."""
        timeout = self.target.settings.timeout
        remaining = self.limiter.remaining()  # the scan's deadline comes first when it is nearer
        timeout = timeout if remaining is None else min(timeout, remaining)
        if self.remote is not None:
            return self.remote.call(text, context, timeout, self.limiter.when_closed)
        run = self.run
        assert run is not None
        return call_with_timeout(
            (lambda: run(text, context)) if self.target.with_context else (lambda: run(text)),
            timeout,
            self.limiter.when_closed,
        )

    def _raise_failures(self, outcome: Outcome) -> None:
        """Raise what keeps the reply from being evidence: a setup problem the agent's code
        met (exit 2), the agent's own failure or timeout, or a sandbox server that could not
        record every call (what it recorded would not be what the agent did)."""
        if self._failure is not None:
            raise self._failure
        if outcome.error is not None:
            self.limiter.record_failure()
            if outcome.timed_out:
                self.limiter.check()  # cut at the scan's deadline, not the agent's timeout
                raise TransportError(
                    f"agent did not answer within --timeout: {outcome.error}",
                    cause=Cause.TIMEOUT,
                )
            raise TransportError(f"agent raised {outcome.error}", cause=Cause.AGENT_ERROR)
        if self.endpoint is not None and self.endpoint.undelivered is not None:
            raise TransportError(
                f"probegate's MCP server: {self.endpoint.undelivered}", cause=Cause.TOOL_SERVER
            )
        if self.peers is not None and self.peers.undelivered is not None:
            raise TransportError(
                f"probegate's A2A peers: {self.peers.undelivered}", cause=Cause.TOOL_SERVER
            )

    def _to_turn(
        self, result: Any, recorded: list[ToolCall], refused: int, stopped: list[str]
    ) -> Turn:
        """The reply: what the sandbox recorded (context, MCP and proxy calls) plus what it
        reports, and the text of any model reply safe mode stopped (evidence too).

        ``refused`` calls went past what the sandbox answers; they count as made and cut.
        """
        if isinstance(result, str):
            text = "\n".join(filter(None, [unmarked(result), *stopped]))
            return reply_turn(text, recorded, made=len(recorded) + refused)
        if result is None:
            raise TransportError(
                "agent returned None instead of an AgentResult", cause=Cause.AGENT_ERROR
            )
        output = field_of(result, "output")
        if output is not None and not isinstance(output, str):
            output = text_of(output)
        items = field_of(result, "tool_calls")
        reported = reported_tool_calls(items, set(self.sandbox.tools))
        calls = with_reported(recorded, reported)
        usage = field_of(result, "token_usage")
        prompt = field_of(usage, "prompt_tokens") if usage is not None else 0
        completion = field_of(usage, "completion_tokens") if usage is not None else 0
        prompt = prompt if isinstance(prompt, int) and prompt >= 0 else 0
        completion = completion if isinstance(completion, int) and completion >= 0 else 0
        config = self.target.config
        cost = cost_usd(config.prices, config.model, prompt, completion)
        self.usage.prompt_tokens += prompt
        self.usage.completion_tokens += completion
        self.usage.cost_usd += cost
        self.limiter.record_usage(prompt, completion, cost)
        made = len(calls) + refused + calls_reported(items) - len(reported)
        text = "\n".join(filter(None, [unmarked(output or ""), *stopped]))
        return reply_turn(text, calls, made=made)

    def _offered(self) -> list[ToolSpec]:
        """The tools the agent is offered: the config's, or those of the environment the
        attempt brings (an AgentDojo suite's), which the sandbox holds."""
        if self.sandbox.environment is not None:
            return list(self.sandbox.tools.values())
        return self.target.tools()

    def close(self) -> None:
        if self.remote is not None:
            self.remote.close()
        if self.endpoint is not None:
            self.endpoint.close()
        if self.peers is not None:
            self.peers.close()
        if self.conversation is not None:
            self.conversation.close()


SPEC = TargetSpec(
    kinds=("python",),
    config=PythonConfig,
    summary="a function or class in your code (MODULE:ATTR)",
    build=PythonTarget,
    flags=(
        TargetFlag(
            "--python",
            "python",
            "a Python agent: a function or a class with run(input, context)",
            metavar="MODULE:ATTR",
            selects=True,
        ),
    ),
)
