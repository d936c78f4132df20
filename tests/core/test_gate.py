"""The gates and how they combine into one exit code (docs/gating.md, "The gates", "Exit codes")."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from probegate.baseline import compare
from probegate.errors import UsageError
from probegate.gate import GateResult, authority_failures, evaluate_gates
from probegate.models.causes import Cause
from probegate.models.comparison import Comparison
from probegate.models.report import Authority, ProbeResult, ScanReport, UnjudgedAttempt
from probegate.models.taxonomy import Severity
from probegate.suppressions import SuppressionEntry, apply_suppressions
from tests.factories import authoritative, finding, probe_of, scan, suppressed, with_counts

TODAY = dt.date(2026, 6, 1)


def _gate(
    report: ScanReport,
    *,
    fail_under: float | None = None,
    fail_on: Severity | None = None,
    comparison: Comparison | None = None,
) -> GateResult:
    return evaluate_gates(report, fail_under=fail_under, fail_on=fail_on, comparison=comparison)


def test_no_gate_asked_passes() -> None:
    result = _gate(scan([finding(1, Severity.CRITICAL)]))
    assert result.exit_code == 0
    assert result.outcomes == ()


# --------------------------------------------------------------------------- --fail-under


def test_fail_under_passes_on_an_authoritative_scan_at_or_above_the_score() -> None:
    report = authoritative(scan(resisted=[probe_of(1)], aivss=90))
    result = _gate(report, fail_under=90)
    assert result.exit_code == 0, result.reasons
    assert result.outcomes[0].status == "passed"


def test_fail_under_fails_on_an_authoritative_scan_below_the_score() -> None:
    report = authoritative(scan([finding(1)], aivss=89))
    result = _gate(report, fail_under=90)
    assert result.exit_code == 1
    assert "89 is below 90" in result.reasons[0]


@pytest.mark.parametrize(
    ("best_case", "code", "status"), [(95.0, 3, "undecided"), (85.0, 1, "failed")]
)
def test_fail_under_is_decided_only_where_missing_evidence_cannot_change_it(
    best_case: float, code: int, status: str
) -> None:
    """The score counts attempts without a verdict as if vulnerable (it never rises because
    evidence went missing); had they all been resisted it would be the best case. Below the
    bar either way is a failure; below only because of them is undecided, never a failure."""
    report = authoritative(scan(resisted=[probe_of(1)], aivss=70))
    report = report.model_copy(
        update={
            "sub_scores": {**report.sub_scores, "best_case": best_case},
            "results": [r.model_copy(update={"unjudged": 2}) for r in report.results],
        }
    )
    result = _gate(report, fail_under=90)
    assert result.exit_code == code, result.reasons
    assert result.outcomes[0].status == status
    if status == "undecided":
        assert "2 attempt(s) without a verdict" in result.reasons[0]
        assert "95" in result.reasons[0]


@pytest.mark.parametrize("aivss", [10, 95])
def test_fail_under_is_undecided_on_a_fast_scan_whatever_the_score(aivss: int) -> None:
    result = _gate(scan(resisted=[probe_of(1)], aivss=aivss, mode="fast"), fail_under=90)
    assert result.exit_code == 3
    (reason,) = result.reasons
    assert "UNDECIDED" in reason
    assert "only a full scan (--mode full)" in reason
    assert "mode_authoritative" not in reason  # words, never the condition's name


def test_fail_under_lists_every_failed_authority_condition_with_reasons() -> None:
    report = authoritative(scan(resisted=[probe_of(1)], aivss=99)).model_copy(
        update={
            "scoring_valid": False,
            "authority": Authority(
                authoritative=False,
                failed=["completeness", "undertested"],
                reasons=["completeness 80% is below 95%", "ASI07 undertested"],
            ),
        }
    )
    result = _gate(report, fail_under=50)
    assert result.exit_code == 3
    reason = result.reasons[0]
    for expected in ("completeness 80% is below 95%", "ASI07 undertested"):
        assert expected in reason
    for name in ("scoring_valid", "(failed:"):
        assert name not in reason
    # The names stay for machines.
    assert authority_failures(report) == ["completeness", "undertested", "scoring_valid"]


def test_fail_under_says_in_words_why_a_report_that_only_names_conditions_fails() -> None:
    report = authoritative(scan(resisted=[probe_of(1)], aivss=99)).model_copy(
        update={"authority": Authority(authoritative=False, failed=["completeness", "controls"])}
    )
    reason = _gate(report, fail_under=50).reasons[0]
    assert "at least 95% of the planned attempts must complete" in reason
    assert "no --no-controls" in reason and "completeness" not in reason


def test_authority_block_alone_cannot_make_a_fast_scan_authoritative() -> None:
    # Flags that disagree with the authority block: every condition must hold.
    report = scan(resisted=[probe_of(1)], aivss=99).model_copy(
        update={"authority": Authority(authoritative=True)}
    )
    assert _gate(report, fail_under=50).exit_code == 3
    silent = authoritative(report).model_copy(update={"authority": Authority(authoritative=False)})
    assert authority_failures(silent) == ["authoritative"]
    assert _gate(silent, fail_under=50).exit_code == 3


@pytest.mark.parametrize("value", [-1.0, 100.5, math.nan, math.inf])
def test_fail_under_out_of_range_is_a_usage_error(value: float) -> None:
    with pytest.raises(UsageError):
        _gate(scan(), fail_under=value)


# --------------------------------------------------------------------------- --fail-on


@pytest.mark.parametrize("mode", ["fast", "smart", "full"])
def test_fail_on_fails_in_every_mode(mode: str) -> None:
    result = _gate(scan([finding(1, Severity.HIGH)], mode=mode), fail_on=Severity.HIGH)
    assert result.exit_code == 1
    assert probe_of(1) in result.reasons[0]


@pytest.mark.parametrize(
    ("severity", "fail_on", "code"),
    [
        (Severity.CRITICAL, Severity.HIGH, 1),
        (Severity.HIGH, Severity.HIGH, 1),
        (Severity.MEDIUM, Severity.HIGH, 0),
        (Severity.LOW, Severity.MEDIUM, 0),
        (Severity.LOW, Severity.LOW, 1),
        (Severity.HIGH, Severity.CRITICAL, 0),
    ],
)
def test_fail_on_is_at_or_above(severity: Severity, fail_on: Severity, code: int) -> None:
    assert _gate(scan([finding(1, severity)]), fail_on=fail_on).exit_code == code


def test_fail_on_ignores_suppressed_findings_and_says_so() -> None:
    report = scan([suppressed(finding(1, Severity.CRITICAL)), finding(2, Severity.LOW)])
    result = _gate(report, fail_on=Severity.HIGH)
    assert result.exit_code == 0
    assert "1 suppressed not counted" in result.reasons[0]


def test_expired_suppression_counts_again_in_fail_on() -> None:
    f = finding(1, Severity.HIGH)
    entry = SuppressionEntry(fp=f.fp, reason="until May", expires=dt.date(2026, 5, 31))
    before = apply_suppressions(scan([f]), (entry,), dt.date(2026, 5, 31))
    after = apply_suppressions(scan([f]), (entry,), TODAY)
    assert _gate(before, fail_on=Severity.HIGH).exit_code == 0
    result = _gate(after, fail_on=Severity.HIGH)
    assert result.exit_code == 1
    assert "suppression expired" in result.reasons[0]


def test_the_listing_of_failing_findings_is_bounded() -> None:
    report = scan([finding(i) for i in range(12)])
    reason = _gate(report, fail_on=Severity.LOW).reasons[0]
    assert "12 unsuppressed" in reason
    assert "and 7 more" in reason


# ------------------------------------------------- --fail-on and missing evidence


def _with_unjudged(report: ScanReport, *reasons: tuple[str, str, Cause]) -> ScanReport:
    """``report`` with one unjudged attempt per (probe, reason, cause), listed as a scan
    lists them."""
    listed = [
        UnjudgedAttempt(attempt_id=f"{probe}#seed#{i}", probe_id=probe, reason=reason, cause=cause)
        for i, (probe, reason, cause) in enumerate(reasons)
    ]
    return report.model_copy(update={"unjudged": listed})


def test_fail_on_is_undecided_while_a_probe_that_could_reach_it_is_unjudged() -> None:
    """The flaky-endpoint scene: the one critical probe's attempt came back as HTML."""
    report = _with_unjudged(
        scan(resisted=[probe_of(1)], unjudged=[probe_of(2)]),
        (probe_of(2), "target replied HTTP 200 with a body that is not JSON", Cause.UNREADABLE),
    )
    result = _gate(report, fail_on=Severity.HIGH)
    assert result.exit_code == 3
    (reason,) = result.reasons
    assert reason.startswith("fail-on high: UNDECIDED: no finding at or above high, but 1 probe")
    assert probe_of(2) in reason and probe_of(1) not in reason
    assert "a body that could not be read" in reason and "retries" in reason  # cause and fix
    assert "--judge" not in reason


