"""Reading reports at the edge, comparing two scans, refreshing the baseline."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from probegate.baseline import compare, write_baseline
from probegate.errors import ReportError, UsageError
from probegate.models.comparison import Confirmation, ConfirmedProbe, Counts
from probegate.models.report import ProbeResult, ScanReport, finding_fp
from probegate.models.stored import load_report, parse_report
from probegate.models.taxonomy import ASI_IDS, Severity
from probegate.reports import json_report
from probegate.scoring import score
from tests.factories import finding, fp_of, probe_of, scan, suppressed, with_counts

DATA = Path(__file__).parents[1] / "data"
UPSTREAM = DATA / "agentguardian_report.json"


# --------------------------------------------------------------------------- loading


def test_finding_fp_is_the_documented_derivation() -> None:
    assert finding_fp("asi01.x.v1") == fp_of("asi01.x.v1")
    assert len(finding_fp("asi01.x.v1")) == 32


def test_our_report_round_trips(tmp_path: Path) -> None:
    report = scan([finding(1), suppressed(finding(2, Severity.LOW))], resisted=[probe_of(3)])
    path = tmp_path / "scan.json"
    path.write_bytes(json_report.render(report))
    loaded = load_report(path)
    assert loaded == report
    assert loaded.import_notes == []


def test_import_notes_are_never_serialised() -> None:
    report = scan([finding(1)]).model_copy(update={"import_notes": ["x"]})
    assert "import_notes" not in report.to_dict()


def test_agentguardian_report_is_accepted_and_mapped() -> None:
    report = load_report(UPSTREAM)
    assert report.schema_ == "agentguardian-scan-v1"
    assert report.aivss == 62
    assert report.probe_library_version == "2026.05"
    # success=false is a resisted probe, not a finding
    assert [f.probe_id for f in report.findings] == ["pi.system-leak.v1", "tool.refund-abuse.v1"]
    assert [f.fp for f in report.findings] == [
        finding_fp("pi.system-leak.v1"),
        finding_fp("tool.refund-abuse.v1"),
    ]
    outcomes = {r.probe_id: r.outcome for r in report.results}
    assert outcomes == {
        "mem.poison.v1": "resisted",
        "pi.system-leak.v1": "vulnerable",
        "tool.refund-abuse.v1": "vulnerable",
    }
    assert report.findings[0].pov_reliability == 0.56  # upstream fields keep their values
    assert report.authority.authoritative  # full, real, complete, nothing undertested
    notes = " ".join(report.import_notes)
    assert "agentguardian-scan-v1" in notes
    assert "audit" in notes  # the dropped field is named
    assert "success=false" in notes
    assert "no per-probe results" in notes


def test_upstream_report_keeps_an_explicit_fp(tmp_path: Path) -> None:
    data = json.loads(UPSTREAM.read_text())
    data["findings"][0]["fp"] = "f" * 32
    report = parse_report(json.dumps(data).encode(), source="upstream.json")
    assert report.findings[0].fp == "f" * 32


def test_upstream_report_with_too_few_fields_says_which(tmp_path: Path) -> None:
    data = json.loads(UPSTREAM.read_text())
    del data["aivss"]
    with pytest.raises(ReportError, match="has no 'aivss' field"):
        parse_report(json.dumps(data).encode(), source="upstream.json")
    data = json.loads(UPSTREAM.read_text())
    for key in ("tier", "sub_scores", "coverage_grade"):
        del data[key]
    report = parse_report(json.dumps(data).encode(), source="upstream.json")
    assert "coverage_grade, sub_scores, tier" in " ".join(report.import_notes)


def test_upstream_report_that_is_not_authoritative_says_why() -> None:
    data = json.loads(UPSTREAM.read_text())
    data.update(mode="fast", mode_authoritative=False, evaluation_mode="stub")
    data["completeness"]["pct"] = 50.0
    data["undertested"] = ["ASI07"]
    report = parse_report(json.dumps(data).encode(), source="upstream.json")
    assert report.authority.failed == [
        "mode_authoritative",
        "scoring_valid",
        "completeness",
        "undertested",
    ]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"{not json", "invalid JSON at line 1"),
        (b"\xff\xfe", "not a UTF-8 JSON report"),
        (b"[1, 2]", "expected a JSON object"),
        (b'{"schema": "other-v9"}', "unsupported report schema 'other-v9'"),
        (b'{"aivss": 1}', "unsupported report schema None"),
        (b'{"schema": "probegate-scan-v1", "aivss": 1}', "invalid report: "),
    ],
)
def test_bad_report_is_one_line_naming_the_file(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(ReportError) as info:
        load_report(path)
    assert info.value.message.startswith(f"{path}: ")
    assert expected in info.value.message
    assert "\n" not in info.value.message
    assert info.value.exit_code == 2


def test_missing_report_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="not found"):
        load_report(tmp_path / "missing.json")


# --------------------------------------------------------------------------- comparing


def _thirty(*found: int, resisted: tuple[int, ...] = (), **counts: tuple[int, int]) -> ScanReport:
    """A scan of 30 judged attempts a probe: findings on ``found`` (30 of 30 unless
    ``counts`` says ``p<index>=(vulnerable, judged)``), the ``resisted`` probes 0 of 30."""
    report = scan([finding(i) for i in found], resisted=[probe_of(i) for i in resisted])
    wanted = {probe_of(i): (30, 30) for i in found} | {probe_of(i): (0, 30) for i in resisted}
    wanted |= {probe_of(int(k[1:])): v for k, v in counts.items()}
    return scored(with_counts(report, wanted))


def scored(report: ScanReport) -> ScanReport:
    """The report with the score its results give, as a scan's would be: beside its own
    probes, five categories of four probes each resisted in all 30 attempts, so the scan is
    broad enough to be scored (scoring.MIN_PROBES_JUDGED in MIN_CATEGORIES_TESTED); a
    resisted probe weighs nothing in the score, so its own probes' score is what is tested."""
    known = {r.probe_id for r in report.results}
    breadth = [
        ProbeResult(
            probe_id=pid,
            name=pid,
            asi=asi,
            severity=Severity.LOW,
            channel="user",
            outcome="resisted",
            attempts=30,
            resisted=30,
        )
        for asi in ASI_IDS[1:6]
        for k in range(4)
        if (pid := probe_of(900 + k, asi)) not in known
    ]
    results = [*report.results, *breadth]
    card = score(results)
    return report.model_copy(update={"results": results, "aivss": card.aivss, "band": card.band})


