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