def test_fail_on_names_the_judge_for_attempts_that_need_one() -> None:
    report = _with_unjudged(
        scan(unjudged=[probe_of(2)], resisted=[probe_of(1)]),
        (
            probe_of(2),
            "needs a judge: the reply repeats the bait without saying it is foreign",
            Cause.AMBIGUOUS,
        ),
    )
    reason = _gate(report, fail_on=Severity.HIGH).reasons[0]
    assert "UNDECIDED" in reason and "--judge SPEC decides the 1 that need a judge" in reason


def test_a_finding_still_fails_the_gate_beside_unjudged_attempts() -> None:
    report = _with_unjudged(
        scan([finding(1, Severity.CRITICAL)], unjudged=[probe_of(2)]),
        (probe_of(2), "timeout", Cause.TIMEOUT),
    )
    result = _gate(report, fail_on=Severity.HIGH)
    assert result.exit_code == 1 and result.outcomes[0].status == "failed"


def test_unjudged_attempts_below_the_severity_do_not_hold_the_gate() -> None:
    low = ProbeResult(
        probe_id=probe_of(3),
        name="low",
        asi="ASI01",
        severity=Severity.LOW,
        channel="user",
        outcome="unjudged",
        attempts=1,
        unjudged=1,
    )
    report = scan(resisted=[probe_of(1)])
    report = _with_unjudged(
        report.model_copy(update={"results": [*report.results, low]}),
        (probe_of(3), "timeout", Cause.TIMEOUT),
    )
    assert _gate(report, fail_on=Severity.HIGH).exit_code == 0
    assert _gate(report, fail_on=Severity.LOW).exit_code == 3


