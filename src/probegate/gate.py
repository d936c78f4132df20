"""The CI gates: ``--fail-under``, ``--fail-on`` and the baseline, and how they combine.

Each gate ends ``passed``, ``failed`` or ``undecided``, with one line saying why:

- ``--fail-under SCORE`` judges the score, and a score is only a claim about the agent when the
  scan is authoritative (docs/scoring.md): full mode, real evaluation, complete enough, no
  ASI category undertested. On any other scan the gate is undecided (exit 3) and lists the
  conditions that failed, whichever way the score points: a fast scan that happens to score 95
  has not shown that the agent is safe, and one that scores 40 has not measured it either.
- ``--fail-on SEVERITY`` fails on any unsuppressed finding at or above the severity. A confirmed
  finding is a fact in every mode, so this gate can fail on every scan. It passes only when
  every attempt of every probe that could have found something at or above the severity was
  judged: while one is unjudged or never started, "no finding" rests on missing evidence and
  the gate is undecided, naming those probes and the causes (docs/gating.md).
- the baseline gate fails on a regression (:mod:`probegate.baseline`), in every mode.

Combination: if any gate failed, exit 1; else if any gate is undecided, exit 3; else exit 0. A
certain failure wins over an undecided gate because it is already enough to block the change
and is what the developer must act on; the undecided gate is still reported alongside it.

A scan that judged nothing (it stopped early or every attempt was unjudged) decides no gate:
``--fail-on`` would pass only because nothing was looked at. That is exit 3 whether or not a gate
was asked for, because exit 0 promises "the scan ran".

Everything here is pure: no I/O, no clock, no printing; the caller prints ``result.reasons``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from probegate.errors import ExitCode, UsageError
from probegate.models.causes import JUDGE_CAUSES, Cause
from probegate.models.comparison import Comparison
from probegate.models.report import (
    Finding,
    ProbeResult,
    ScanReport,
    StopReason,
    most_severe_first,
)
from probegate.models.taxonomy import SEVERITY_RANK, Severity
from probegate.reports.digest import authority_reasons, group_unjudged, replies_read
from probegate.reports.headline import score_text
from probegate.scoring import missing_evidence

GateStatus = Literal["passed", "failed", "undecided"]

_LISTED = 5  # findings named in a reason before "and N more"


@dataclass(frozen=True)
class GateOutcome:
    """One gate's decision and the sentence that explains it."""

    gate: str
    status: GateStatus
    reason: str


@dataclass(frozen=True)
class GateResult:
    """Every gate's outcome and the one exit code they combine into."""

    exit_code: int
    outcomes: tuple[GateOutcome, ...]

    @property
    def passed(self) -> bool:
        return self.exit_code == ExitCode.PASSED

    @property
    def reasons(self) -> tuple[str, ...]:
        """One human-readable line per gate, e.g. ``fail-on high: FAILED: 2 findings ...``."""
        return tuple(f"{o.gate}: {o.status.upper()}: {o.reason}" for o in self.outcomes)


def evaluate_gates(
    report: ScanReport,
    *,
    fail_under: float | None,
    fail_on: Severity | None,
    comparison: Comparison | None,
) -> GateResult:
    """Decide every gate that was asked for and combine them into one exit code.

    ``report`` must already carry its suppressions (:func:`probegate.suppressions.
    apply_suppressions`); ``comparison`` is the result of :func:`probegate.baseline.compare`
    against the baseline, or ``None`` when no baseline was given.
    """
    if fail_under is not None and not (math.isfinite(fail_under) and 0 <= fail_under <= 100):
        raise UsageError(f"--fail-under must be a score between 0 and 100, got {fail_under}")

    outcomes: list[GateOutcome] = []
    unjudgeable = _nothing_judged(report)
    if unjudgeable is not None:
        outcomes.append(GateOutcome("scan", "undecided", unjudgeable))
    if fail_under is not None:
        outcomes.append(_fail_under(report, fail_under, judged=unjudgeable is None))
    if fail_on is not None:
        outcomes.append(_fail_on(report, fail_on, judged=unjudgeable is None))
    if comparison is not None:
        outcomes.append(_baseline(comparison, judged=unjudgeable is None))

    statuses = {o.status for o in outcomes}
    if "failed" in statuses:
        code = ExitCode.GATE_FAILED
    elif "undecided" in statuses:
        code = ExitCode.UNDECIDED
    else:
        code = ExitCode.PASSED
    return GateResult(exit_code=code, outcomes=tuple(outcomes))


