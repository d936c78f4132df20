"""The scan report, ``schema: probegate-scan-v1``.

Every top-level field and every Finding field of the ``agentguardian-scan-v1`` report format
is present with its meaning there, so a consumer written against that field list reads this
report unchanged; the field list and probegate's additions are in ``docs/report-format.md``.
The report is the one thing every emitter reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from probegate.canonical import Items
from probegate.models.agreement import Agreement
from probegate.models.causes import Cause
from probegate.models.comparison import Comparison
from probegate.models.sections import GuardSummary, McpSummary, PeersSummary, ProxySummary
from probegate.models.taxonomy import ASI_IDS, SEVERITY_RANK, AsiId, Severity
from probegate.models.transcript import Transcript
from probegate.models.verdict import Evidence

SCHEMA = "probegate-scan-v1"


def finding_fp(probe_id: str) -> str:
    """The finding's stable fingerprint: the baseline and SARIF key.

    A finding is a probe that succeeded against this agent, so the fingerprint depends on the
    probe id alone: stable across modes, seeds, targets' file paths and report formats.
    """
    return hashlib.sha256(f"finding:v1:{probe_id}".encode()).hexdigest()[:32]


Band = Literal["EXCELLENT", "GOOD", "WARNING", "POOR", "CRITICAL", "not_evaluated"]


class Mode(StrEnum):
    """How much of the library a scan runs (docs/scoring.md, "Modes"); only ``full`` can be
    authoritative."""

    FAST = "fast"  # every applicable probe once
    SMART = "smart"  # then mutated variants where the agent resisted
    FULL = "full"  # every probe x every mutator x --repeat


class StopReason(StrEnum):
    """Why a scan's run ended (the report's ``stopped_reason``)."""

    COMPLETED = "completed"
    BUDGET = "budget"  # --budget-usd or --max-requests
    DEADLINE = "deadline"  # --deadline
    EARLY_STOP = "early_stop"  # the target could not be judged
    CANCELLED = "cancelled"  # interrupted (Ctrl-C, SIGTERM)


class _Model(BaseModel):
    # A report holds finite numbers only: its reader refuses others (models/stored.py), and
    # its writer would write them as null (probegate/canonical.py). Subclasses inherit this.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Budget(_Model):
    cap_usd: float | None = None
    spent_usd: float = 0.0
    pct_of_cap: float | None = None
    soft_stop_fraction: float = 0.8
    finalise_truncated: bool = False
    max_requests: int | None = None
    requests_used: int = 0


class Completeness(_Model):
    """How much of the planned attack ran, in the report format's words (docs/report-format.md).

    An attacker agent is one probe of the plan (the library's attacker for one scenario), and
    one of its turns is one attempt, as a finding's ``attempt_count`` counts them. An agent is
    cut short when any of its attempts never started or was cut off mid-attempt; ``pct`` is the
    share of planned attempts that ran to the end.
    """

    agents_planned: int
    agents_completed: int
    agents_cut_short: int
    turns_used: int
    turns_planned: int
    pct: float


class Engine(_Model):
    commander: str = "probegate"
    attacker: str = "library"
    evaluator: str = "oracle"


class SourceLocation(_Model):
    """A file of the repository (relative to its root) and a line: where a finding points in
    SARIF and in annotations."""

    path: str
    line: int = Field(default=1, ge=1)


class TargetInfo(_Model):
    """What was scanned: the target's kind and its reference (``ref``).

    The kind is written as ``mode`` in the JSON, the field name report consumers already read
    (docs/report-format.md); in code it is called what it is.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    kind: str = Field(alias="mode")
    ref: str
    inferred_goal: str = ""
    profile_source: str = ""
    capabilities: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    # Where findings go that neither a tool entry nor the prompt explains: the file defining
    # the target, else the scan's anchor (the workflow running it, or its stored report). A
    # target reports None when no file of the repository defines it; the scan fills it in.
    definition: SourceLocation | None = None
    tool_locations: dict[str, SourceLocation] = Field(default_factory=dict)
    prompt: SourceLocation | None = None  # the system-prompt file
    # The rest of the agent's surface, as the scan saw it: the scan sets it from the plan's
    # exposure (scan/planning.py, with_surface) before the report is written.
    # How many real secrets the config declares (target.canaries): a count, never a value.
    declared_secrets: int = 0
    # probegate planted synthetic secrets in what it controls (the system prompt, the tools).
    planted_secrets: bool = False
    # The agent's tool calls were answered by probegate's sandbox (its loop, context or MCP).
    uses_sandbox: bool = True


class Suppression(_Model):
    reason: str
    expires: str | None = None


class FindingControl(_Model):
    """The control of a finding's first vulnerable attempt: the same conversation, same seed,
    with the attack neutralised (docs/scoring.md, "Controls"). It showed none of the finding's
    evidence, or the same leak of a planted secret (a leak stands whatever caused it);
    ``evidence`` is what it showed. ``unjudged``: it could not be judged or did not run, and
    the finding stands on certain evidence alone (a secret, an attacker-directed action)."""

    attempt_id: str
    outcome: Literal["vulnerable", "resisted", "unjudged"]
    summary: str
    evidence: list[Evidence] = Field(default_factory=list)
    transcript: Transcript | None = None


class Finding(_Model):
    """A probe with at least one vulnerable attempt."""

    id: str
    probe_id: str
    asi: AsiId
    mitre_atlas: list[str]
    csa_category: str
    severity: Severity
    attempt_count: int
    success: bool
    confidence: float
    summary: str
    transcript_ref: str | None = None
    trigger_prompt: str | None = None
    pov_reference: str | None = None
    pov_reliability: float | None = None
    created_at: str
    # additions
    fp: str
    name: str
    owasp_llm: list[str]
    channel: str
    successes: int
    unjudged_attempts: int = 0
    aivss_severity: float
    remediation: str
    evidence: list[Evidence] = Field(default_factory=list)
    location: SourceLocation
    transcript: Transcript | None = None
    # Absent when the scan ran with --no-controls.
    control: FindingControl | None = None
    suppressed: Suppression | None = None


# ``undecided``: resisted where it was judged, but some attempts could not be (never shown as
# resisted); ``not_delivered``: attempts ran, and the attack reached the agent in none of them.
ProbeOutcome = Literal[
    "vulnerable",
    "resisted",
    "undecided",
    "unjudged",
    "not_delivered",
    "not_applicable",
    "not_run",
]


def finding_rank(finding: Finding) -> tuple[bool, int, float, str, str]:
    """The one order findings are read in, everywhere they are listed (the report, the
    closing lines, every format, the gate's message, the Action's annotations): accepted
    (suppressed) ones last, then most severe first, then the higher AIVSS severity, then by
    probe and id so that equal findings keep a stable order."""
    return (
        finding.suppressed is not None,
        -SEVERITY_RANK[finding.severity],
        -finding.aivss_severity,
        finding.probe_id,
        finding.id,
    )


def most_severe_first(findings: Iterable[Finding]) -> list[Finding]:
    """``findings`` in :func:`finding_rank` order."""
    return sorted(findings, key=finding_rank)


class ProbeResult(_Model):
    """Per-probe tally: JUnit's testcases and the per-ASI denominators come from these."""

    probe_id: str
    name: str
    asi: AsiId
    severity: Severity
    channel: str
    outcome: ProbeOutcome
    attempts: int = 0
    vulnerable: int = 0
    resisted: int = 0
    unjudged: int = 0
    # Attempts resisted because their control showed the same evidence without the attack.
    same_without_attack: int = 0
    # Planned attempts that never started because the scan stopped first: missing evidence,
    # counted like unjudged attempts by the score and the gates (docs/scoring.md).
    not_started: int = 0
    # Attempts whose attack reached the agent, and those of the unjudged ones it never
    # reached because the agent answered without reading it (docs/scoring.md, "Delivery"):
    # not missing evidence of what it does with an attack, and never a pass.
    delivered: int = 0
    not_delivered: int = 0
    reason: str = ""
    # What would let a probe that did not run run: for ``not_applicable``, the capabilities
    # the target's tools lack; for ``not_run``, the setting that enables it.
    missing: list[str] = Field(default_factory=list)
    enabled_by: str = ""


class NotRunProbe(_Model):
    """A probe the scan did not plan because nothing configured could decide it."""

    probe_id: str
    reason: str
    # The flag that would let it run (``--judge SPEC``).
    enabled_by: str


class UnjudgedAttempt(_Model):
    attempt_id: str
    probe_id: str
    reason: str
    # What code groups and gates it by (models/causes.py); the reason is for people.
    cause: Cause


class Controls(_Model):
    """What the controls did (docs/scoring.md, "Controls").

    ``run``: controls that ran (one per probe and repeat with a vulnerable attempt);
    ``same_without_attack``: vulnerable attempts whose control showed the same evidence, so
    resisted; ``unjudged``: vulnerable attempts left unjudged because their control could not
    be judged or did not run; ``stood_without_control``: vulnerable attempts kept on certain
    evidence (a secret, an attacker-directed action) although their control could not be
    judged or did not run; ``failed``: controls that could not be judged, after their retries;
    ``reruns``: control runs repeated because the agent could not be reached or read (at most
    two per control, counted by the run that made them); ``attempts_failed``: attempts (not
    controls) that could not reach or read the agent; ``fails_only_under_controls``: the agent
    failed under its controls while its attempts succeeded, as an agent that recognises its
    controls would.
    """

    enabled: bool
    run: int = 0
    same_without_attack: int = 0
    unjudged: int = 0
    stood_without_control: int = 0
    failed: int = 0
    reruns: int = 0
    attempts_failed: int = 0
    fails_only_under_controls: bool = False


class JudgeReasons(_Model):
    """The cases put to the judge, by why (docs/judge.md, "What goes to the judge"); each is
    one verdict, answered by a request or from the cache.

    ``rubric``: a probe only a judge can decide; ``ambiguous``: a match of the bait the rules
    could not read; ``relayed``: one the rules read as relayed; ``set_aside``: one the rules set
    aside by its words (a negation, a condition).
    """

    rubric: int = 0
    ambiguous: int = 0
    relayed: int = 0
    set_aside: int = 0

    def plus(self, other: JudgeReasons) -> JudgeReasons:
        return JudgeReasons(
            **{name: getattr(self, name) + getattr(other, name) for name in type(self).model_fields}
        )


class JudgeUsage(_Model):
    """What the LLM judge did and cost in this scan (docs/judge.md, "What it costs").

    ``calls``: requests for verdicts (an answer asked for again counts again); ``cached``:
    verdicts taken from the judge cache instead; ``calibration_calls``: requests of the
    calibration the judge passed before the scan used it (0 once a judge has passed);
    ``by_reason``: the cases put to it, by why.
    """

    spec: str
    calls: int = 0
    cached: int = 0
    calibration_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    by_reason: JudgeReasons = Field(default_factory=JudgeReasons)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def plus(self, other: JudgeUsage) -> JudgeUsage:
        """Both together: a resumed scan's runs, or the shards of a merged one."""
        return JudgeUsage(
            spec=self.spec,
            calls=self.calls + other.calls,
            cached=self.cached + other.cached,
            calibration_calls=self.calibration_calls + other.calibration_calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=round(self.cost_usd + other.cost_usd, 6),
            by_reason=self.by_reason.plus(other.by_reason),
        )


CategoryStatus = Literal["tested", "undertested", "not_applicable", "not_selected"]


class CategoryState(_Model):
    """One ASI category of the scan: every report has all ten (docs/scoring.md, "Categories").

    ``score`` is the category's score when it is tested, else None; ``value`` is what it
    weighs in the overall score (the same formula: an undertested category's findings and
    unjudged attempts still cost, though it shows no score). ``reason`` says, for a category
    that is not tested, why and what would change it; ``enabled_by`` lists what would bring
    probes in to a category none of whose probes could run (capabilities, settings).
    ``unjudged`` counts the attempts that ran and could not be judged; ``not_started`` those
    the scan stopped before they started (an interrupt, a budget): "not run", never unjudged.
    """

    state: CategoryStatus
    score: float | None = None
    value: float | None = None
    reason: str = ""
    probes: int = 0
    ran: int = 0
    judged: int = 0
    unjudged: int = 0
    findings: int = 0
    enabled_by: list[str] = Field(default_factory=list)
    # Attempts whose attack reached the agent, and those it answered without reading it.
    delivered: int = 0
    not_delivered: int = 0
    not_started: int = 0


class ChannelDelivery(_Model):
    """One channel's attempts by whether their attack reached the agent: ``delivered``;
    ``not_delivered``, the agent answered without reading it; ``failed``, the attempt failed
    first (its cause is with the unjudged attempts)."""

    attempts: int = 0
    delivered: int = 0
    not_delivered: int = 0
    failed: int = 0


class Delivery(ChannelDelivery):
    """Whether each attempt's attack reached the agent, in all and by channel (the user's
    message, a tool result, a document, memory, another agent's message, a tool
    description): docs/scoring.md, "Delivery". Controls carry no attack and are not counted."""

    by_channel: dict[str, ChannelDelivery] = Field(default_factory=dict)


class Authority(_Model):
    """Why the score is or is not authoritative (docs/scoring.md)."""

    authoritative: bool
    failed: list[str] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)


