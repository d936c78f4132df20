"""The Target contract: what every target kind is to the rest of probegate.

A kind is one module exporting one :class:`TargetSpec`: its config model (the ``target:``
section for that kind), the command-line flags that describe it, and the factory that turns a
validated config into a :class:`Target`. ``targets/registry.py`` lists the specs; the config
union, the CLI's target flags and choices, and the docs table check (tests/targets) all derive
from that list (docs/targets.md says how to add a kind).

A :class:`Target` opens a :class:`Session` per conversation; the engine sends one message at a
time and gets the agent's reply back with the tool calls it made already answered by the
:class:`~probegate.targets.sandbox.Sandbox`. What the engine needs to know about a target
beyond that is declared, typed, in :class:`TargetTraits`. Transport failures raise
:class:`~probegate.transport.usage.TransportError` so the attempt ends unjudged with a reason,
never resisted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Generic, Protocol, Self, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from probegate.errors import UsageError
from probegate.models.canaries import Canaries
from probegate.models.report import TargetInfo
from probegate.models.sections import KindSection
from probegate.models.taxonomy import Capability
from probegate.models.tools import ToolSpec
from probegate.models.transcript import Transcript, Turn
from probegate.targets.sandbox import Sandbox
from probegate.transport.limiter import RequestLimiter
from probegate.transport.usage import Usage


class ToolDelivery(StrEnum):
    """How the agent under test receives probegate's sandbox tools.

    Attacks that ride on tool results, documents, memory, peer agents and tool descriptions
    reach an agent only through the sandbox, so this decides which probes can be delivered.
    """

    # probegate runs the agent's loop and answers every tool call from the sandbox
    AGENT_LOOP = "agent_loop"
    # the agent is handed the sandbox (a python agent's ``context``) and calls it itself
    CONTEXT = "context"
    # the agent takes its tools from probegate's MCP server, one endpoint per conversation
    # (targets/mcp_server.py): the sandbox answers and records every call
    MCP = "mcp"
    # the agent's only tools are other agents, which it calls at probegate's A2A peers
    # (targets/a2a_peers/), one set per conversation: the sandbox answers and records every
    # message it sends them
    A2A = "a2a"
    # the agent runs its own tools and its model calls pass through probegate's model-API proxy
    # (targets/model_proxy/): the proxy sees every tool call, and what the model reads back is
    # the sandbox's answer wherever the probe supplies one
    PROXY = "proxy"
    # the agent runs its own tools; probegate sees only the calls it reports, if any
    OWN = "own"
    # the replies come from a recording; the sandbox answered when it was made, or not
    RECORDED = "recorded"


@dataclass(frozen=True)
class TargetTraits:
    """What the engine must know about a target to plan and judge attempts against it."""

    tool_delivery: ToolDelivery
    # The agent's tool calls show in its replies, so tool-call oracles can look at them.
    tool_calls_visible: bool
    # probegate writes the system prompt and plants canaries (synthetic secrets) in it.
    system_canaries: bool
    # The agent's tool calls are answered by probegate's sandbox, so fixture-borne attacks
    # reach it. Follows from ``tool_delivery`` except for a recording, which says so itself.
    uses_sandbox: bool
    # An attempt waits on something outside the process (a network, a subprocess, a model).
    # False for an agent that only computes (the demo, a replay): threads would only take
    # turns on the interpreter's lock, so the runner runs its attempts on its own thread.
    waits: bool = True

    def __post_init__(self) -> None:
        expected = {
            ToolDelivery.AGENT_LOOP: True,
            ToolDelivery.CONTEXT: True,
            ToolDelivery.MCP: True,
            ToolDelivery.A2A: True,
            ToolDelivery.PROXY: True,
        }.get(self.tool_delivery, False if self.tool_delivery is ToolDelivery.OWN else None)
        if expected is not None and expected != self.uses_sandbox:
            raise ValueError(f"{self.tool_delivery} tools contradict uses_sandbox")

    @classmethod
    def of(
        cls,
        delivery: ToolDelivery,
        *,
        tool_calls_visible: bool,
        system_canaries: bool,
        waits: bool = True,
    ) -> TargetTraits:
        """The traits of a live agent: whether it uses the sandbox follows from the delivery."""
        return cls(
            tool_delivery=delivery,
            tool_calls_visible=tool_calls_visible,
            system_canaries=system_canaries,
            uses_sandbox=delivery is not ToolDelivery.OWN,
            waits=waits,
        )


@dataclass(frozen=True)
class TargetSettings:
    """The scan-wide settings a target needs; the rest of the scan's config is not its business."""

    timeout: float = 60.0
    retries: int = 3
    concurrency: int = 8
    seed: int = 0
    # Paths in the config are relative to its file's directory (else to the working directory).
    base_dir: Path = Path()
    config_path: Path | None = None
    # probegate's MCP server, for kinds whose agent takes its tools from it: where it listens
    # (``--mcp-listen``) and the base URL the agent is told (``--mcp-advertise``; by default
    # the listen address), docs/agent-service.md.
    mcp_listen: str = "127.0.0.1:0"
    mcp_advertise: str | None = None
    # probegate's A2A peers, for kinds whose agent calls other agents over A2A: the same two
    # settings (``--a2a-listen``, ``--a2a-advertise``), docs/scan-your-agent/a2a.md.
    a2a_listen: str = "127.0.0.1:0"
    a2a_advertise: str | None = None
    # The scan store (``--store``): where the model-API proxy writes its base URL for the
    # agent's start command (docs/scan-your-agent/proxy.md); None writes nothing.
    store: Path | None = None