def test_probes_not_run_or_not_applicable_are_not_attempts_and_do_not_hold_the_gate() -> None:
    report = scan(resisted=[probe_of(1)])
    skipped = [
        r.model_copy(update={"probe_id": probe_of(5 + i), "outcome": outcome, "attempts": 0})
        for i, (r, outcome) in enumerate(
            zip(report.results * 2, ("not_run", "not_applicable"), strict=False)
        )
    ]
    report = report.model_copy(update={"results": [*report.results, *skipped]})
    assert _gate(report, fail_on=Severity.LOW).exit_code == 0


def test_attempts_that_never_started_hold_the_gate() -> None:
    report = scan(resisted=[probe_of(1)])
    cut = report.results[0].model_copy(update={"not_started": 2})
    report = report.model_copy(update={"results": [cut], "stopped_reason": "budget"})
    result = _gate(report, fail_on=Severity.HIGH)
    assert result.exit_code == 3
    assert "never started" in result.reasons[0] and probe_of(1) in result.reasons[0]


# --------------------------------------------------------------------------- baseline


def test_baseline_regression_fails_in_fast_mode() -> None:
    # A fast scan run with --repeat 10: enough attempts to tell a regression from chance.
    base = with_counts(scan(resisted=[probe_of(1)]), {probe_of(1): (0, 10)})
    cur = with_counts(scan([finding(1)]), {probe_of(1): (10, 10)})
    result = _gate(cur, comparison=compare(base, cur))
    assert result.exit_code == 1
    assert "1 new finding(s) beyond noise" in result.reasons[0]


