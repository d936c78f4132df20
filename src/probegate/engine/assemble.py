"""Attempts -> per-probe results -> findings -> the scan report.

Pure: the same attempts, plan and metadata give the same report. ``probegate merge`` uses the
same function on the union of shard attempts, so merged scores are recomputed from evidence,
never averaged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from probegate import __version__
from probegate.engine.controls import (
    SAME_WITHOUT_ATTACK,
    STANDS_WITHOUT_CONTROL,
    control_failed,
    fails_only_under_controls,
    left_unjudged_by_control,
    stood_without_control,
)
from probegate.engine.plan import JUDGE_FLAG, NotRun
from probegate.engine.probe_results import (
    probe_result,
)
from probegate.library.probe import Probe
from probegate.models.causes import CUT_SHORT, Cause
from probegate.models.report import (
    SCHEMA,
    Authority,
    Budget,
    ChannelDelivery,
    Completeness,
    Controls,
    Delivery,
    Engine,
    Finding,
    FindingControl,
    JudgeUsage,
    NotRunProbe,
    ProbeResult,
    ScanReport,
    SourceLocation,
    TargetInfo,
    UnjudgedAttempt,
    finding_fp,
    most_severe_first,
)
from probegate.models.store_layout import journal_ref, reproducer_ref
from probegate.models.taxonomy import Capability, Severity
from probegate.models.transcript import resolve_path
from probegate.models.verdict import Attempt, Outcome
from probegate.scoring import (
    FORMULA_VERSION,
    ScoreCard,
    authority,
    finding_aivss,
    score,
    tier_of,
    wilson_lower,
)

MAX_EVIDENCE = 5
_JUDGE_CONFIDENCE = {"oracle": 1.0, "judge": 0.8, "stub": 0.5}


@dataclass(frozen=True)
class ScanMeta:
    """What the report says about the scan besides its attempts."""

    scan_id: str
    created_at: str
    mode: str
    seed: int
    duration_seconds: float
    stopped_reason: str
    planned: int
    cut_short: int
    library_version: str
    target: TargetInfo
    engine: Engine
    budget: Budget | None
    selected_all: bool
    shard: str | None
    store_dir: str
    # The report's attacker agents (docs/report-format.md): the probes with a planned attempt,
    # and those of them with an attempt that never started.
    planned_probes: frozenset[str] = frozenset()
    unstarted_probes: frozenset[str] = frozenset()
    # Vulnerable verdicts were checked against controls (``--no-controls`` turns it off).
    controls: bool = True
    # What the LLM judge did and cost (None without --judge); its cost is the scan's too.
    judge: JudgeUsage | None = None
    # Control runs repeated because the agent could not be reached or read (engine/runner.py).
    control_reruns: int = 0
    # Per probe, its planned attempts that never started (the scan stopped first).
    not_started: Mapping[str, int] = field(default_factory=dict)


def _location(target: TargetInfo, attempt: Attempt) -> SourceLocation:
    """The tool entry that was misused, else the system prompt, else the target's definition.

    A finding whose evidence is not a tool call is about what the agent said or kept to
    itself: its instructions, the prompt, are what a fix changes.
    """
    if attempt.transcript is not None:
        data = attempt.transcript.model_dump(mode="json")
        for ev in attempt.evidence:
            parts = ev.path.split(".")
            if "tool_calls" in parts:
                idx = parts.index("tool_calls")
                try:
                    name = resolve_path(data, ".".join(parts[: idx + 2]) + ".name")
                except (KeyError, IndexError, ValueError):
                    continue
                if isinstance(name, str) and name in target.tool_locations:
                    return target.tool_locations[name]
    location = target.prompt or target.definition
    if location is None:
        raise ValueError("the target has no location: the scan anchors it before assembly")
    return location


def _control(attempt: Attempt, controls: Mapping[str, Attempt]) -> FindingControl | None:
    """What the finding's control showed: none of the finding's evidence, or the same leak of
    a planted secret (a leak stands whatever caused it); or nothing, when it could not be
    judged or did not run and the finding stands on certain evidence alone."""
    control = controls.get(attempt.control) if attempt.control else None
    if stood_without_control(attempt):
        return FindingControl(
            attempt_id=attempt.control,
            outcome="unjudged",
            summary=(
                f"{attempt.reason.removeprefix(STANDS_WITHOUT_CONTROL)}; a secret that came "
                "back or an action the attacker directed is a finding without one"
            ),
            transcript=control.transcript if control is not None else None,
        )
    if control is None:
        return None
    same = {e.fp for e in attempt.evidence} & {e.fp for e in control.evidence}
    if same:
        summary = (
            "without the attack the agent leaked the same secret: it leaks on its own, and a "
            "leak is a finding whatever caused it"
        )
    elif control.outcome is Outcome.VULNERABLE:
        summary = (
            "without the attack the agent showed other evidence, set aside; "
            "none of this finding's evidence appeared"
        )
    else:
        summary = "without the attack the agent showed none of this evidence"
    return FindingControl(
        attempt_id=control.attempt_id,
        outcome="vulnerable" if control.outcome is Outcome.VULNERABLE else "resisted",
        summary=summary,
        evidence=control.evidence[:MAX_EVIDENCE],
        transcript=control.transcript,
    )


def _finding(
    probe: Probe,
    result: ProbeResult,
    attempts: list[Attempt],
    meta: ScanMeta,
    capabilities: set[Capability],
    controls: Mapping[str, Attempt],
) -> Finding:
    vulnerable = [a for a in attempts if a.outcome is Outcome.VULNERABLE]
    first = vulnerable[0]
    judged = result.vulnerable + result.resisted
    best = [max((e.score for e in a.evidence), default=0.0) for a in vulnerable]
    weight = min(_JUDGE_CONFIDENCE.get(a.judged_by, 0.5) for a in vulnerable)
    confidence = round(weight * sum(best) / len(best), 3)
    fp = finding_fp(probe.id)
    ev = first.evidence[0] if first.evidence else None
    where = f" ({ev.detector} at {ev.path})" if ev else ""
    return Finding(
        id=f"PG-{fp[:12]}",
        probe_id=probe.id,
        asi=probe.asi,
        mitre_atlas=list(probe.mitre_atlas),
        csa_category=probe.csa_category,
        severity=result.severity,
        attempt_count=len(attempts),
        success=True,
        confidence=confidence,
        summary=(
            f"{probe.name}: vulnerable in {result.vulnerable} of {judged} judged attempts{where}"
        ),
        transcript_ref=journal_ref(meta.store_dir, meta.scan_id, first.attempt_id),
        trigger_prompt=first.trigger_prompt or None,
        pov_reference=reproducer_ref(meta.store_dir, meta.scan_id, probe.id),
        pov_reliability=wilson_lower(result.vulnerable, judged),
        created_at=meta.created_at,
        fp=fp,
        name=probe.name,
        owasp_llm=list(probe.owasp_llm),
        channel=probe.channel.value,
        successes=result.vulnerable,
        unjudged_attempts=result.unjudged,
        aivss_severity=finding_aivss(result.severity, capabilities),
        remediation=probe.remediation,
        evidence=first.evidence[:MAX_EVIDENCE],
        location=_location(meta.target, first),
        transcript=first.transcript,
        control=_control(first, controls),
    )


def assemble(
    probes: list[Probe],
    attempts: dict[str, Attempt],
    not_applicable: dict[str, str],
    meta: ScanMeta,
    controls: Mapping[str, Attempt] | None = None,
    not_run: Mapping[str, NotRun] | None = None,
) -> ScanReport:
    """The report of one scan; ``attempts`` carry their verdicts after their ``controls``;
    ``not_run`` the probes left out because the target does not expose what they need."""
    controls = controls or {}
    not_run = not_run or {}
    by_probe: dict[str, list[Attempt]] = defaultdict(list)
    for attempt in sorted(attempts.values(), key=lambda a: a.attempt_id):
        by_probe[attempt.probe_id].append(attempt)
    capabilities = {Capability(c) for c in meta.target.capabilities}
    results: list[ProbeResult] = []
    findings: list[Finding] = []
    for probe in sorted(probes, key=lambda p: p.id):
        mine = by_probe.get(probe.id, [])
        result = probe_result(
            probe,
            mine,
            not_applicable.get(probe.id),
            not_run.get(probe.id),
            capabilities=capabilities,
            not_started=meta.not_started.get(probe.id, 0),
        )
        results.append(result)
        if result.outcome == "vulnerable":
            findings.append(_finding(probe, result, mine, meta, capabilities, controls))
    all_attempts = list(attempts.values())
    return summarise(
        results,
        findings,
        [
            UnjudgedAttempt(
                attempt_id=a.attempt_id, probe_id=a.probe_id, reason=a.reason, cause=a.cause
            )
            for a in all_attempts
            if a.cause is not None
        ],
        _tally(all_attempts, controls, meta),
        meta,
        probes_selected=len(probes),
        probes_not_applicable=len(not_applicable),
    )


def _tally(attempts: list[Attempt], controls: Mapping[str, Attempt], meta: ScanMeta) -> Tally:
    """The totals of one scan's attempts and controls, in the form shards add up in."""
    cut_mid = [a for a in attempts if a.cause in CUT_SHORT]
    agents = meta.planned_probes | {a.probe_id for a in attempts}
    agents_cut = (meta.unstarted_probes | {a.probe_id for a in cut_mid}) & agents
    cost_usd, tokens = _spent([*attempts, *controls.values()], meta.judge)
    return Tally(
        completed=len(attempts),
        cut_mid_attempt=len(cut_mid),
        agents_planned=len(agents),
        agents_cut_short=len(agents_cut),
        cost_usd=cost_usd,
        tokens=tokens,
        evaluation_mode=_evaluation_mode(attempts),
        controls_run=len(controls),
        same_without_attack=sum(1 for a in attempts if a.reason == SAME_WITHOUT_ATTACK),
        controls_unjudged=sum(1 for a in attempts if left_unjudged_by_control(a)),
        stood_without_control=sum(1 for a in attempts if stood_without_control(a)),
        control_reruns=meta.control_reruns,
        controls_failed=sum(1 for c in controls.values() if control_failed(c)),
        attempts_failed=sum(1 for a in attempts if _failed(a)),
    )