def test_new_fixed_persisting_and_unconfirmed_are_told_apart() -> None:
    base = _thirty(1, 2, 3, 5, p5=(2, 30))
    cur = scored(_with_unjudged(_thirty(1, 4, 5, resisted=(2,), p5=(25, 30)), probe_of(3)))
    c = compare(base, cur)
    assert [f.probe_id for f in c.new] == [probe_of(4)]  # not in the baseline's results at all
    assert [f.probe_id for f in c.fixed] == [probe_of(2)]  # 30 of 30 -> 0 of 30
    assert [f.probe_id for f in c.persisting] == [probe_of(1)]
    assert [f.probe_id for f in c.unconfirmed] == [probe_of(3)]  # unjudged now: not fixed
    assert [(f.probe_id, f.change) for f in c.changed] == [(probe_of(5), "worse")]
    assert c.regression
    assert c.reasons == [
        f"1 new finding(s) beyond noise: {probe_of(4)} (30 of 30 vs not judged in the baseline)",
        f"1 finding(s) more frequent beyond noise: {probe_of(5)} "
        "(25 of 30 vs 2 of 30 in the baseline)",
        "AIVSS dropped by 6 (from 74 to 68), more than the tolerance 0",
    ]
    assert any("1 finding(s) decided on presence alone" in n for n in c.notes)


def _with_unjudged(report: ScanReport, probe_id: str) -> ScanReport:
    extra = scan([], unjudged=[probe_id]).results
    return report.model_copy(update={"results": report.results + extra})


