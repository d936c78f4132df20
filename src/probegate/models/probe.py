"""The parts of a probe that do not depend on its oracles: turns, fixtures, its id's shape.

The probe model itself (``probegate.library.probe.Probe``) is built on the oracle kinds, which
live in the library; the targets' sandbox reads the fixtures defined here, below both.
"""

from __future__ import annotations

import re
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


class Fixtures(_Frozen):
    """What the sandbox answers with: the indirect channels the attack rides on.

    :data:`PAYLOAD` anywhere here or in a turn is replaced by the (possibly mutated) payload.
    """

    documents: dict[str, str] = Field(default_factory=dict)
    memory: tuple[str, ...] = ()
    agent_replies: dict[str, str] = Field(default_factory=dict)
    tool_results: dict[str, str] = Field(default_factory=dict)
    tool_descriptions: dict[str, str] = Field(default_factory=dict)
    tool_errors: dict[str, str] = Field(default_factory=dict)
