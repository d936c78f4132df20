"""The peers a config declares (``target.peers``) and the placeholders that name them.

An agent under test that calls other agents over A2A is pointed at probegate instead, one URL
per peer it calls: ``{{a2a_url}}`` is the first declared peer's, ``{{a2a_url.NAME}}`` the one
named ``NAME`` (a python agent reads ``context.a2a_url`` and ``context.a2a_urls``). Each peer
stands in the agent's tool list as a delegation tool named ``a2a:NAME``: planning sees that the
agent delegates, the oracles judge every message it sends a peer as a call of that tool (a
secret sent to a peer is a secret sent out, library/oracles/base.py ``EGRESS_CHANNELS``).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from probegate.errors import UsageError
from probegate.models.taxonomy import Capability
from probegate.models.tools import ToolSpec
from probegate.targets.sandbox import PEER_TOOL_PREFIX
from probegate.transport.a2a import Skill, Wire

# ``{{a2a_url}}`` or ``{{a2a_url.NAME}}``: the group is the peer's name, or empty.
A2A_URL = re.compile(r"\{\{\s*a2a_url(?:\.([A-Za-z0-9_-]+))?\s*\}\}")
DEFAULT_PEER = "peer"
_NAME = r"^[A-Za-z0-9_-]{1,64}$"


Version = Literal["1.0", "0.3"]


def _both() -> list[Version]:
    return ["1.0", "0.3"]


class PeerSkillConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    id: str | None = None
    tags: list[str] = Field(default_factory=list)


class PeerConfig(BaseModel):
    """One agent the agent under test calls over A2A, as probegate presents it: the card its
    real counterpart would serve (a probe may spoof any of it), in the versions it speaks."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=_NAME)
    description: str = "A partner agent."
    skills: list[PeerSkillConfig] = Field(default_factory=list)
    versions: list[Version] = Field(default_factory=_both, min_length=1)

    def wires(self) -> tuple[Wire, ...]:
        return tuple(Wire(v) for v in dict.fromkeys(self.versions))

    def card_skills(self) -> tuple[Skill, ...]:
        return tuple(
            Skill(
                id=s.id or re.sub(r"[^a-z0-9]+", "-", s.name.lower()).strip("-") or "skill",
                name=s.name,
                description=s.description,
                tags=tuple(s.tags),
            )
            for s in self.skills
        )


def peer_tool(peer: PeerConfig) -> ToolSpec:
    """The delegation tool that stands for ``peer`` in the agent's tool list."""
    return ToolSpec(
        name=f"{PEER_TOOL_PREFIX}{peer.name}",
        description=peer.description,
        capabilities=frozenset({Capability.DELEGATION}),
        parameters={
            "type": "object",
            "properties": {"agent": {"type": "string"}, "message": {"type": "string"}},
        },
    )


def named_in(template: Any) -> list[str | None]:
    """Each peer a JSON-like template names (None for plain ``{{a2a_url}}``), in order."""
    found: list[str | None] = []
    if isinstance(template, dict):
        for value in template.values():
            found += named_in(value)
    elif isinstance(template, list):
        for item in template:
            found += named_in(item)
    elif isinstance(template, str):
        found += [m.group(1) for m in A2A_URL.finditer(template)]
    return found


def peers_for(declared: list[PeerConfig], named: list[str | None], where: str) -> list[PeerConfig]:
    """The peers to serve: those declared, or the one default peer a template asks for.

    A template naming a peer no one declared is a usage error: the agent would be told a URL
    that answers nothing.
    """
    if declared:
        names = [p.name for p in declared]
        if len(set(names)) != len(names):
            raise UsageError("target.peers: a peer name is declared twice")
    elif named:
        declared = [PeerConfig(name=DEFAULT_PEER)]
    known = {p.name for p in declared}
    for name in named:
        if name is not None and name not in known:
            shown = ", ".join(sorted(known)) or "none"
            raise UsageError(
                f"{where} names the A2A peer {{{{a2a_url.{name}}}}}, but target.peers declares "
                f"no peer {name!r} (declared: {shown})"
            )
    return declared
