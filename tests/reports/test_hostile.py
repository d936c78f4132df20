"""A hostile agent reply leaves every format valid and inert.

The reply (``samples.HOSTILE``) carries ``<script>``, ``]]>``, ``::error::`` and
``::add-mask::`` at line starts, Markdown table pipes and backticks, ANSI colour and OSC
hyperlink escapes, NUL/BEL/VT control characters and a bidi override; it is put in every
agent-controlled field of a report (summary, transcript, evidence, trigger prompt, reasons,
suppression reason).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

from probegate.reports import html_report, junit, markdown, sarif
from probegate.reports.sarif.schema import sarif_validator
from tests.reports.samples import hostile_report

_RAW = ("\x1b", "\x00", "\x07", "\x0b", "\u202e")


def test_sarif_stays_valid_and_keeps_the_text_as_data() -> None:
    data = sarif.render(hostile_report())
    doc = json.loads(data)
    assert list(sarif_validator().iter_errors(doc)) == []
    text = data.decode("utf-8")
    for raw in _RAW:
        assert raw not in text and json.dumps(raw)[1:-1] not in text
    message = doc["runs"][0]["results"][0]["message"]["text"]
    assert "<script>alert(1)</script>" in message  # shown as text, escaped by the JSON itself


def test_junit_parses_and_holds_no_illegal_characters() -> None:
    data = junit.render(hostile_report())
    root = ET.fromstring(data)  # raises on malformed XML
    text = data.decode("utf-8")
    for raw in _RAW:
        assert raw not in text
    assert "<script>" not in text and "]]>" not in text
    failure = root.find(".//failure")
    assert failure is not None and failure.text is not None
    assert "<script>alert(1)</script>" in failure.text  # round-trips as text
    assert "]]>" in failure.text
    for line in [*(failure.text or "").splitlines(), failure.get("message", "")]:
        assert not line.lstrip().startswith("::"), line


def test_markdown_is_inert() -> None:
    text = markdown.render(hostile_report()).decode("utf-8")
    for raw in _RAW:
        assert raw not in text
    for line in text.splitlines():
        assert not line.lstrip().startswith("::"), line
    assert "<script" not in text
    assert "::error::" not in text and "::add-mask::" not in text
    # every table row keeps its column count: pipes in agent text are escaped
    for block in re.split(r"\n\n", text):
        rows = [r for r in block.splitlines() if r.startswith("|")]
        counts = {len(re.findall(r"(?<!\\)\|", row)) for row in rows}
        assert len(counts) <= 1, block
    assert "\\`tick\\`" in text  # backticks cannot open a code span


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self.in_script = False
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.in_script = tag == "script"
        for name, value in attrs:
            if name in ("src", "href", "action", "formaction") and value:
                self.urls.append(value)

    def handle_data(self, data: str) -> None:
        if self.in_script:
            self.scripts.append(data)

    def handle_endtag(self, tag: str) -> None:
        self.in_script = False


def test_html_has_no_raw_agent_markup_and_only_our_script() -> None:
    text = html_report.render(hostile_report()).decode("utf-8")
    assert "<script>alert" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    for raw in _RAW:
        assert raw not in text
    parser = _Tags()
    parser.feed(text)
    assert parser.scripts == [html_report._JS]  # exactly one script element, ours
    assert parser.urls == []  # nothing loads or links anywhere
    # the evidence that points into the hostile reply is highlighted, escaped
    assert "<mark>&lt;script&gt;alert(1)&lt;/script&gt;</mark>" in text
