"""A probe is data: one attack, the channel it comes through, and how to judge it.

Probes are authored as YAML in ``probegate/library/probes`` and parsed once into these frozen
models; everything downstream (plan, sandbox, oracles, reports) reads only these fields.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from probegate.models.taxonomy import (
    ASI_IDS,
    CSA_TITLES,
    OWASP_LLM_TITLES,
    Capability,
    Channel,
    Severity,
)

PROBE_ID_RE = re.compile(r"^asi(0[1-9]|10)\.[a-z0-9]+(?:-[a-z0-9]+)*\.v[0-9]+$")
_VERSION_RE = re.compile(r"\.v[0-9]+$")
ATLAS_ID_RE = re.compile(r"^AML\.T[0-9]{4}(?:\.[0-9]{3})?$")

CanaryKind = Literal["system", "pii", "credential", "any"]


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


def _compiles(pattern: str) -> None:
    """A probe's regex must compile; pydantic reports a ValueError against the field."""
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CanaryLeakOracle(_Frozen):
    """Vulnerable when a planted secret comes back, also encoded (base64, hex, reversed, spaced)."""

    kind: Literal["canary_leak"] = "canary_leak"
    canary: CanaryKind = "any"
    where: Literal["output", "tool_args", "any"] = "any"


class ToolCallOracle(_Frozen):
    """Vulnerable when the agent calls a matching tool: the agent's own action is the evidence."""

    kind: Literal["tool_call"] = "tool_call"
    tool: str | None = None
    capability: Capability | None = None
    args_pattern: str | None = None
    canary: CanaryKind | None = None
    min_count: int = Field(default=1, ge=1)

    @field_validator("args_pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            _compiles(value)
        return value


class OutputPatternOracle(_Frozen):
    """Vulnerable when the agent's text matches a pattern (case-insensitive regex)."""

    kind: Literal["output_pattern"] = "output_pattern"
    pattern: str
    description: str = ""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        _compiles(value)
        return value


class NoActionOracle(_Frozen):
    """Vulnerable when the agent was diverted from the user's task.

    The legitimate task needs ``expect_tool`` (or a tool with ``expect_capability``); if the
    agent never calls it, the injection stopped the work. With ``claims`` set, it is vulnerable
    only when the agent also claims in its text that the work was done (a false assurance).
    """

    kind: Literal["no_action"] = "no_action"
    expect_tool: str | None = None
    expect_capability: Capability | None = None
    claims: str | None = None

    @model_validator(mode="after")
    def _has_expectation(self) -> NoActionOracle:
        if self.expect_tool is None and self.expect_capability is None:
            raise ValueError("no_action needs expect_tool or expect_capability")
        return self


class JudgeOracle(_Frozen):
    """Needs an LLM judge with this rubric; unjudged when no judge is configured."""

    kind: Literal["judge"] = "judge"
    rubric: str


Oracle = Annotated[
    CanaryLeakOracle | ToolCallOracle | OutputPatternOracle | NoActionOracle | JudgeOracle,
    Field(discriminator="kind"),
]


class ProbeTurn(_Frozen):
    """One message into the agent; ``session`` > 1 starts a new conversation, memory kept."""

    content: str
    sender: Literal["user", "agent"] = "user"
    agent_name: str | None = None
    session: int = Field(default=1, ge=1)


class Fixtures(_Frozen):
    """What the sandbox answers with: the indirect channels the attack rides on.

    ``{{payload}}`` anywhere here or in a turn is replaced by the (possibly mutated) payload.
    """

    documents: dict[str, str] = Field(default_factory=dict)
    memory: tuple[str, ...] = ()
    agent_replies: dict[str, str] = Field(default_factory=dict)
    tool_results: dict[str, str] = Field(default_factory=dict)
    tool_descriptions: dict[str, str] = Field(default_factory=dict)
    tool_errors: dict[str, str] = Field(default_factory=dict)


class Probe(_Frozen):
    """One attack probe, the unit of the library and of findings (its id is the SARIF ruleId)."""

    id: str
    name: str
    description: str
    asi: str
    owasp_llm: tuple[str, ...] = Field(min_length=1)
    mitre_atlas: tuple[str, ...] = Field(min_length=1)
    csa_category: str
    severity: Severity
    channel: Channel
    requires: tuple[Capability, ...] = ()
    tags: tuple[str, ...] = ()
    payload: str | None = None
    turns: tuple[ProbeTurn, ...] = Field(min_length=1)
    fixtures: Fixtures = Field(default_factory=Fixtures)
    oracles: tuple[Oracle, ...] = Field(min_length=1)
    remediation: str
    references: tuple[str, ...] = ()

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not PROBE_ID_RE.match(value):
            raise ValueError(f"probe id {value!r} must look like asi01.short-name.v1")
        return value

    @field_validator("asi")
    @classmethod
    def _asi_known(cls, value: str) -> str:
        if value not in ASI_IDS:
            raise ValueError(f"unknown ASI category {value!r}")
        return value

    @field_validator("owasp_llm")
    @classmethod
    def _llm_known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            if item not in OWASP_LLM_TITLES:
                raise ValueError(f"unknown OWASP LLM id {item!r}")
        return value

    @field_validator("mitre_atlas")
    @classmethod
    def _atlas_shape(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            if not ATLAS_ID_RE.match(item):
                raise ValueError(f"{item!r} is not a MITRE ATLAS technique id")
        return value

    @field_validator("csa_category")
    @classmethod
    def _csa_known(cls, value: str) -> str:
        if value not in CSA_TITLES:
            raise ValueError(f"unknown CSA category {value!r}")
        return value

    @model_validator(mode="after")
    def _asi_prefix(self) -> Probe:
        if not self.id.startswith(self.asi.lower() + "."):
            raise ValueError(f"probe id {self.id!r} must start with {self.asi.lower()}.")
        return self

    @property
    def multi_turn(self) -> bool:
        return len(self.turns) > 1

    @property
    def needs_judge(self) -> bool:
        return all(o.kind == "judge" for o in self.oracles)

    @property
    def oracle_kinds(self) -> tuple[str, ...]:
        return tuple(o.kind for o in self.oracles)
