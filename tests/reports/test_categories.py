"""Every format shows each ASI category's state beside its score: a category with unjudged
attempts says how many next to its score, never a bare number (docs/scoring.md, "Missing
evidence never raises a score")."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from probegate.reports import FORMATS
from tests.reports.pdfpages import read_pdf
from tests.reports.samples import golden_report

# The golden report's ASI03 is scored 50 with one of its three attempts unjudged.
SHOWN = "50.0 (1 unjudged)"


def _text(name: str) -> str:
    return FORMATS[name].render(golden_report()).decode("utf-8")


def test_markdown_html_and_pdf_show_unjudged_attempts_beside_the_score() -> None:
    assert f"| {SHOWN} |" in _text("md")
    html = _text("html")
    assert f">{SHOWN}</text>" in html
    pages = read_pdf(FORMATS["pdf"].render(golden_report()))
    assert any(SHOWN in page.text for page in pages)


def test_sarif_and_junit_carry_the_count_as_data_and_as_shown() -> None:
    props = json.loads(_text("sarif"))["runs"][0]["properties"]
    assert props["asi_scores_shown"]["ASI03"] == SHOWN
    assert props["asi_unjudged"] == {"ASI03": 1, "ASI07": 1}
    junit = {p.get("name"): p.get("value") for p in ET.fromstring(_text("junit")).iter("property")}
    assert junit["ASI03.score"] == SHOWN and junit["ASI03.unjudged"] == "1"
    assert junit["ASI01.unjudged"] == "0"


STATES = {
    "ASI03": "50.0 (1 unjudged)",
    "ASI04": "n/a (not selected)",
    "ASI05": "n/a (not applicable)",
    "ASI07": "n/a (undertested)",
}


def test_every_format_shows_all_ten_categories_each_with_its_state() -> None:
    report = golden_report()
    assert len(report.categories) == 10
    why = report.categories["ASI05"].reason
    assert "capability code_exec" in why
    md, html = _text("md"), _text("html")
    pdf = "".join(page.text for page in read_pdf(FORMATS["pdf"].render(report)))
    for asi in report.categories:
        assert f"| {asi} " in md and f"<td>{asi}</td>" in html and asi in pdf
    for shown in STATES.values():
        assert f"| {shown} |" in md and f">{shown}<" in html and shown in pdf
    assert why.replace("_", "\\_") in md and why in html
    assert "capability code_exec" in pdf  # the reason, below the chart
    data = json.loads(_text("json"))
    assert data["categories"]["ASI05"]["enabled_by"] == ["capability code_exec"]
    assert {c["state"] for c in data["categories"].values()} == {
        "tested",
        "undertested",
        "not_applicable",
        "not_selected",
    }
    props = json.loads(_text("sarif"))["runs"][0]["properties"]
    assert len(props["asi_scores_shown"]) == 10 and props["asi_states"]["ASI05"]["reason"] == why