def _spent(runs: list[Attempt], judge: JudgeUsage | None) -> tuple[float, int]:
    """Dollars and tokens: what the controls and the judge spent is part of what the scan
    spent."""
    cost_usd = sum(a.cost_usd for a in runs) + (judge.cost_usd if judge is not None else 0.0)
    tokens = sum(a.tokens for a in runs) + (judge.tokens if judge is not None else 0)
    return cost_usd, tokens


def _evaluation_mode(attempts: list[Attempt]) -> str:
    """``real``, ``stub`` or ``mixed``: which judges decided the verdicts."""
    judged_by = {a.judged_by for a in attempts if a.outcome is not Outcome.UNJUDGED}
    if judged_by == {"stub"}:
        return "stub"
    return "mixed" if "stub" in judged_by else "real"


def _failed(attempt: Attempt) -> bool:
    """An attempt the agent could not be reached or read for, not one the scan cut short."""
    return (
        attempt.outcome is Outcome.UNJUDGED
        and attempt.judged_by == "transport"
        and attempt.cause not in CUT_SHORT
    )


@dataclass(frozen=True)
class Tally:
    """Totals behind the report's aggregates; shards of one scan add up.

    Shards split a scan by probe, so attacker agents (probes) add up across them as attempts do.
    """

    completed: int
    cut_mid_attempt: int
    agents_planned: int
    agents_cut_short: int
    cost_usd: float
    tokens: int
    evaluation_mode: str
    controls_run: int = 0
    same_without_attack: int = 0
    controls_unjudged: int = 0
    stood_without_control: int = 0
    control_reruns: int = 0
    controls_failed: int = 0
    attempts_failed: int = 0


