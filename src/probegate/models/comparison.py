"""The result of comparing two scans: what ``compare --output json`` writes and a report keeps.

A :class:`Comparison` is data: :func:`probegate.baseline.compare` builds it, the gates read it,
the emitters render it, and a scan run with ``--baseline`` stores it in its report
(``comparison``), where the stored-report reader validates it like every other field
(docs/gating.md).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from probegate.models.taxonomy import Severity

COMPARISON_SCHEMA = "probegate-compare-v1"


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FindingRef(_Frozen):
    """What a comparison says about one finding; enough to render it without the report."""

    fp: str
    id: str
    probe_id: str
    name: str
    asi: str
    severity: Severity
    summary: str
    suppressed: bool = False
    suppression_reason: str | None = None


class ReportRef(_Frozen):
    """Which scan a side of the comparison is."""

    scan_id: str
    schema_: str = Field(alias="schema")
    mode: str
    probe_library_version: str
    # None for a scan too thin to score (not_evaluated).
    aivss: int | None
    band: str
    created_at: str

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class AsiDelta(_Frozen):
    """One ASI category on both sides: its score (``None`` where a side did not score it),
    its state (``tested``, ``undertested``, ``not_applicable``, ``not_selected``; "" in a
    comparison written before states were kept) and its attempts with no verdict."""

    asi: str
    baseline: float | None
    current: float | None
    delta: float | None
    baseline_state: str = ""
    current_state: str = ""
    baseline_unjudged: int = 0
    current_unjudged: int = 0


class Comparison(_Frozen):
    """The result of :func:`compare`: every bucket, the deltas, and whether it regressed."""

    schema_: str = Field(default=COMPARISON_SCHEMA, alias="schema")
    baseline: ReportRef
    current: ReportRef
    tolerance: float
    mismatch: list[str]
    common_probes_only: bool
    new: list[FindingRef]
    new_suppressed: list[FindingRef]
    fixed: list[FindingRef]
    persisting: list[FindingRef]
    unconfirmed: list[FindingRef]
    not_compared: list[FindingRef]
    aivss_delta: int
    score_gated: bool
    score_regression: bool
    asi_deltas: list[AsiDelta]
    regression: bool
    reasons: list[str]
    notes: list[str]

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``--output json``), field names as documented."""
        return self.model_dump(mode="json", by_alias=True)
