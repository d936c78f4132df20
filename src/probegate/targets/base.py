"""The seam between the engine and an agent.

A :class:`Target` opens a :class:`Session` per conversation; the engine sends one message at a
time and gets the agent's reply back with the tool calls it made already answered by the
:class:`~probegate.targets.sandbox.Sandbox`. Transport failures raise
:class:`~probegate.transport.usage.TransportError` so the attempt ends unjudged with a reason,
never resisted.
"""

from __future__ import annotations

from typing import Protocol

from probegate.models.report import TargetInfo
from probegate.models.taxonomy import Capability
from probegate.models.tools import ToolSpec
from probegate.models.transcript import Turn
from probegate.targets.sandbox import Sandbox
from probegate.transport.limiter import RequestLimiter
from probegate.transport.usage import Usage


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

    def system_canaries(self) -> bool:
        """True when probegate controls the system prompt and can plant canaries in it."""
        ...

    def open_session(self, sandbox: Sandbox, limiter: RequestLimiter) -> Session:
        """A new conversation; every request to the agent must pass ``limiter.acquire()``."""
        ...

    def close(self) -> None: ...


def capabilities_of(tools: list[ToolSpec]) -> set[Capability]:
    caps: set[Capability] = set()
    for tool in tools:
        caps |= tool.capabilities
    return caps