def test_a_flip_of_one_in_thirty_is_within_noise_either_way() -> None:
    flaky_now = compare(_thirty(resisted=(1,)), _thirty(1, p1=(1, 30)))
    gone_now = compare(_thirty(1, p1=(1, 30)), _thirty(resisted=(1,)))
    for c, now, was in ((flaky_now, (1, 30), (0, 30)), (gone_now, (0, 30), (1, 30))):
        assert c.new == c.fixed == c.changed == []
        [ref] = c.within_noise
        assert (ref.current_counts, ref.baseline_counts) == (
            Counts(vulnerable=now[0], judged=now[1]),
            Counts(vulnerable=was[0], judged=was[1]),
        )
        assert not ref.too_few_attempts  # 30 a side could show a change; this is noise
        assert not c.regression
        assert c.tests == 0  # one vulnerable attempt in all could never reach the level


def test_none_of_thirty_to_eighteen_of_thirty_is_a_regression() -> None:
    c = compare(_thirty(resisted=(1,)), _thirty(1, p1=(18, 30)))
    [ref] = c.new
    assert (ref.baseline_counts, ref.current_counts) == (
        Counts(vulnerable=0, judged=30),
        Counts(vulnerable=18, judged=30),
    )
    assert ref.p_value is not None and ref.p_value < 1e-6
    assert c.regression and c.level == 0.01 and c.tests == 1


def test_a_fall_beyond_chance_of_a_finding_still_there_is_better_not_fixed() -> None:
    c = compare(_thirty(1, p1=(25, 30)), _thirty(1, p1=(2, 30)))
    assert [(f.probe_id, f.change) for f in c.changed] == [(probe_of(1), "better")]
    assert c.fixed == [] and not c.regression


def test_counts_within_noise_of_each_other_persist() -> None:
    c = compare(_thirty(1, p1=(10, 30)), _thirty(1, p1=(14, 30)))
    [ref] = c.persisting
    assert ref.change == "" and ref.p_value is not None and ref.p_value > 0.01
    assert not c.regression


def test_one_attempt_a_side_is_too_few_to_tell_and_says_what_would() -> None:
    c = compare(scan(resisted=[probe_of(1)]), scan([finding(1)]))
    [ref] = c.within_noise
    assert ref.too_few_attempts
    assert (ref.baseline_counts, ref.current_counts) == (
        Counts(vulnerable=0, judged=1),
        Counts(vulnerable=1, judged=1),
    )
    assert not c.regression
    assert any("too few attempts" in n and "--confirm N" in n for n in c.notes)


def test_the_correction_counts_only_the_tables_that_could_reach_the_level() -> None:
    # Alone, 0 of 30 -> 7 of 30 is beyond chance at 1 % (p = 0.0053).
    alone = compare(_thirty(resisted=(1,)), _thirty(1, p1=(7, 30)))
    assert [f.probe_id for f in alone.new] == [probe_of(1)] and alone.tests == 1
    # Forty probes that flipped once each are no tests: the correction does not count them.
    flips = tuple(range(10, 50))
    base = _thirty(resisted=(1, *flips))
    cur = _thirty(1, *flips, p1=(7, 30), **{f"p{i}": (1, 30) for i in flips})
    with_flips = compare(base, cur)
    assert [f.probe_id for f in with_flips.new] == [probe_of(1)] and with_flips.tests == 1
    assert len(with_flips.within_noise) == len(flips)
    # A finding in 5 of 30 attempts on both sides could have shown a rise: it is a test, and
    # with two tests the smallest p-value is held to half the level (0.0053 > 0.005).
    two = compare(_thirty(2, resisted=(1,), p2=(5, 30)), _thirty(1, 2, p1=(7, 30), p2=(5, 30)))
    assert two.tests == 2 and two.new == [] and len(two.within_noise) == 1
    # Two such rises support each other: each is at most 2/2 of the level.
    both = compare(_thirty(resisted=(1, 2)), _thirty(1, 2, p1=(7, 30), p2=(7, 30)))
    assert both.tests == 2 and len(both.new) == 2


