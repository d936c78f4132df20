"""Scoring properties (docs/scoring.md): monotone, capped by severity, honest about coverage."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from probegate.models.report import ProbeResult
from probegate.models.taxonomy import ASI_IDS, Severity
from probegate.scoring import (
    MIN_CATEGORIES_TESTED,
    MIN_PROBES_JUDGED,
    SEVERITY_CAP,
    band_of,
    score,
    wilson_lower,
)

SEVERITIES = list(Severity)


def _wide(rows: list[ProbeResult]) -> list[ProbeResult]:
    """``rows`` and, in categories they leave empty, enough probes judged resisted for the scan
    to be scored at all (MIN_PROBES_JUDGED in MIN_CATEGORIES_TESTED categories): a resisted
    probe weighs nothing in the product, so the rows' own score is what is tested."""
    out = list(rows)
    free = [a for a in ASI_IDS if a not in {r.asi for r in rows}]
    for n, asi in enumerate(free):
        judged = sum(1 for r in out if r.vulnerable + r.resisted)
        tested = len({r.asi for r in out if r.vulnerable + r.resisted})
        if judged >= MIN_PROBES_JUDGED and tested >= MIN_CATEGORIES_TESTED:
            break
        out += [_result(100 + 10 * n + k, asi, Severity.LOW, 0, 1) for k in range(4)]
    return out


def _result(
    i: int, asi: str, sev: Severity, vul: int, res: int, unj: int = 0, not_started: int = 0
) -> ProbeResult:
    outcome = "vulnerable" if vul else "resisted" if res else "unjudged"
    return ProbeResult(
        probe_id=f"{asi.lower()}.p{i}.v1",
        name="p",
        asi=asi,
        severity=sev,
        channel="user",
        outcome=outcome,
        attempts=vul + res + unj,
        vulnerable=vul,
        resisted=res,
        unjudged=unj,
        not_started=not_started,
    )


def _unjudged(i: int, asi: str) -> ProbeResult:
    return _result(i, asi, Severity.LOW, 0, 0, unj=1)


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
    # Either may be too thin to score (None); when both are scored, the extra finding never helps.
    if before is not None and added is not None:
        assert added <= before
    # turning a resisted probe vulnerable never helps either
    idx = flip % len(base)
    worse = list(base)
    worse[idx] = _result(
        idx, base[idx].asi, base[idx].severity, base[idx].vulnerable + 1, base[idx].resisted
    )
    after = score(worse).aivss
    assert (after is None) == (before is None)
    if after is not None and before is not None:
        assert after <= before


@settings(max_examples=100, deadline=None)
@given(results_strategy)
def test_band_is_capped_by_worst_confirmed_severity(
    rows: list[tuple[str, Severity, int, int]],
) -> None:
    card = score([_result(i, a, s, v, r) for i, (a, s, v, r) in enumerate(rows)])
    if card.aivss is None:
        assert card.band == "not_evaluated" and card.not_evaluated
        return
    severities = {s for (_, s, v, _) in rows if v}
    if Severity.CRITICAL in severities or Severity.HIGH in severities:
        assert card.band not in ("EXCELLENT", "GOOD")
    if Severity.CRITICAL in severities:
        assert card.band in ("POOR", "CRITICAL")
    assert 0 <= card.aivss <= 100
    assert card.band == band_of(card.aivss)


@settings(max_examples=100, deadline=None)
@given(results_strategy)
def test_an_undertested_category_never_shows_a_score(
    rows: list[tuple[str, Severity, int, int]],
) -> None:
    card = score([_result(i, a, s, v, r) for i, (a, s, v, r) in enumerate(rows)])
    assert not set(card.undertested) & set(card.asi_scores)
    # The overall score is the product over the scored categories alone, capped: a reader can
    # recompute it from asi_scores (to the rounding of the per-category scores).
    if card.aivss is not None:
        raw = 100.0
        for value in card.asi_scores.values():
            raw *= (value / 100.0) ** (1 / len(ASI_IDS))
        assert abs(min(round(raw), card.sub_scores["severity_cap"]) - card.aivss) <= 1


