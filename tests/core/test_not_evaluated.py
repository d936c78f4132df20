"""A scan too thin to score says so in every format: no number, the reason, exit 3 on a score
gate (docs/scoring.md, "Not evaluated")."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from probegate.cli import main


def test_a_scan_the_budget_cut_to_a_few_attempts_is_not_evaluated_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = main(
        ["scan", "demo", "--mode", "full", "--repeat", "1", "--max-requests", "30", "--no-sign",
         "--store", str(tmp_path / "store"), "--output-dir", str(out), "--output",
         "json,sarif,junit,md,html", "--fail-under", "50"]
    )  # fmt: skip
    assert code == 3
    captured = capsys.readouterr()
    err = captured.err
    assert "AIVSS n/a cannot pass a score gate" in err and "too thin to score" in err
    report = json.loads((out / "scan.json").read_text(encoding="utf-8"))
    assert report["aivss"] is None and report["band"] == "not_evaluated"
    assert "not_evaluated" in report["authority"]["failed"]
    assert report["asi_scores"] == {} and report["undertested"]
    sarif = json.loads((out / "scan.sarif").read_text(encoding="utf-8"))["runs"][0]["properties"]
    assert "aivss" not in sarif and sarif["aivss_shown"] == "n/a"
    # The budget stopped the scan: its categories are unfinished or never started, no score.
    no_score = {"n/a (undertested)", "n/a (unfinished)", "n/a (not run)"}
    assert set(sarif["asi_scores_shown"].values()) <= no_score
    props = {
        p.get("name"): p.get("value")
        for p in ET.parse(out / "junit.xml").getroot().iter("property")
    }
    assert props["probegate.aivss"] == "n/a"
    for asi in report["undertested"]:
        assert props[f"{asi}.score"] in no_score
    # Not-applicable categories have no score either: never a number.
    assert {v for k, v in props.items() if k.endswith(".score")} <= no_score | {"n/a"}
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "| **n/a** |" in summary and "No score: " in summary
    html = (out / "report.html").read_text(encoding="utf-8")
    assert '<span class="score">n/a</span>' in html and "n/a (unfinished)" in html
    for text in (summary, html):
        assert "100.0" not in text
        assert "n/a/100" not in text and "n/a / 100" not in text  # no scale after no number
    assert "score n/a  band not_evaluated" in captured.out