def authority_failures(report: ScanReport) -> list[str]:
    """The authority conditions this scan failed (docs/scoring.md); empty if it passed.

    The report's own ``authority`` block is the primary source (the scorer knows which
    condition failed); the top-level seed flags are checked too, so a report whose flags
    disagree with its ``authority`` block can never pass ``--fail-under``.
    """
    failed = list(dict.fromkeys(report.authority.failed))
    if not report.mode_authoritative and "mode_authoritative" not in failed:
        failed.append("mode_authoritative")
    if not report.scoring_valid and "scoring_valid" not in failed:
        failed.append("scoring_valid")
    if not report.authority.authoritative and not failed:
        failed.append("authoritative")
    return failed


def _fail_under(report: ScanReport, fail_under: float, *, judged: bool) -> GateOutcome:
    gate = f"fail-under {fail_under:g}"
    if not judged:
        return GateOutcome(gate, "undecided", "nothing was judged, so there is no score")
    failed = authority_failures(report)
    if failed:
        return GateOutcome(
            gate,
            "undecided",
            f"the scan is not authoritative, so AIVSS {score_text(report.aivss)} cannot pass a "
            f"score gate: {'; '.join(authority_reasons(report))}",
        )
    if report.aivss is None:  # not_evaluated always fails authority; a report may still lie
        return GateOutcome(gate, "undecided", "the scan was too thin to score")
    best = report.sub_scores.get("best_case")
    if report.aivss < fail_under and best is not None and best >= fail_under:
        # The score counts attempts without a verdict as if vulnerable; had they been
        # resisted it would pass. Missing evidence is neither a pass nor a failure.
        missing = sum(r.unjudged + r.not_started for r in report.results)
        return GateOutcome(
            gate,
            "undecided",
            f"AIVSS {report.aivss} counts {missing} attempt(s) without a verdict as if "
            f"vulnerable; had they all been resisted it would be {best:g}, so the scan cannot "
            f"say which side of {fail_under:g} the agent is on (their causes and fixes are "
            "listed with the unjudged attempts; --judge SPEC decides those that need a judge)",
        )
    if report.aivss < fail_under:
        return GateOutcome(gate, "failed", f"AIVSS {report.aivss} is below {fail_under:g}")
    return GateOutcome(gate, "passed", f"AIVSS {report.aivss} is at least {fail_under:g}")


def _fail_on(report: ScanReport, fail_on: Severity, *, judged: bool) -> GateOutcome:
    gate = f"fail-on {fail_on.value}"
    threshold = SEVERITY_RANK[fail_on]
    hits = [
        f
        for f in report.findings
        if f.suppressed is None and SEVERITY_RANK[f.severity] >= threshold
    ]
    suppressed = sum(
        1 for f in report.findings if f.suppressed and SEVERITY_RANK[f.severity] >= threshold
    )
    note = f" ({suppressed} suppressed not counted)" if suppressed else ""
    if hits:
        expired = set(report.expired_suppressions)
        again = sum(1 for f in hits if f.fp in expired)
        if again:
            note += f" ({again} counted again: suppression expired)"
        return GateOutcome(
            gate,
            "failed",
            f"{len(hits)} unsuppressed finding(s) at or above {fail_on.value}: "
            f"{_names(hits)}{note}",
        )
    if not judged:
        return GateOutcome(gate, "undecided", "nothing was judged, so no finding could be seen")
    missing = _missing_evidence(report, threshold)
    if missing:
        return GateOutcome(gate, "undecided", _missing_text(report, missing, fail_on))
    return GateOutcome(gate, "passed", f"no unsuppressed finding at or above {fail_on.value}{note}")