@dataclass(frozen=True)
class Notice:
    """What a target tells the user as the scan starts (the model-API proxy's base URL, a
    warning about where it listens): one line each."""

    text: str
    warning: bool = False


class Session(Protocol):
    """One conversation with the agent. Memory lives in the sandbox, not here."""

    usage: Usage

    def send(self, message: Turn) -> Turn:
        """Deliver one user or peer-agent message and return the agent's reply turn."""
        ...

    def close(self) -> None: ...


class Target(Protocol):
    """An agent probegate can attack."""

    def info(self) -> TargetInfo: ...

    def tools(self) -> list[ToolSpec]: ...

    def traits(self) -> TargetTraits: ...

    def open_session(self, sandbox: Sandbox, limiter: RequestLimiter) -> Session:
        """A new conversation; every request to the agent must pass ``limiter.acquire()``."""
        ...

    def report_sections(self) -> list[KindSection]:
        """What this kind adds to the scan report (models/sections.py, one field each), read
        once the attempts have run."""
        ...

    def notices(self) -> list[Notice]:
        """What the user must be told as the scan starts, before the first attempt."""
        ...

    def close(self) -> None: ...


def present(*sections: KindSection | None) -> list[KindSection]:
    """The report sections a target has, leaving out those it has nothing for."""
    return [section for section in sections if section is not None]


def capabilities_of(tools: list[ToolSpec]) -> set[Capability]:
    caps: set[Capability] = set()
    for tool in tools:
        caps |= tool.capabilities
    return caps


# --------------------------------------------------------------------------- configs