def test_confirm_runs_are_pooled_with_the_first_run() -> None:
    base = _thirty(resisted=(1,))
    first = scan([finding(1)])  # 1 of 1 in a fast scan
    reproduced = Confirmation(
        runs=2,
        probes=[
            ConfirmedProbe(
                probe_id=probe_of(1),
                first=Counts(vulnerable=1, judged=1),
                confirm=Counts(vulnerable=2, judged=2),
                planned=2,
            )
        ],
    )
    c = compare(base, first, confirmation=reproduced)
    [ref] = c.new  # 3 of 3 against 0 of 30: p = 1 / C(33, 3)
    assert ref.current_counts == Counts(vulnerable=3, judged=3)
    assert ref.confirm_counts == Counts(vulnerable=2, judged=2)
    assert c.confirmation == reproduced
    flaked = reproduced.model_copy(
        update={
            "probes": [
                reproduced.probes[0].model_copy(update={"confirm": Counts(vulnerable=0, judged=2)})
            ]
        }
    )
    assert compare(base, first, confirmation=flaked).new == []
    # A stored report keeps its confirmation in its comparison: compare decides the same.
    stored = first.model_copy(update={"comparison": c})
    assert compare(base, stored).new == c.new


# A sampled model: each probe vulnerable at its own rate in every attempt, independently.
RATES = {1: 0.3, 2: 0.05, 3: 0.5, 4: 0.9, 5: 0.0, 6: 0.02, 7: 0.0, 8: 0.15}


def _sampled(rng: random.Random, rates: dict[int, float], attempts: int) -> ScanReport:
    counts = {
        probe_of(i): (sum(rng.random() < p for _ in range(attempts)), attempts)
        for i, p in rates.items()
    }
    found = [i for i in rates if counts[probe_of(i)][0]]
    report = scan(
        [finding(i) for i in found], resisted=[probe_of(i) for i in rates if i not in found]
    )
    return scored(with_counts(report, counts))


@pytest.mark.parametrize("attempts", [1, 3, 30])
def test_an_unchanged_sampled_agent_almost_never_regresses(attempts: int) -> None:
    rng = random.Random(34)
    runs = [
        compare(_sampled(rng, RATES, attempts), _sampled(rng, RATES, attempts)) for _ in range(300)
    ]
    # The level allows 1 in 100; Fisher's test on counts this small keeps well inside it.
    assert sum(c.regression for c in runs) <= 3
    flips = sum(len(c.within_noise) for c in runs)
    assert flips > 100  # the flaky findings did flip: the noise was there to be told apart


def test_a_real_rise_from_none_to_sixty_percent_is_always_found() -> None:
    rng = random.Random(35)
    after = RATES | {5: 0.6}
    runs = [compare(_sampled(rng, RATES, 30), _sampled(rng, after, 30)) for _ in range(200)]
    assert all(probe_of(5) in {f.probe_id for f in c.new} for c in runs)


def test_a_score_drop_a_flaky_finding_made_is_noise() -> None:
    base = _thirty(resisted=(1, 2))
    cur = _thirty(1, resisted=(2,), p1=(1, 30))  # a high finding once in 30: the score's cap
    c = compare(base, cur)
    assert c.aivss_delta == -26 and c.aivss_delta_beyond_noise == 0
    assert not c.score_regression and not c.regression
    assert (
        "AIVSS dropped by 26 (from 100 to 74), but with the findings within noise counted as "
        "in the baseline it did not drop: not a regression"
    ) in c.notes


def test_a_score_drop_beyond_noise_still_regresses_beyond_the_tolerance() -> None:
    base = _thirty(resisted=(1, 2))
    # Probe 1 rises beyond chance (its high severity caps the score at 74); probe 2 flips.
    cur = _thirty(1, 2, p1=(12, 30), p2=(1, 30))
    c = compare(base, cur, tolerance=1.0)
    assert [f.probe_id for f in c.new] == [probe_of(1)]
    assert [f.probe_id for f in c.within_noise] == [probe_of(2)]
    assert c.aivss_delta == c.aivss_delta_beyond_noise == -26
    assert c.score_regression
    assert c.reasons[-1] == "AIVSS dropped by 26 (from 100 to 74), more than the tolerance 1"
    wide = compare(base, cur, tolerance=26.0)
    assert not wide.score_regression and wide.regression  # the new finding still is one


