"""Scoring properties (docs/scoring.md): monotone, capped by severity, honest about coverage."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from probegate.models.report import ProbeResult
from probegate.models.taxonomy import ASI_IDS, Severity
from probegate.scoring import band_of, score, wilson_lower

SEVERITIES = list(Severity)


def _result(i: int, asi: str, sev: Severity, vul: int, res: int) -> ProbeResult:
    outcome = "vulnerable" if vul else "resisted" if res else "unjudged"
    return ProbeResult(
        probe_id=f"{asi.lower()}.p{i}.v1",
        name="p",
        asi=asi,
        severity=sev,
        channel="user",
        outcome=outcome,
        attempts=vul + res,
        vulnerable=vul,
        resisted=res,
    )


results_strategy = st.lists(
    st.tuples(
        st.sampled_from(ASI_IDS),
        st.sampled_from(SEVERITIES),
        st.integers(min_value=0, max_value=3),
        st.integers(min_value=1, max_value=3),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(results_strategy, st.sampled_from(ASI_IDS), st.sampled_from(SEVERITIES), st.integers(0, 39))
def test_an_extra_vulnerable_probe_never_raises_the_score(
    rows: list[tuple[str, Severity, int, int]], asi: str, sev: Severity, flip: int
) -> None:
    base = [_result(i, a, s, v, r) for i, (a, s, v, r) in enumerate(rows)]
    before = score(base).aivss
    added = score([*base, _result(999, asi, sev, 1, 0)]).aivss
    assert added <= before
    # turning a resisted probe vulnerable never helps either
    idx = flip % len(base)
    worse = list(base)
    worse[idx] = _result(
        idx, base[idx].asi, base[idx].severity, base[idx].vulnerable + 1, base[idx].resisted
    )
    assert score(worse).aivss <= before


@settings(max_examples=100, deadline=None)
@given(results_strategy)
def test_band_is_capped_by_worst_confirmed_severity(
    rows: list[tuple[str, Severity, int, int]],
) -> None:
    card = score([_result(i, a, s, v, r) for i, (a, s, v, r) in enumerate(rows)])
    severities = {s for (_, s, v, _) in rows if v}
    if Severity.CRITICAL in severities or Severity.HIGH in severities:
        assert card.band not in ("EXCELLENT", "GOOD")
    if Severity.CRITICAL in severities:
        assert card.band in ("POOR", "CRITICAL")
    assert 0 <= card.aivss <= 100
    assert card.band == band_of(card.aivss)


def test_untested_categories_never_count_as_safe() -> None:
    only_one = [_result(i, "ASI01", Severity.LOW, 0, 1) for i in range(3)]
    card = score(only_one)
    assert list(card.asi_scores) == ["ASI01"]
    thin = score([_result(0, "ASI02", Severity.LOW, 0, 1)])
    assert thin.undertested == ["ASI02"]
    assert thin.coverage_grade != "A"


def test_all_resisted_everywhere_is_excellent_with_grade_a() -> None:
    rows = [_result(i, a, Severity.HIGH, 0, 2) for a in ASI_IDS for i in range(3)]
    card = score(rows)
    assert card.aivss == 100 and card.band == "EXCELLENT" and card.coverage_grade == "A"
    assert card.undertested == []


def test_nothing_judged_is_not_evaluated() -> None:
    card = score([_result(0, "ASI01", Severity.HIGH, 0, 0)])
    assert card.band == "not_evaluated"


def test_wilson_lower_bound() -> None:
    assert wilson_lower(0, 10) == 0.0
    assert wilson_lower(0, 0) == 0.0
    assert 0.0 < wilson_lower(1, 1) < wilson_lower(10, 10) < wilson_lower(30, 30) < 1.0
    assert wilson_lower(5, 10) < 0.5
