"""Reading reports at the edge, comparing two scans, refreshing the baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probegate.baseline import compare, write_baseline
from probegate.errors import ReportError, UsageError
from probegate.models.report import finding_fp
from probegate.models.stored import load_report, parse_report
from probegate.models.taxonomy import ASI_IDS, Severity
from probegate.reports import json_report
from tests.factories import finding, fp_of, probe_of, scan, suppressed

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


def test_new_fixed_persisting_and_unconfirmed_are_told_apart() -> None:
    base = scan([finding(1), finding(2), finding(3)])
    cur = scan(
        [finding(1), finding(4)],
        resisted=[probe_of(2)],  # judged and resisted: fixed
        unjudged=[probe_of(3)],  # not judged: not fixed
    )
    c = compare(base, cur)
    assert [f.probe_id for f in c.new] == [probe_of(4)]
    assert [f.probe_id for f in c.fixed] == [probe_of(2)]
    assert [f.probe_id for f in c.persisting] == [probe_of(1)]
    assert [f.probe_id for f in c.unconfirmed] == [probe_of(3)]
    assert c.regression
    assert c.reasons == ["1 new finding(s) not in the baseline"]


def test_a_probe_the_current_scan_did_not_run_is_not_fixed() -> None:
    c = compare(scan([finding(1)]), scan())
    assert c.fixed == []
    assert [f.probe_id for f in c.unconfirmed] == [probe_of(1)]
    assert not c.regression


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
    assert [f.probe_id for f in c.fixed] == ["pi.system-leak.v1"]
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