def test_untested_categories_never_count_as_safe() -> None:
    only_one = [_result(i, "ASI01", Severity.LOW, 0, 1) for i in range(3)]
    card = score(only_one)
    assert list(card.asi_scores) == ["ASI01"]
    thin = score([_result(0, "ASI02", Severity.LOW, 0, 1), _unjudged(1, "ASI02")])
    assert thin.undertested == ["ASI02"]
    assert thin.coverage_grade != "A"
    assert thin.asi_scores == {} and thin.aivss is None  # never a 100 it did not measure


def test_a_category_whose_every_probe_was_judged_is_tested_however_few_apply() -> None:
    card = score(_wide([_result(0, "ASI06", Severity.HIGH, 0, 3)]))
    assert card.asi_scores["ASI06"] == 100.0 and card.undertested == []
    assert card.categories["ASI06"].state == "tested" and card.aivss == 100


def test_a_scan_too_thin_to_score_is_not_evaluated() -> None:
    # Two of five applicable categories tested: fewer than half, no score.
    rows = [_result(i, a, Severity.LOW, 0, 1) for a in ("ASI01", "ASI02") for i in range(3)]
    rows += [_unjudged(10, a) for a in ("ASI03", "ASI04", "ASI05")]
    card = score(rows)
    assert card.aivss is None and card.band == "not_evaluated"
    assert card.not_evaluated == (
        "only 2 of the 5 applicable categories were tested (at least half must be)"
    )
    assert card.asi_scores == {"ASI01": 100.0, "ASI02": 100.0}
    assert card.undertested == ["ASI03", "ASI04", "ASI05"]
    # One more tested category (3 of 5) and it is scored, paying for what it could not judge.
    rows.append(_result(20, "ASI03", Severity.LOW, 0, 1))
    later = score(rows)
    assert later.categories["ASI03"].state == "undertested"  # 1 of 2 judged: fewer than 3
    rows.append(_result(21, "ASI04", Severity.LOW, 0, 1))
    rows += [_result(22 + i, "ASI04", Severity.LOW, 0, 1) for i in range(2)]
    scored = score(_wide(rows))
    assert scored.categories["ASI04"].state == "tested"  # 3 of 4 judged: at least 3 and half
    assert scored.aivss is not None and scored.aivss <= SEVERITY_CAP[Severity.LOW]
    assert scored.categories["ASI04"].unjudged == 1 and scored.asi_scores["ASI04"] < 100


def test_a_finding_in_an_undertested_category_still_caps_the_score() -> None:
    rows = [_result(i, a, Severity.LOW, 0, 1) for a in ("ASI01", "ASI02") for i in range(3)]
    rows += [_result(9, "ASI03", Severity.CRITICAL, 1, 0), _unjudged(10, "ASI03")]
    card = score(_wide(rows))
    assert card.undertested == ["ASI03"] and "ASI03" not in card.asi_scores
    assert card.aivss == 49 and card.band == "POOR"
    # It costs in the product too: its value is there, not shown as a score.
    assert card.categories["ASI03"].value is not None and card.categories["ASI03"].value < 100


def test_a_scan_that_judged_too_little_of_the_library_has_no_score() -> None:
    """A python agent without tools: one probe applies, and its one category is tested; no
    overall number (never "100 EXCELLENT"), and the reason says how little was judged."""
    card = score([_result(0, "ASI09", Severity.HIGH, 0, 1)])
    assert card.asi_scores == {"ASI09": 100.0} and card.aivss is None
    assert card.band == "not_evaluated"
    assert card.not_evaluated.startswith("only 1 probe could be judged against this agent")
    few = [_result(i, a, Severity.LOW, 0, 1) for a in ASI_IDS[:4] for i in range(6)]
    assert (
        score(few).not_evaluated == "only 4 of the 10 categories were tested (at least 5 must be)"
    )
    assert score(_wide(few)).aivss == 100


def test_probes_that_did_not_run_count_neither_way() -> None:
    rows = [_result(i, "ASI01", Severity.LOW, 0, 1) for i in range(2)]
    not_run = _result(5, "ASI01", Severity.LOW, 0, 0).model_copy(
        update={"outcome": "not_run", "attempts": 0, "enabled_by": "--judge SPEC"}
    )
    card = score([*rows, not_run])
    assert card.undertested == [] and card.asi_scores == {"ASI01": 100.0}
    assert card.categories["ASI01"].ran == 2 and card.categories["ASI01"].probes == 3