class TargetConfig(BaseModel):
    """The ``target:`` section of ``probegate.yml`` for one kind (each kind subclasses it).

    Secrets never live here: a config names environment variables, and their values are read
    late, by :meth:`declared_canaries`, :meth:`real_secrets` and the kind's factory.
    """

    model_config = ConfigDict(extra="forbid")

    kind: str

    def agent_under_test(self) -> AgentConfig:
        """The agent under test (for a kind that wraps another agent, the agent it wraps)."""
        raise NotImplementedError

    def secret_env(self) -> dict[str, str]:
        """``{placeholder name: environment variable}`` of the secrets no file may contain."""
        return {}

    def secret_urls(self) -> list[str]:
        """URLs of the config that may carry a password (``https://user:pass@host``)."""
        return []

    def without_secrets(self) -> Self:
        """This config with every environment-held secret left out (a dry run sends nothing)."""
        return self

    @classmethod
    def yaml_keys(cls) -> frozenset[str]:
        """The keys a user writes in the ``target:`` section for this kind."""
        return frozenset(cls.model_fields)

    def declared_canaries(self) -> tuple[str, ...]:
        """Real secrets the agent holds: literal ``canaries`` plus those named by ``canaries_env``.

        An unset variable is a usage error: a scan must not run believing it can see a leak it
        cannot. Redaction reads the same secrets through :meth:`real_secrets`.
        """
        agent = self.agent_under_test()
        values = [c for c in agent.canaries if c]
        values.extend(env_value(name, "target.canaries_env") for name in agent.canaries_env)
        return tuple(dict.fromkeys(values))

    def real_secrets(self) -> dict[str, str]:
        """Everything the user handed us that must never land in a file, by placeholder name."""
        return {name: value for name, value, _variable in self._held_secrets()}

    def secret_variables(self) -> dict[str, str]:
        """``{placeholder name: environment variable}`` of each secret read from one (the API
        key, secret headers, ``canaries_env``): where a reproducer finds it again."""
        return {name: variable for name, _value, variable in self._held_secrets() if variable}

    def _held_secrets(self) -> list[tuple[str, str, str | None]]:
        """``(placeholder name, value, environment variable or None)`` of every secret."""
        agent = self.agent_under_test()
        values: list[tuple[str, str | None]] = [(c, None) for c in agent.canaries]
        values.extend((os.environ.get(name, ""), name) for name in agent.canaries_env)
        held = [
            (f"CANARY_{i}", value, variable)
            for i, (value, variable) in enumerate([v for v in values if v[0]], start=1)
        ]
        for placeholder, variable in self.secret_env().items():
            if os.environ.get(variable):
                held.append((placeholder, os.environ[variable], variable))
        passwords = [_password(url) for url in self.secret_urls()]
        for i, password in enumerate(dict.fromkeys(filter(None, passwords)), start=1):
            held.append((f"URL_PASSWORD_{i}", password, None))
        return held


def header_secret_env(headers_env: Mapping[str, str]) -> dict[str, str]:
    """``{header: ENV_VAR}`` as :meth:`TargetConfig.secret_env` entries: ``HEADER_X_API_KEY``."""
    out: dict[str, str] = {}
    for header, variable in sorted(headers_env.items()):
        name = re.sub(r"[^A-Z0-9]+", "_", header.upper()).strip("_") or "VALUE"
        out[f"HEADER_{name}"] = variable
    return out


def _password(url: str | None) -> str:
    try:
        return (urlsplit(url).password or "") if url else ""
    except ValueError:
        return ""


class ToolConfig(BaseModel):
    """A tool the agent under test declares (docs/targets.md, capabilities)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    capabilities: list[Capability] = Field(default_factory=list)
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class AgentConfig(TargetConfig):
    """What every agent kind's config holds: its tools, the secrets it holds, its prices."""

    tools: list[ToolConfig] = Field(default_factory=list)
    canaries: list[str] = Field(default_factory=list)
    canaries_env: list[str] = Field(default_factory=list)
    # Model calls per message (the openai loop's bound; the dry run's request estimate).
    max_turns: int = Field(default=4, ge=1, le=32)
    # Replies' token usage is priced by ``model`` in ``prices`` (docs/targets.md); the LLM
    # judge and the dry run's estimate read the same table.
    model: str | None = None
    prices: dict[str, dict[str, float]] = Field(default_factory=dict)

    def agent_under_test(self) -> AgentConfig:
        return self


def env_value(name: str, what: str) -> str:
    """The value of environment variable ``name``; a clear usage error when it is unset."""
    value = os.environ.get(name, "")
    if not value:
        raise UsageError(
            f"{what}: environment variable {name} is not set (the config names the variable; "
            "export it before scanning)"
        )
    return value