def test_baseline_without_regression_passes() -> None:
    base = with_counts(scan([finding(1)]), {probe_of(1): (10, 10)})
    cur = with_counts(scan(resisted=[probe_of(1)]), {probe_of(1): (0, 10)})
    result = _gate(cur, comparison=compare(base, cur))
    assert result.exit_code == 0
    assert "1 fixed" in result.reasons[0]


def test_a_flip_within_noise_passes_and_says_so() -> None:
    base = scan(resisted=[probe_of(1)])
    cur = scan([finding(1)])  # one attempt a side: a coin could do that
    result = _gate(cur, comparison=compare(base, cur))
    assert result.exit_code == 0
    assert result.reasons[0].endswith("(0 fixed, 0 persisting, 1 within noise)")


# --------------------------------------------------------------------------- combination


def test_a_certain_failure_wins_over_an_undecided_score_gate() -> None:
    report = scan([finding(1, Severity.CRITICAL)], aivss=95, mode="fast")
    result = _gate(report, fail_under=90, fail_on=Severity.HIGH)
    assert result.exit_code == 1
    statuses = [o.status for o in result.outcomes]
    assert statuses == ["undecided", "failed"]  # the undecided gate is still reported


def test_undecided_score_gate_with_passing_gates_is_3() -> None:
    report = scan([finding(1, Severity.LOW)], aivss=95, mode="fast")
    cur_vs_self = compare(report, report)
    result = _gate(report, fail_under=90, fail_on=Severity.HIGH, comparison=cur_vs_self)
    assert result.exit_code == 3
    assert [o.status for o in result.outcomes] == ["undecided", "passed", "passed"]


def test_every_gate_passing_is_0() -> None:
    report = authoritative(scan([finding(1, Severity.LOW)], aivss=95))
    result = _gate(report, fail_under=90, fail_on=Severity.HIGH, comparison=compare(report, report))
    assert result.exit_code == 0
    assert result.passed


# --------------------------------------------------------------------------- nothing judged


def test_early_stop_with_nothing_judged_is_undecided_even_without_gates() -> None:
    report = scan(unjudged=[probe_of(1)]).model_copy(update={"stopped_reason": "early_stop"})
    result = _gate(report)
    assert result.exit_code == 3
    assert "stopped early" in result.reasons[0]


def test_nothing_judged_never_passes_fail_on_or_baseline() -> None:
    report = scan(unjudged=[probe_of(1), probe_of(2)], aivss=0).model_copy(
        update={
            "unjudged": [
                UnjudgedAttempt(
                    attempt_id="a1", probe_id=probe_of(1), reason="x", cause=Cause.OTHER
                )
            ],
        }
    )
    base = scan(aivss=80)
    result = _gate(report, fail_on=Severity.LOW, comparison=compare(base, report))
    assert result.exit_code == 3
    assert all(o.status == "undecided" for o in result.outcomes)
    assert "could be judged" in result.reasons[0]


def test_a_scan_where_every_probe_was_not_applicable_is_decided() -> None:
    # Nothing applicable is a fact about the agent, not a failure to judge it.
    report = scan().model_copy(update={"results": [], "findings": []})
    assert _gate(report, fail_on=Severity.LOW).exit_code == 0
