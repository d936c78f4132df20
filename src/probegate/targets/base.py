"""The seam between the engine and an agent.

A :class:`Target` opens a :class:`Session` per conversation; the engine sends one message at a
time and gets the agent's reply back with the tool calls it made already answered by the
:class:`~probegate.targets.sandbox.Sandbox`. Transport failures raise :class:`TransportError`
so the attempt ends unjudged with a reason, never resisted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from probegate.engine.limits import RequestGate
from probegate.models.report import TargetInfo
from probegate.models.taxonomy import Capability
from probegate.models.transcript import Turn
from probegate.targets.sandbox import Sandbox, ToolSpec

__all__ = ["Sandbox", "Session", "Target", "ToolSpec", "TransportError", "Usage"]


class TransportError(Exception):
    """The target could not be asked or its answer could not be read; the attempt is unjudged."""

    def __init__(self, reason: str, *, fatal: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        # fatal: the target as a whole is unusable (bad credentials, wrong URL), stop the scan.
        self.fatal = fatal


@dataclass
class Usage:
    """What a session cost, accumulated across its requests."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


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

    def open_session(self, sandbox: Sandbox, gate: RequestGate) -> Session:
        """A new conversation; every request to the agent must pass ``gate.acquire()`` first."""
        ...

    def close(self) -> None: ...


def capabilities_of(tools: list[ToolSpec]) -> set[Capability]:
    caps: set[Capability] = set()
    for tool in tools:
        caps |= tool.capabilities
    return caps
