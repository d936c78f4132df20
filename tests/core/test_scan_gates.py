"""The scan command wires suppressions, baselines and gates (docs/gating.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from probegate.models.probe import stable_id
from tests.conftest import load_json, run_cli


def _scan(*extra: str) -> int:
    return run_cli("scan", *extra, "--quiet", "--no-sign")


def test_suppressing_every_high_finding_turns_fail_on_high_green(in_tmp: Path) -> None:
    assert _scan("demo", "--fail-on", "high") == 1
    report = load_json(in_tmp / "probegate-out" / "scan.json")
    lines = ["suppressions:"]
    for f in report["findings"]:
        if f["severity"] in ("high", "critical"):
            lines += [f'  - fp: "{f["fp"]}"', '    reason: "accepted for the test"']
    (in_tmp / ".probegate-suppressions.yml").write_text("\n".join(lines) + "\n", "utf-8")
    assert _scan("demo", "--fail-on", "high") == 0
    again = load_json(in_tmp / "probegate-out" / "scan.json")
    suppressed = [f for f in again["findings"] if f["suppressed"]]
    assert suppressed and all(f["severity"] in ("high", "critical") for f in suppressed)
    # still reported, and medium findings still gate
    assert len(again["findings"]) == len(report["findings"])
    assert _scan("demo", "--fail-on", "medium") == 1


def test_expired_suppression_counts_again(in_tmp: Path) -> None:
    assert _scan("demo") == 0
    report = load_json(in_tmp / "probegate-out" / "scan.json")
    lines = ["suppressions:"]
    for f in report["findings"]:
        lines += [f'  - fp: "{f["fp"]}"', "    reason: old", "    expires: 2020-01-01"]
    lines += ['  - fp: "0000000000000000000000000000dead"', "    reason: gone"]
    (in_tmp / "s.yml").write_text("\n".join(lines) + "\n", "utf-8")
    assert _scan("demo", "--fail-on", "low", "--suppressions", "s.yml") == 1
    again = load_json(in_tmp / "probegate-out" / "scan.json")
    assert len(again["expired_suppressions"]) == len(report["findings"])
    assert again["stale_suppressions"] == ["0000000000000000000000000000dead"]


def test_missing_named_suppression_file_is_a_usage_error(in_tmp: Path) -> None:
    assert _scan("demo", "--suppressions", "nope.yml") == 2


# Enough attempts a probe for none against all to be beyond chance (docs/gating.md).
REPEATED = ("--repeat", "8", "--asi", "ASI01,ASI02")


def test_baseline_regression_fails_and_is_stored(in_tmp: Path) -> None:
    assert _scan("demo-hardened", *REPEATED, "--output-dir", "base") == 0
    assert _scan("demo", *REPEATED, "--baseline", "base/scan.json") == 1
    report = load_json(in_tmp / "probegate-out" / "scan.json")
    assert report["comparison"]["regression"] is True
    assert len(report["comparison"]["new"]) == len(report["findings"])
    assert _scan("demo-hardened", *REPEATED, "--baseline", "base/scan.json") == 0


def test_bad_baseline_fails_before_scanning(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "b.json").write_text("{not json", "utf-8")
    assert _scan("demo", "--baseline", "b.json") == 2
    assert not (in_tmp / ".probegate").exists()
    assert "b.json" in capsys.readouterr().err


def test_suppressed_findings_still_appear_in_every_format(in_tmp: Path) -> None:
    assert _scan("demo") == 0
    report = load_json(in_tmp / "probegate-out" / "scan.json")
    target = next(f for f in report["findings"] if f["severity"] == "high")
    (in_tmp / ".probegate-suppressions.yml").write_text(
        f'suppressions:\n  - fp: "{target["fp"]}"\n    reason: "accepted downstream"\n', "utf-8"
    )
    assert _scan("demo", "--output", "json,sarif,junit,md,html") == 0
    out = in_tmp / "probegate-out"
    scan = load_json(out / "scan.json")
    marked = [f for f in scan["findings"] if f["fp"] == target["fp"]]
    assert marked and marked[0]["suppressed"]["reason"] == "accepted downstream"
    sarif = load_json(out / "scan.sarif")
    results = sarif["runs"][0]["results"]
    suppressed = [r for r in results if r.get("suppressions")]
    assert len(results) == len(scan["findings"]) and len(suppressed) == 1
    assert suppressed[0]["ruleId"] == stable_id(target["probe_id"])
    for name in ("junit.xml", "summary.md", "report.html"):
        assert target["probe_id"] in (out / name).read_text(encoding="utf-8"), name
    assert "accepted downstream" in (out / "summary.md").read_text(encoding="utf-8")