def test_a_category_no_probe_of_which_could_run_is_not_applicable_with_what_enables_it() -> None:
    na = [
        _result(i, "ASI05", Severity.HIGH, 0, 0).model_copy(
            update={"outcome": "not_applicable", "attempts": 0, "missing": missing}
        )
        for i, missing in enumerate((["code_exec"], ["code_exec"], ["code_exec", "egress"]))
    ]
    secret = _result(7, "ASI05", Severity.HIGH, 0, 0).model_copy(
        update={"outcome": "not_run", "attempts": 0, "enabled_by": "target.canaries"}
    )
    card = score([*na, secret, _result(9, "ASI01", Severity.LOW, 0, 1)])
    state = card.categories["ASI05"]
    assert state.state == "not_applicable" and state.score is None
    assert state.enabled_by == [
        "capability code_exec",
        "capability code_exec+egress",
        "target.canaries",
    ]
    assert "what would bring probes in: capability code_exec (2 probes)" in state.reason
    assert card.not_applicable == ["ASI05"] and "ASI05" not in card.undertested
    # Every category is there: those with no probe in the selection say so.
    assert set(card.categories) == set(ASI_IDS)
    assert card.categories["ASI02"].state == "not_selected"


def test_evidence_gone_missing_never_raises_the_score() -> None:
    """The flaky-endpoint scene: the one critical finding's attempt came back unreadable."""
    rows = [_result(i, a, Severity.LOW, 0, 3) for a in ASI_IDS for i in range(3)]
    found = [*rows, _result(50, "ASI04", Severity.CRITICAL, 1, 2)]
    lost = [*rows, _result(50, "ASI04", Severity.CRITICAL, 0, 2, unj=1)]
    before, after = score(found), score(lost)
    assert before.aivss == 49
    assert after.aivss is not None and after.aivss <= before.aivss
    assert after.asi_scores["ASI04"] <= before.asi_scores["ASI04"] < 100
    assert after.categories["ASI04"].unjudged == 1 and after.categories["ASI04"].findings == 0


def test_all_resisted_everywhere_is_excellent_with_grade_a() -> None:
    rows = [_result(i, a, Severity.HIGH, 0, 2) for a in ASI_IDS for i in range(3)]
    card = score(rows)
    assert card.aivss == 100 and card.band == "EXCELLENT" and card.coverage_grade == "A"
    assert card.undertested == []


def test_nothing_judged_is_not_evaluated() -> None:
    card = score([_result(0, "ASI01", Severity.HIGH, 0, 0)])
    assert card.band == "not_evaluated" and card.aivss is None


def test_wilson_lower_bound() -> None:
    assert wilson_lower(0, 10) == 0.0
    assert wilson_lower(0, 0) == 0.0
    assert 0.0 < wilson_lower(1, 1) < wilson_lower(10, 10) < wilson_lower(30, 30) < 1.0
    assert wilson_lower(5, 10) < 0.5


# Tallies with missing evidence: (asi, severity, vulnerable, resisted, unjudged, not started).
tallies = st.lists(
    st.tuples(
        st.sampled_from(ASI_IDS),
        st.sampled_from(SEVERITIES),
        st.integers(min_value=0, max_value=3),
        st.integers(min_value=0, max_value=3),
        st.integers(min_value=0, max_value=2),
        st.integers(min_value=0, max_value=1),
    ),
    min_size=1,
    max_size=40,
)


def _tallied(rows: list[tuple[str, Severity, int, int, int, int]]) -> list[ProbeResult]:
    return [_result(i, a, s, v, r, u, n) for i, (a, s, v, r, u, n) in enumerate(rows)]


@settings(max_examples=400, deadline=None)
@given(tallies, st.integers(0, 39), st.booleans(), st.booleans())
def test_turning_a_judged_attempt_unjudged_never_raises_a_score(
    rows: list[tuple[str, Severity, int, int, int, int]],
    pick: int,
    from_vulnerable: bool,
    never_started: bool,
) -> None:
    """docs/scoring.md, "Missing evidence": neither aivss nor any category's score rises when
    a judged attempt (vulnerable or resisted) is lost, to an unjudged verdict or to an attempt
    that never started; a scan with no score stays without one."""
    results = _tallied(rows)
    idx = pick % len(results)
    r = results[idx]
    vul, res = r.vulnerable, r.resisted
    if from_vulnerable and vul:
        vul -= 1
    elif res:
        res -= 1
    elif vul:
        vul -= 1
    else:
        return  # nothing judged in this probe to lose
    lost = _result(
        idx,
        r.asi,
        r.severity,
        vul,
        res,
        r.unjudged + (0 if never_started else 1),
        r.not_started + (1 if never_started else 0),
    )
    before = score(results)
    after = score([*results[:idx], lost, *results[idx + 1 :]])
    if before.aivss is None:
        assert after.aivss is None
    elif after.aivss is not None:
        assert after.aivss <= before.aivss
    for asi, value in after.asi_scores.items():
        assert asi in before.asi_scores and value <= before.asi_scores[asi]
    for asi, state in after.categories.items():
        was = before.categories[asi].value
        if state.value is not None and was is not None:
            assert state.value <= was