def _missing_evidence(report: ScanReport, threshold: int) -> list[ProbeResult]:
    """The probes that could still reach ``threshold`` but were not judged in full.

    A probe already a finding cannot add one; probes that were not applicable or not run are
    not attempts, and an attack that never reached the agent says nothing either way. Every
    other probe of that severity or worse with an attempt that was not judged (unjudged, or
    never started) could have been a finding (docs/gating.md).
    """
    return [
        r
        for r in report.results
        if SEVERITY_RANK[r.severity] >= threshold
        and r.outcome not in ("vulnerable", "not_applicable", "not_run", "not_delivered")
        and (missing_evidence(r) or not r.attempts)
    ]


def _missing_text(report: ScanReport, probes: list[ProbeResult], fail_on: Severity) -> str:
    """Which probes left the gate open and why, by cause, with what decides them."""
    ids = {r.probe_id for r in probes}
    groups = group_unjudged(
        (u for u in report.unjudged if u.probe_id in ids and u.cause is not Cause.NOT_DELIVERED),
        replies_read=replies_read(report),
    )
    never = sorted(r.probe_id for r in probes if r.not_started or not r.attempts)
    attempts = sum(max(missing_evidence(r), 0 if r.attempts else 1) for r in probes)
    causes = [
        f"{g.count} {g.label} ({g.probes_text()})" + (f"; {g.fix}" if g.fix else "")
        for g in groups[:_LISTED]
    ]
    if len(groups) > _LISTED:
        causes.append(f"and {len(groups) - _LISTED} more causes")
    if never:
        shown = ", ".join(never[:3]) + (f" and {len(never) - 3} more" if len(never) > 3 else "")
        causes.append(f"never started, the scan stopped first ({shown})")
    judge = sum(g.count for g in groups if g.cause in JUDGE_CAUSES)
    decide = f"; --judge SPEC decides the {judge} that need a judge" if judge else ""
    return (
        f"no finding at or above {fail_on.value}, but {len(probes)} probe(s) that could find one "
        f"left {attempts} attempt(s) unjudged, so a pass would rest on missing evidence: "
        + "; ".join(causes)
        + decide
    )


def _baseline(comparison: Comparison, *, judged: bool) -> GateOutcome:
    gate = "baseline"
    if not judged:
        # A scan that judged nothing has no findings and no real score: a "score drop" against
        # it is an artefact, and "no new findings" is vacuous.
        return GateOutcome(gate, "undecided", "nothing was judged, so nothing was compared")
    if comparison.regression:
        return GateOutcome(gate, "failed", "; ".join(comparison.reasons))
    within = len(comparison.within_noise)
    return GateOutcome(
        gate,
        "passed",
        f"no regression against {comparison.baseline.scan_id} "
        f"({len(comparison.fixed)} fixed, {len(comparison.persisting)} persisting"
        + (f", {within} within noise" if within else "")
        + ")",
    )


def _nothing_judged(report: ScanReport) -> str | None:
    """Why no gate can be decided on this scan, or ``None`` when something was judged."""
    judged = sum(r.vulnerable + r.resisted for r in report.results)
    if judged or report.findings:
        return None
    unjudged = len(report.unjudged) + sum(r.unjudged for r in report.results)
    if report.stopped_reason == StopReason.EARLY_STOP:
        return "the scan stopped early before any attempt was judged"
    if unjudged:
        return f"none of the {unjudged} attempt(s) could be judged"
    return None


def _names(findings: list[Finding]) -> str:
    ordered = most_severe_first(findings)
    shown = ", ".join(f"{f.probe_id} [{f.severity.value}]" for f in ordered[:_LISTED])
    more = len(ordered) - _LISTED
    return f"{shown}, and {more} more" if more > 0 else shown
