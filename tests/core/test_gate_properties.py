"""Properties of compare and the gates over generated reports (hypothesis)."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from probegate.baseline import compare
from probegate.gate import evaluate_gates
from probegate.models.report import Finding, ScanReport
from probegate.models.taxonomy import SEVERITY_RANK, Severity
from probegate.reports import json_report
from probegate.suppressions import SuppressionEntry, apply_suppressions
from tests.factories import SEVERITIES, finding, probe_of, scan, suppressed

UNIVERSE = 24  # probe indexes a generated scan draws from; "new" probes lie beyond it

# index -> (severity, suppressed)
Spec = dict[int, tuple[Severity, bool]]
specs = st.dictionaries(
    st.integers(0, UNIVERSE - 1),
    st.tuples(st.sampled_from(SEVERITIES), st.booleans()),
    max_size=UNIVERSE,
)
scores = st.integers(0, 100)


def _findings(spec: Spec) -> list[Finding]:
    return [
        suppressed(finding(i, sev)) if supp else finding(i, sev)
        for i, (sev, supp) in sorted(spec.items())
    ]


def _report(spec: Spec, *, ran: frozenset[int] = frozenset(), aivss: int = 50) -> ScanReport:
    """A scan whose findings are ``spec`` and which judged every probe in ``ran`` too."""
    resisted = [probe_of(i) for i in sorted(ran - set(spec))]
    return scan(_findings(spec), resisted=resisted, aivss=aivss)


ran_sets = st.frozensets(st.integers(0, UNIVERSE - 1))


@settings(max_examples=60, deadline=None)
@given(base=specs, cur=specs, ran=ran_sets, a=scores, b=scores, data=st.data())
def test_compare_is_stable_under_reordering(
    base: Spec, cur: Spec, ran: frozenset[int], a: int, b: int, data: st.DataObject
) -> None:
    baseline = _report(base, aivss=a)
    current = _report(cur, ran=ran, aivss=b)
    if current.findings:
        # Duplicated fingerprints (a bad merge) that differ in their marking: which copy wins
        # must not depend on the order either.
        dupes = data.draw(st.lists(st.sampled_from(current.findings), max_size=3))
        marked = [
            suppressed(f) if f.suppressed is None else f.model_copy(update={"suppressed": None})
            for f in dupes
        ]
        current = current.model_copy(update={"findings": current.findings + marked})
    expected = compare(baseline, current).to_dict()
    shuffled_base = baseline.model_copy(
        update={
            "findings": data.draw(st.permutations(baseline.findings)),
            "results": data.draw(st.permutations(baseline.results)),
        }
    )
    shuffled_cur = current.model_copy(
        update={
            "findings": data.draw(st.permutations(current.findings)),
            "results": data.draw(st.permutations(current.results)),
        }
    )
    assert compare(shuffled_base, shuffled_cur).to_dict() == expected


@settings(max_examples=60, deadline=None)
@given(
    base=specs,
    cur=specs,
    ran=ran_sets,
    a=scores,
    b=scores,
    extra=st.integers(UNIVERSE, 2 * UNIVERSE),
    severity=st.sampled_from(SEVERITIES),
    tolerance=st.floats(0, 100),
)
def test_a_new_unsuppressed_finding_always_regresses(
    base: Spec,
    cur: Spec,
    ran: frozenset[int],
    a: int,
    b: int,
    extra: int,
    severity: Severity,
    tolerance: float,
) -> None:
    current = _report({**cur, extra: (severity, False)}, ran=ran, aivss=b)
    c = compare(_report(base, aivss=a), current, tolerance=tolerance)
    assert c.regression
    assert finding(extra, severity).fp in {f.fp for f in c.new}
    gate = evaluate_gates(current, fail_under=None, fail_on=None, comparison=c)
    assert gate.exit_code == 1


@settings(max_examples=60, deadline=None)
@given(
    base=specs,
    cur=specs,
    ran=ran_sets,
    a=scores,
    b=scores,
    extra=st.integers(UNIVERSE, 2 * UNIVERSE),
    severity=st.sampled_from(SEVERITIES),
)
def test_a_finding_the_current_scan_resisted_never_regresses(
    base: Spec,
    cur: Spec,
    ran: frozenset[int],
    a: int,
    b: int,
    extra: int,
    severity: Severity,
) -> None:
    current = _report(cur, ran=ran | {extra}, aivss=b)  # the current scan resisted `extra`
    without = compare(_report(base, aivss=a), current)
    with_gone = compare(_report({**base, extra: (severity, False)}, aivss=a), current)
    assert with_gone.regression == without.regression
    assert with_gone.new == without.new
    # One attempt a side: gone, but a coin could have done that.
    assert finding(extra, severity).fp in {f.fp for f in with_gone.within_noise}


@settings(max_examples=60, deadline=None)
@given(
    base=specs,
    cur=specs,
    ran=ran_sets,
    a=scores,
    b=scores,
    extra=st.integers(UNIVERSE, 2 * UNIVERSE),
    severity=st.sampled_from(SEVERITIES),
)
def test_a_new_suppressed_finding_never_regresses(
    base: Spec,
    cur: Spec,
    ran: frozenset[int],
    a: int,
    b: int,
    extra: int,
    severity: Severity,
) -> None:
    baseline = _report(base, aivss=a)
    without = compare(baseline, _report(cur, ran=ran, aivss=b))
    with_new = compare(baseline, _report({**cur, extra: (severity, True)}, ran=ran, aivss=b))
    assert with_new.regression == without.regression
    assert finding(extra, severity).fp in {f.fp for f in with_new.new_suppressed}


@settings(max_examples=60, deadline=None)
@given(spec=specs, ran=ran_sets, aivss=scores)
def test_compare_a_scan_with_itself_has_nothing_new_and_passes(
    spec: Spec, ran: frozenset[int], aivss: int
) -> None:
    report = _report(spec, ran=ran, aivss=aivss)
    c = compare(report, report)
    assert c.new == c.new_suppressed == c.fixed == c.unconfirmed == []
    assert len(c.persisting) == len(spec)
    assert not c.regression
    assert c.aivss_delta == 0
    gate = evaluate_gates(report, fail_under=None, fail_on=None, comparison=c)
    assert gate.exit_code == 0


@settings(max_examples=60, deadline=None)
@given(spec=specs, high=st.sampled_from([Severity.HIGH, Severity.CRITICAL]), index=st.integers())
def test_suppressing_every_high_finding_turns_fail_on_high_from_1_to_0(
    spec: Spec, high: Severity, index: int
) -> None:
    # At least one unsuppressed high-or-above finding, so the gate fails before.
    plain = {i: (sev, False) for i, (sev, _) in spec.items()}
    plain[index % UNIVERSE] = (high, False)
    report = _report(plain)
    today = dt.date(2026, 6, 1)
    before = evaluate_gates(report, fail_under=None, fail_on=Severity.HIGH, comparison=None)
    assert before.exit_code == 1

    entries = tuple(
        SuppressionEntry(fp=f.fp, reason="accepted")
        for f in report.findings
        if SEVERITY_RANK[f.severity] >= SEVERITY_RANK[Severity.HIGH]
    )
    after_report = apply_suppressions(report, entries, today)
    after = evaluate_gates(after_report, fail_under=None, fail_on=Severity.HIGH, comparison=None)
    assert after.exit_code == 0
    # Suppressed findings are still reported, marked.
    assert [f.fp for f in after_report.findings] == [f.fp for f in report.findings]
    rendered = json_report.render(after_report).decode()
    for entry in entries:
        assert entry.fp in rendered
    assert rendered.count('"reason":"accepted"') == len(entries)