def test_new_suppressed_finding_is_listed_not_a_regression() -> None:
    c = compare(scan(), scan([suppressed(finding(1), "accepted risk")]))
    assert c.new == []
    assert [(f.probe_id, f.suppression_reason) for f in c.new_suppressed] == [
        (probe_of(1), "accepted risk")
    ]
    assert not c.regression


def test_persisting_suppressed_finding_stays_marked() -> None:
    c = compare(scan([finding(1)]), scan([suppressed(finding(1))]))
    assert [f.suppressed for f in c.persisting] == [True]
    assert not c.regression


@pytest.mark.parametrize(
    ("drop", "tolerance", "regression"),
    [(0, 0.0, False), (1, 0.0, True), (3, 5.0, False), (5, 5.0, False), (6, 5.0, True)],
)
def test_score_drop_beyond_tolerance_regresses(
    drop: int, tolerance: float, regression: bool
) -> None:
    c = compare(scan(aivss=80), scan(aivss=80 - drop), tolerance=tolerance)
    assert c.aivss_delta == -drop
    assert c.score_regression is regression
    assert c.regression is regression
    if regression:
        assert f"AIVSS dropped by {drop} (from 80 to {80 - drop})" in c.reasons[0]


def test_score_rise_never_regresses() -> None:
    assert not compare(scan(aivss=50), scan(aivss=90)).regression


@pytest.mark.parametrize("tolerance", [-1.0, float("nan")])
def test_bad_tolerance_is_a_usage_error(tolerance: float) -> None:
    with pytest.raises(UsageError, match="--tolerance"):
        compare(scan(), scan(), tolerance=tolerance)


def test_not_evaluated_score_is_not_gated() -> None:
    c = compare(scan(aivss=90), scan(aivss=0, band="not_evaluated"))
    assert not c.score_gated
    assert not c.regression
    assert any("not_evaluated" in n for n in c.notes)


def test_per_asi_deltas_cover_both_sides() -> None:
    c = compare(
        scan(asi_scores={"ASI01": 50.0, "ASI02": 80.0}),
        scan(asi_scores={"ASI01": 42.5, "ASI03": 10.0}),
    )
    assert [(d.asi, d.baseline, d.current, d.delta) for d in c.asi_deltas[:3]] == [
        ("ASI01", 50.0, 42.5, -7.5),
        ("ASI02", 80.0, None, None),
        ("ASI03", None, 10.0, None),
    ]
    # All ten categories, each side with its state: a category neither side scored is there.
    assert [d.asi for d in c.asi_deltas] == list(ASI_IDS)
    assert (c.asi_deltas[1].baseline_state, c.asi_deltas[1].current_state) == (
        "tested",
        "not_selected",
    )
    assert c.asi_deltas[9].baseline_state == c.asi_deltas[9].current_state == "not_selected"
    assert not c.regression  # per-ASI deltas are reported, not gated


@pytest.mark.parametrize(
    ("base_kwargs", "cur_kwargs", "message"),
    [
        ({"library": "2026.11.1"}, {"library": "2026.12.0"}, "probe library versions differ"),
        ({"mode": "fast"}, {"mode": "full"}, "modes differ"),
    ],
)
def test_mismatched_scans_are_refused(
    base_kwargs: dict[str, str], cur_kwargs: dict[str, str], message: str
) -> None:
    with pytest.raises(UsageError) as info:
        compare(scan(**base_kwargs), scan(**cur_kwargs))  # type: ignore[arg-type]
    assert message in info.value.message
    assert "--allow-mismatch" in info.value.message