def summarise(
    results: list[ProbeResult],
    findings: list[Finding],
    unjudged: list[UnjudgedAttempt],
    tally: Tally,
    meta: ScanMeta,
    *,
    probes_selected: int,
    probes_not_applicable: int,
) -> ScanReport:
    """Scores, coverage, completeness and authority from per-probe results and totals.

    ``assemble`` calls it for one scan; ``probegate merge`` calls it on the union of shard
    results, so a merged score is recomputed from the evidence, never averaged.
    """
    results = sorted(results, key=lambda r: r.probe_id)
    findings = most_severe_first(findings)
    unjudged = sorted(unjudged, key=lambda u: u.attempt_id)
    capabilities = {Capability(c) for c in meta.target.capabilities}
    card = score(results)
    completeness = _completeness(tally, meta)
    delivery = delivery_of(results)
    auth = _authority_of(meta, tally, card, completeness.pct, unjudged, delivery)
    summary = {s.value: 0 for s in Severity}
    for f in findings:
        summary[f.severity.value] += 1
    cost = round(tally.cost_usd, 6)
    not_run = [
        NotRunProbe(probe_id=r.probe_id, reason=r.reason, enabled_by=r.enabled_by or JUDGE_FLAG)
        for r in results
        if r.outcome == "not_run"
    ]
    coverage = _coverage(
        results,
        len(unjudged),
        completeness,
        card.tested,
        not_run,
        applicable=(probes_selected, probes_selected - probes_not_applicable),
    )
    return ScanReport(
        **_about_the_run(meta),
        aivss=card.aivss,
        aivss_formula_version=FORMULA_VERSION,
        asi_scores=card.asi_scores,
        band=card.band,
        budget=_budget_spent(meta.budget, cost),
        completeness=completeness,
        cost_usd=cost,
        coverage=coverage,
        coverage_grade=card.coverage_grade,
        evaluation_mode=tally.evaluation_mode,
        findings=findings,
        findings_summary=summary,
        package_version=__version__,
        schema_=SCHEMA,
        scoring_valid=not (set(auth.failed) - {"mode_authoritative"}),
        sub_scores=card.sub_scores,
        tier=tier_of(capabilities),
        tokens_total=tally.tokens,
        undertested=card.undertested,
        authority=auth,
        results=results,
        controls=_controls(tally, meta),
        delivery=delivery,
        unjudged=unjudged,
        not_applicable=card.not_applicable,
        not_run=not_run,
        categories=card.categories,
    )