def config_error(loc: tuple[str, ...], message: str, value: Any) -> ValidationError:
    """A validation error at ``loc`` inside the section being parsed, with our own words."""
    error = PydanticCustomError("target_config", message.replace("{", "{{").replace("}", "}}"))
    return ValidationError.from_exception_data(
        "target", [InitErrorDetails(type=error, loc=loc, input=value)]
    )


# --------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class ReplayInput:
    """One attempt, as a kind's ``replay_script`` needs it to send the same messages again."""

    title: str  # what the script reproduces, for its first lines
    transcript: Transcript  # redacted: real secrets are placeholders here
    # The tools' descriptions as the sandbox served them in that attempt (a probe may poison one).
    tool_descriptions: dict[str, str]
    canaries: Canaries  # planted for that attempt: synthetic, never a real secret
    settings: TargetSettings
    evidence: str  # what probegate saw, in one line, for the script to print at the end
    # The scan's secrets by placeholder name: the script holds each as its placeholder (a
    # system prompt from the config may hold a declared canary in the clear).
    secrets: Mapping[str, str] = field(default_factory=dict)


C = TypeVar("C", bound=TargetConfig)


@dataclass(frozen=True)
class TargetFlag:
    """A ``probegate scan`` flag that describes a target; it sets one key of ``target:``."""

    flag: str  # "--python"
    key: str  # the config key it sets ("python"); also the argparse dest
    help: str
    metavar: str | None = None
    # Giving the flag selects its spec's kind (``--python`` means ``kind: python``).
    selects: bool = False
    # A path as the user typed it, relative to where they stand: resolved for a reproducer.
    path: bool = False


class KindTable(Protocol):
    """The registry as a kind's config sees it (a guard's config parses the agent behind it)."""

    def parse(self, data: Any) -> TargetConfig: ...

    def spec(self, kind: str) -> TargetSpec[Any] | None: ...

    def kinds(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class TargetSpec(Generic[C]):
    """One target kind, complete: everything else about a kind derives from this."""

    # The ``kind:`` values this spec answers to (the first is its name in help and docs).
    kinds: tuple[str, ...]
    config: type[C]
    # One line for the docs table and ``--help``.
    summary: str
    # The factory: a target from its validated config (often the target class itself).
    build: Callable[[C, TargetSettings], Target] | None = None
    # Instead, for a kind that stands in front of another agent: the target around the one built
    # for the agent its config wraps (``agent_under_test()``). Its selecting flag wraps whatever
    # the command line named so far (``probegate scan demo --guard URL``).
    wrap: Callable[[C, TargetSettings, Target], Target] | None = None
    flags: tuple[TargetFlag, ...] = ()
    # The kind may be named as ``probegate scan KIND`` (the bundled agents).
    positional: bool = False
    # Reachable as ``--endpoint URL --protocol KIND``.
    endpoint: bool = False
    # The ``--protocol`` names of an endpoint kind, each with the config values it sets
    # (``openai-responses`` is ``kind: openai`` with ``api: responses``); by default its kinds.
    protocols: Mapping[str, Mapping[str, Any]] | None = None
    # Answers live, so it can react to what it is sent (a recording cannot).
    live: bool = True
    # A standalone script (plain Python, no probegate) that sends one attempt's messages to
    # the agent again, for the agent's developers; None for a kind with no endpoint to send to.
    replay_script: Callable[[C, ReplayInput], str] | None = None

    def __post_init__(self) -> None:
        if (self.build is None) == (self.wrap is None):
            raise ValueError(f"target kind {self.kinds[0]!r}: give exactly one of build, wrap")

    @property
    def kind(self) -> str:
        return self.kinds[0]

    @property
    def wraps(self) -> bool:
        return self.wrap is not None

    def protocol_table(self) -> Mapping[str, Mapping[str, Any]]:
        """``--protocol`` name -> the config values it sets; empty for a kind with no endpoint."""
        if not self.endpoint:
            return {}
        return self.protocols if self.protocols is not None else {k: {} for k in self.kinds}