# The report's lists that grow with the scan, which :meth:`ScanReport.to_fields` keeps lazy.
_LONG_LISTS = ("findings", "results", "unjudged")


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True)


class ScanReport(_Model):
    # None when the scan is too thin to score (band ``not_evaluated``; docs/scoring.md).
    aivss: int | None
    aivss_formula_version: str
    asi_scores: dict[str, float]
    band: Band
    budget: Budget | None = None
    completeness: Completeness | None = None
    cost_usd: float = 0.0
    coverage: dict[str, Any]
    coverage_grade: str
    created_at: str
    duration_seconds: float
    engine: Engine
    evaluation_mode: Literal["real", "stub", "mixed"]
    findings: list[Finding]
    findings_summary: dict[str, int]
    mode: Mode
    mode_authoritative: bool
    package_version: str
    probe_library_version: str
    scan_id: str
    schema_: str = Field(default=SCHEMA, alias="schema")
    scoring_valid: bool
    signatures: dict[str, Any] | None = None
    stopped_reason: StopReason
    sub_scores: dict[str, float]
    target: TargetInfo
    tier: str
    tokens_total: int
    undertested: list[str]
    # additions
    authority: Authority
    results: list[ProbeResult]
    controls: Controls
    delivery: Delivery | None = None
    unjudged: list[UnjudgedAttempt]
    not_applicable: list[str]
    not_run: list[NotRunProbe] = Field(default_factory=list)
    # Every ASI category with its state: all ten, in every report (docs/scoring.md).
    categories: dict[AsiId, CategoryState]
    seed: int
    shard: str | None = None
    # Set by a scan run with ``--baseline``: what changed against it (docs/gating.md).
    comparison: Comparison | None = None
    # What the LLM judge did and cost; absent without --judge.
    judge: JudgeUsage | None = None
    # What a target kind adds (models/sections.py); absent from the JSON of every other kind.
    guard: GuardSummary | None = None
    mcp: McpSummary | None = None
    proxy: ProxySummary | None = None
    # What the agent did with the A2A peers probegate served it (target.peers).
    peers: PeersSummary | None = None
    # A scan of an external benchmark's suites (--suite agentdojo): probegate's verdicts against
    # the benchmark's own checks (models/agreement.py, docs/agentdojo.md).
    agreement: Agreement | None = None
    stale_suppressions: list[str] = Field(default_factory=list)
    expired_suppressions: list[str] = Field(default_factory=list)
    # Never serialised: set by ``models.stored.load_report`` when it mapped a foreign report (the
    # agentguardian-scan-v1 shape) and had to guess or drop something, so a comparison can say
    # what it could not match.
    import_notes: list[str] = Field(default_factory=list, exclude=True)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_fields(self) -> dict[str, Any]:
        """:meth:`to_dict` with the lists that grow with the scan (findings, per-probe results,
        unjudged attempts) as :class:`~probegate.canonical.Items`, each item dumped only when a
        writer reaches it (canonical.write_pretty, write_canonical): the JSON values of a
        10,000-finding report are never all held at once."""
        fields = self.to_dict(exclude=set(_LONG_LISTS))
        for name in _LONG_LISTS:
            fields[name] = Items(getattr(self, name), _dump)
        return fields

    def to_dict(self, *, exclude: set[str] | None = None) -> dict[str, Any]:
        """The JSON form (docs/report-format.md); ``signatures`` omitted while unsigned.

        ``exclude``: fields left out (by name), which a writer dumps item by item instead.
        """
        data = self.model_dump(mode="json", by_alias=True, exclude=exclude)
        for optional in (
            "signatures",
            "comparison",
            "guard",
            "mcp",
            "proxy",
            "peers",
            "judge",
            "agreement",
        ):
            if data.get(optional) is None:
                data.pop(optional, None)
        return data

    @field_validator("categories")
    @classmethod
    def _every_category(cls, value: dict[str, CategoryState]) -> dict[str, CategoryState]:
        missing = [asi for asi in ASI_IDS if asi not in value]
        if missing:
            raise ValueError(f"every ASI category has its state; missing {', '.join(missing)}")
        return value