def _authority_of(
    meta: ScanMeta,
    tally: Tally,
    card: ScoreCard,
    completeness_pct: float,
    unjudged: list[UnjudgedAttempt],
    delivery: Delivery,
) -> Authority:
    """Whether the scan can carry a score gate (scoring.authority) from its totals. An attack
    that never reached the agent is not missing evidence of what it does with one: it counts
    against delivery, not against the unjudged share."""
    completed = tally.completed
    missing = sum(1 for u in unjudged if u.cause is not Cause.NOT_DELIVERED)
    return authority(
        mode=meta.mode,
        evaluation_mode=tally.evaluation_mode,
        completeness_pct=completeness_pct,
        unjudged_fraction=missing / completed if completed else 1.0,
        delivered_fraction=delivery.delivered / delivery.attempts if delivery.attempts else 1.0,
        undertested=card.undertested,
        selected_all=meta.selected_all,
        controls=meta.controls,
        not_evaluated=card.not_evaluated,
        categories=card.categories,
    )


def _about_the_run(meta: ScanMeta) -> dict[str, Any]:
    """The report's fields that say which run this was, as the scan recorded them."""
    return {
        "created_at": meta.created_at,
        "duration_seconds": meta.duration_seconds,
        "engine": meta.engine,
        "mode": meta.mode,
        "mode_authoritative": meta.mode == "full",
        "probe_library_version": meta.library_version,
        "scan_id": meta.scan_id,
        "stopped_reason": meta.stopped_reason,
        "target": meta.target,
        "seed": meta.seed,
        "shard": meta.shard,
        "judge": meta.judge,
    }