@settings(max_examples=200, deadline=None)
@given(tallies)
def test_every_category_has_a_state_and_the_score_is_recomputable_from_them(
    rows: list[tuple[str, Severity, int, int, int, int]],
) -> None:
    results = _tallied(rows)
    card = score(results)
    assert list(card.categories) == list(ASI_IDS)
    for asi, state in card.categories.items():
        mine = [r for r in results if r.asi == asi]
        assert state.probes == len(mine)
        assert state.unjudged == sum(r.unjudged for r in mine)
        assert state.not_started == sum(r.not_started for r in mine)
        assert state.findings == sum(1 for r in mine if r.vulnerable)
        if state.state == "tested":
            assert card.asi_scores[asi] == state.score == state.value
        else:
            assert asi not in card.asi_scores and state.score is None and state.reason
        assert (state.state == "undertested") == (asi in card.undertested)
    if card.aivss is not None:
        raw = 100.0
        for state in card.categories.values():
            if state.value is not None:
                raw *= (state.value / 100.0) ** (1 / len(ASI_IDS))
        assert abs(min(round(raw), card.sub_scores["severity_cap"]) - card.aivss) <= 1


def test_the_best_case_is_the_score_had_every_missing_attempt_been_resisted() -> None:
    """Missing evidence lowers the score (the worst case) and the best case says how far it
    could rise: a gate is decided only where both agree (docs/gating.md)."""
    from probegate.models.report import ProbeResult
    from probegate.scoring import best_case, score

    def result(asi: str, i: int, **counts: int) -> ProbeResult:
        return ProbeResult(
            probe_id=f"{asi.lower()}.p{i}.v1", name="p", asi=asi, severity="critical",
            channel="user", outcome="resisted", attempts=3, **counts,
        )  # fmt: skip

    judged = _wide([result(a, i, resisted=3) for a in ("ASI01", "ASI02") for i in range(3)])
    assert best_case(judged) is None and score(judged).aivss == 100
    missing = [*judged[:-1], result("ASI02", 9, resisted=1, unjudged=2)]
    card = score(missing)
    assert card.aivss is not None and card.aivss <= 49  # a critical probe left unjudged caps it
    assert card.sub_scores["best_case"] == 100.0 == best_case(missing)


def test_a_category_the_scan_stopped_in_has_no_score_and_its_unstarted_are_not_unjudged() -> None:
    """Issue 34: after Ctrl-C a clean category read "0.0 (109 unjudged)": its attempts that
    never started counted as unjudged, and as missing evidence in a score shown as known."""
    finished = [_result(i, "ASI01", Severity.HIGH, 0, 3) for i in range(4)]
    cut = [_result(10 + i, "ASI01", Severity.HIGH, 0, 1, not_started=2) for i in range(2)]
    never = [_result(20 + i, "ASI02", Severity.HIGH, 0, 0, not_started=3) for i in range(3)]
    card = score(_wide(finished + cut + never))
    unfinished, not_run = card.categories["ASI01"], card.categories["ASI02"]
    assert unfinished.state == "undertested" and unfinished.score is None
    assert (unfinished.unjudged, unfinished.not_started) == (0, 4)
    assert unfinished.reason.startswith("unfinished: 4 of its attempts not run")
    assert not_run.state == "undertested" and not_run.reason.startswith("not run:")
    assert (not_run.unjudged, not_run.not_started) == (0, 9)
    # The same probes, every attempt run and resisted: a tested category scoring 100.
    done = [_result(10 + i, "ASI01", Severity.HIGH, 0, 3) for i in range(2)]
    assert score(_wide(finished + done)).categories["ASI01"].score == 100.0
