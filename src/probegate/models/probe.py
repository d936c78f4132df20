"""The parts of a probe that do not depend on its oracles: turns, fixtures, its id's shape.

The probe model itself (``probegate.library.probe.Probe``) is built on the oracle kinds, which
live in the library; the targets' sandbox reads the fixtures defined here, below both.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PROBE_ID_RE = re.compile(r"^asi(0[1-9]|10)\.[a-z0-9]+(?:-[a-z0-9]+)*\.v[0-9]+$")
_VERSION_RE = re.compile(r"\.v[0-9]+$")
ATLAS_ID_RE = re.compile(r"^AML\.T[0-9]{4}(?:\.[0-9]{3})?$")
# Where a probe's turns and fixtures take its payload (seed or mutated): the one spelling of
# the marker that the plan, the runner, the controls and the oracles look for.
PAYLOAD = "{{payload}}"


def stable_id(probe_id: str) -> str:
    """The probe id without its ``.vN`` suffix: the same for every version of one probe.

    It is the SARIF rule id (GitHub keys alerts on it, so a new version keeps them open) and a
    docs anchor that survives the bump.
    """
    return _VERSION_RE.sub("", probe_id)


def version_of(probe_id: str) -> int:
    """The ``N`` of a probe id's ``.vN`` suffix (0 when it has none)."""
    found = _VERSION_RE.search(probe_id)
    return int(found.group(0)[2:]) if found else 0


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ProbeTurn(_Frozen):
    """One message into the agent; ``session`` > 1 starts a new conversation, memory kept."""

    content: str
    sender: Literal["user", "agent"] = "user"
    agent_name: str | None = None
    session: int = Field(default=1, ge=1)


PeerState = Literal["completed", "input-required", "failed", "working"]


class PeerSkill(_Frozen):
    """A skill a peer agent's card advertises (a spoofed one may claim any authority)."""

    name: str
    description: str = ""


class PeerAgent(_Frozen):
    """How a peer agent presents itself and how its tasks end, beyond what it replies.

    Served over A2A (targets/a2a_peers/), the peer's agent card carries ``name``,
    ``description`` and ``skills`` and its tasks end in ``state``: ``input-required`` asks the
    caller for more (the peer keeps the conversation going: session smuggling), ``failed``
    reports its reply as the task's failure, ``working`` never completes. Through a delegation
    tool of the sandbox, the card's text is added to the tool's description and a ``failed``
    reply is the call's error.
    """

    name: str | None = None
    description: str | None = None
    skills: tuple[PeerSkill, ...] = ()
    state: PeerState = "completed"

    def texts(self) -> list[str]:
        """Every text of the card, in the order a reader meets them."""
        out = [t for t in (self.name, self.description) if t]
        for skill in self.skills:
            out += [skill.name, skill.description]
        return [t for t in out if t]

    def card_text(self) -> str:
        """The card as one text, for an agent that reads it as a tool's description."""
        parts = [f"Agent card: {self.name}." if self.name else "", self.description or ""]
        parts += [f"Skill {s.name}: {s.description}".strip() for s in self.skills]
        return " ".join(p for p in parts if p)

    def filled(self, fill: Callable[[str], str]) -> PeerAgent:
        """This card with ``fill`` applied to every text (the payload put in)."""
        return PeerAgent(
            name=fill(self.name) if self.name is not None else None,
            description=fill(self.description) if self.description is not None else None,
            skills=tuple(
                PeerSkill(name=fill(s.name), description=fill(s.description)) for s in self.skills
            ),
            state=self.state,
        )


class Fixtures(_Frozen):
    """What the sandbox answers with: the indirect channels the attack rides on.

    :data:`PAYLOAD` anywhere here or in a turn is replaced by the (possibly mutated) payload.
    ``peer_agents`` is keyed like ``agent_replies``: a peer's name, or ``*`` for any.
    """

    documents: dict[str, str] = Field(default_factory=dict)
    memory: tuple[str, ...] = ()
    agent_replies: dict[str, str] = Field(default_factory=dict)
    tool_results: dict[str, str] = Field(default_factory=dict)
    tool_descriptions: dict[str, str] = Field(default_factory=dict)
    tool_errors: dict[str, str] = Field(default_factory=dict)
    peer_agents: dict[str, PeerAgent] = Field(default_factory=dict)

    def texts(self) -> list[str]:
        """Every text of the fixtures (where a payload may ride), in a fixed order."""
        out = [*self.documents.values(), *self.memory, *self.agent_replies.values()]
        out += [*self.tool_results.values(), *self.tool_descriptions.values()]
        out += [*self.tool_errors.values()]
        for key in sorted(self.peer_agents):
            out += self.peer_agents[key].texts()
        return out

    def peer(self, name: str) -> PeerAgent | None:
        """The peer fixture for the agent named ``name`` (else the one for any agent)."""
        return self.peer_agents.get(name) or self.peer_agents.get("*")