def test_allow_mismatch_compares_the_common_probes_only_and_says_so() -> None:
    base = scan([finding(1), finding(2)], resisted=[probe_of(3)], library="old", aivss=90)
    cur = scan([finding(1), finding(3), finding(5)], resisted=[probe_of(2)], aivss=10)
    thirty = {probe_of(1): (30, 30), probe_of(2): (30, 30), probe_of(3): (0, 30)}
    base = with_counts(base, thirty)
    cur = with_counts(cur, {probe_of(2): (0, 30), probe_of(3): (30, 30), probe_of(5): (30, 30)})
    c = compare(base, cur, allow_mismatch=True)
    assert c.common_probes_only
    assert c.mismatch and "probe library versions differ" in c.mismatch[0]
    assert [f.probe_id for f in c.persisting] == [probe_of(1)]
    assert [f.probe_id for f in c.fixed] == [probe_of(2)]
    assert [f.probe_id for f in c.new] == [probe_of(3)]
    assert [f.probe_id for f in c.not_compared] == [probe_of(5)]
    assert not c.score_gated and not c.score_regression  # 90 -> 10 is not comparable
    assert c.regression  # the new finding on a common probe still is
    assert any("only the 3 probe(s) present in both scans" in n for n in c.notes)


def test_upstream_baseline_compares_with_allow_mismatch() -> None:
    upstream = load_report(UPSTREAM)
    cur = scan(resisted=["pi.system-leak.v1", "mem.poison.v1"], mode="full", aivss=70)
    with pytest.raises(UsageError, match="probe library versions differ"):
        compare(upstream, cur)
    c = compare(upstream, cur, allow_mismatch=True)
    # The seed format lists a finding once, as one vulnerable attempt: against one resisted
    # attempt now, that is within noise, not fixed (too few attempts to tell).
    assert [(f.probe_id, f.too_few_attempts) for f in c.within_noise] == [
        ("pi.system-leak.v1", True)
    ]
    # tool.refund-abuse.v1 was not run by the current scan: not compared, never "fixed"
    assert [f.probe_id for f in c.not_compared] == ["tool.refund-abuse.v1"]
    assert not c.regression
    assert c.baseline.schema_ == "agentguardian-scan-v1"
    assert any("no per-probe results" in n for n in c.notes)


def test_duplicate_fingerprints_are_compared_once_and_noted() -> None:
    base = scan([finding(1), finding(1)])
    c = compare(base, scan([finding(1)]))
    assert len(c.persisting) == 1
    assert any("baseline report lists 1 fingerprint(s) more than once" in n for n in c.notes)


def test_expired_and_stale_suppressions_are_noted() -> None:
    cur = scan([finding(1)]).model_copy(
        update={"expired_suppressions": [finding(1).fp], "stale_suppressions": ["dead"]}
    )
    notes = " ".join(compare(scan([finding(1)]), cur).notes)
    assert f"1 suppression(s) expired and count again: {finding(1).fp}" in notes
    assert "1 stale suppression(s) match no finding: dead" in notes


def test_comparison_json_is_complete_and_deterministic() -> None:
    base = scan([finding(1)])
    cur = scan([finding(2)])
    data = compare(base, cur).to_dict()
    assert data["schema"] == "probegate-compare-v1"
    assert data["baseline"]["schema"] == "probegate-scan-v1"
    assert data["new"][0]["fp"] == finding(2).fp
    assert data == compare(base, cur).to_dict()


# --------------------------------------------------------------------------- refreshing


def test_write_baseline_copies_the_exact_bytes(tmp_path: Path) -> None:
    src = tmp_path / "scan.json"
    src.write_bytes(json_report.render(scan([finding(1)])) + b" ")
    dest = tmp_path / "nested" / "baseline.json"
    write_baseline(src, dest)
    assert dest.read_bytes() == src.read_bytes()
    assert not dest.with_name("baseline.json.tmp").exists()


def test_write_baseline_from_a_missing_report_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError):
        write_baseline(tmp_path / "missing.json", tmp_path / "b.json")
    assert not (tmp_path / "b.json").exists()
