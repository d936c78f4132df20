"""The result of comparing two scans: what ``compare --output json`` writes and a report keeps.

A :class:`Comparison` is data: :func:`probegate.baseline.compare` builds it, the gates read it,
the emitters render it, and a scan run with ``--baseline`` stores it in its report
(``comparison``), where the stored-report reader validates it like every other field
(docs/gating.md).

A finding is new, fixed or changed only when its probe's counts (vulnerable of judged
attempts) differ beyond chance at the comparison's ``level`` (probegate.chance); the other
findings present on one side only are ``within_noise``, shown with both counts. A comparison
written before counts were kept has ``level`` None: it decided on presence alone.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from probegate.models.taxonomy import Severity

COMPARISON_SCHEMA = "probegate-compare-v1"


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Counts(_Frozen):
    """A probe's attempts in one scan: how many were judged vulnerable, of how many judged
    (vulnerable or resisted; unjudged and not-delivered attempts are neither)."""

    vulnerable: int = Field(ge=0)
    judged: int = Field(ge=0)

    def text(self) -> str:
        """``3 of 30``: how every format shows a count."""
        return f"{self.vulnerable} of {self.judged}"


Change = Literal["", "worse", "better"]


class FindingRef(_Frozen):
    """What a comparison says about one finding; enough to render it without the report.

    ``baseline_counts`` and ``current_counts`` are its probe's counts on each side (None where
    that side has no result for the probe); the current side includes the confirm runs
    (``confirm_counts``, the part they added) when ``scan --confirm N`` ran them.
    ``p_value`` is the one-sided p-value of the change, adjusted for the comparison's other
    tests (Benjamini-Hochberg), in the direction the counts moved (None when they did not
    move, or the counts could not be tested);
    ``change`` says which way a finding in both scans moved beyond chance; and
    ``too_few_attempts`` marks a finding within noise whose numbers of attempts could not
    show a change at the level whatever their counts.
    """

    fp: str
    id: str
    probe_id: str
    name: str
    asi: str
    severity: Severity
    summary: str
    suppressed: bool = False
    suppression_reason: str | None = None
    baseline_counts: Counts | None = None
    current_counts: Counts | None = None
    confirm_counts: Counts | None = None
    p_value: float | None = None
    change: Change = ""
    too_few_attempts: bool = False


class ConfirmedProbe(_Frozen):
    """One probe ``scan --confirm N`` ran again: its counts in the scan's first run and in the
    confirm runs, and how many confirm attempts were planned (fewer are judged when some
    were unjudged, or the scan stopped first)."""

    probe_id: str
    first: Counts
    confirm: Counts
    planned: int = Field(ge=0)


class Confirmation(_Frozen):
    """What ``scan --confirm N`` did: the probes of the findings the baseline lacked (or
    held at a lower rate), each run ``runs`` more times, and why the confirm runs ended."""

    runs: int = Field(ge=1)
    probes: list[ConfirmedProbe]
    stopped_reason: str = "completed"


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
    # Decided on counts (docs/gating.md, "Sampled models"); defaults for comparisons written
    # before: decided on presence.
    level: float | None = None
    # How many tables of counts could show a rise at the level: the correction counts these.
    tests: int = 0
    changed: list[FindingRef] = Field(default_factory=list)
    within_noise: list[FindingRef] = Field(default_factory=list)
    # The score's change with the probes within noise counted as the baseline counted them:
    # what the score gate reads (None in a comparison written before).
    aivss_delta_beyond_noise: int | None = None
    confirmation: Confirmation | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``--output json``), field names as documented."""
        return self.model_dump(mode="json", by_alias=True)
