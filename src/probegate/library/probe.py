"""A probe is data: one attack, the channel it comes through, and how to judge it.

Probes are authored as YAML in ``probegate/library/probes`` and parsed once into these frozen
models; everything downstream (plan, sandbox, oracles, reports) reads only these fields. The
``oracles`` field is the union of every registered oracle kind (``library/oracles``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from probegate.library.oracles import Oracle
from probegate.models.probe import ATLAS_ID_RE, PROBE_ID_RE, Fixtures, ProbeTurn
from probegate.models.taxonomy import (
    ASI_IDS,
    CSA_TITLES,
    OWASP_LLM_TITLES,
    Capability,
    Channel,
    Severity,
)


class Probe(BaseModel):
    """One attack probe, the unit of the library and of findings (its id is the baseline key;
    its :func:`~probegate.models.probe.stable_id` the SARIF rule id)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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
    # The benign text that replaces the payload in the attempt's control (docs/scoring.md,
    # "Controls"), before a sentence drawn for the scan (library/controls.py); when absent, the
    # drawn text alone.
    control: str | None = None
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
        return all(o.needs_judge() for o in self.oracles)

    @property
    def oracle_kinds(self) -> tuple[str, ...]:
        return tuple(o.kind for o in self.oracles)