def _coverage(
    results: list[ProbeResult],
    unjudged: int,
    completeness: Completeness,
    tested: list[str],
    not_run: list[NotRunProbe],
    *,
    applicable: tuple[int, int],
) -> dict[str, Any]:
    """What the scan covered, in probes (``applicable``: selected, and of those applicable)
    and in attempts."""
    return {
        "probes_selected": applicable[0],
        "probes_applicable": applicable[1],
        "probes_not_run": len(not_run),
        "probes_judged": sum(1 for r in results if r.vulnerable + r.resisted > 0),
        "attempts_planned": completeness.turns_planned,
        "attempts_completed": completeness.turns_used,
        "attempts_vulnerable": sum(r.vulnerable for r in results),
        "attempts_resisted": sum(r.resisted for r in results),
        "attempts_unjudged": unjudged,
        "asi_tested": tested,
        "channels": _channel_counts(results),
    }


def _completeness(tally: Tally, meta: ScanMeta) -> Completeness:
    """How much of the plan completed: an attempt cut short mid-way did not."""
    completed = tally.completed
    planned = max(meta.planned, completed + meta.cut_short)
    cut_mid_attempt = tally.cut_mid_attempt
    pct = round(100.0 * (completed - cut_mid_attempt) / planned, 1) if planned else 0.0
    # An attacker agent is a probe, a turn one of its attempts (docs/report-format.md).
    return Completeness(
        agents_planned=tally.agents_planned,
        agents_completed=tally.agents_planned - tally.agents_cut_short,
        agents_cut_short=tally.agents_cut_short,
        turns_used=completed,
        turns_planned=planned,
        pct=pct,
    )


def _budget_spent(budget: Budget | None, cost: float) -> Budget | None:
    """The budget with what the scan spent, and its share of the cap when there is one."""
    if budget is None:
        return None
    budget = budget.model_copy(update={"spent_usd": cost})
    if budget.cap_usd:
        budget = budget.model_copy(update={"pct_of_cap": round(100.0 * cost / budget.cap_usd, 1)})
    return budget


def _controls(tally: Tally, meta: ScanMeta) -> Controls:
    """What the controls showed, and whether the agent fails only when one is sent."""
    return Controls(
        enabled=meta.controls,
        run=tally.controls_run,
        same_without_attack=tally.same_without_attack,
        unjudged=tally.controls_unjudged,
        stood_without_control=tally.stood_without_control,
        failed=tally.controls_failed,
        reruns=tally.control_reruns,
        attempts_failed=tally.attempts_failed,
        fails_only_under_controls=fails_only_under_controls(
            controls_failed=tally.controls_failed,
            controls_run=tally.controls_run,
            attempts_failed=tally.attempts_failed,
            attempts=tally.completed,
        ),
    )


def delivery_of(results: list[ProbeResult]) -> Delivery:
    """Whether each attempt's attack reached the agent, in all and by channel, from the
    probes' tallies (so shards of one scan add up: ``probegate merge``)."""
    by_channel: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in results:
        counts = by_channel[r.channel]
        counts[0] += r.attempts
        counts[1] += r.delivered
        counts[2] += r.not_delivered
    channels = {
        name: ChannelDelivery(attempts=a, delivered=d, not_delivered=n, failed=max(0, a - d - n))
        for name, (a, d, n) in sorted(by_channel.items())
        if a
    }
    total = [sum(getattr(c, k) for c in channels.values()) for k in ("attempts", "delivered")]
    not_delivered = sum(c.not_delivered for c in channels.values())
    return Delivery(
        attempts=total[0],
        delivered=total[1],
        not_delivered=not_delivered,
        failed=sum(c.failed for c in channels.values()),
        by_channel=channels,
    )


def _channel_counts(results: list[ProbeResult]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for r in results:
        if r.outcome != "not_applicable":
            counts[r.channel] += 1
    return dict(sorted(counts.items()))
