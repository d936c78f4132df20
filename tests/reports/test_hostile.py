"""A hostile agent reply leaves every format valid and inert.

The reply (``samples.HOSTILE``) carries ``<script>``, ``]]>``, ``::error::`` and
``::add-mask::`` at line starts, Markdown table pipes and backticks, ANSI colour and OSC
hyperlink escapes, NUL/BEL/VT control characters and a bidi override; it is put in every
agent-controlled field of a report (summary, transcript, evidence, trigger prompt, reasons,
suppression reason).
"""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from probegate.reports import html_report, junit, markdown, sarif
from probegate.reports.escape import html_text, md_code, md_text
from probegate.reports.sarif.schema import sarif_validator
from tests.reports.inert import (
    assert_html_inert,
    assert_markdown_inert,
    assert_sarif_message_inert,
    assert_xml_inert,
)
from tests.reports.samples import hostile_report


def test_sarif_stays_valid_and_keeps_the_text_as_data() -> None:
    data = sarif.render(hostile_report())
    doc = json.loads(data)
    assert list(sarif_validator().iter_errors(doc)) == []
    text = data.decode("utf-8")
    for raw in ("\x1b", "\x00", "\x07", "\x0b", "\u202e"):
        assert raw not in text and json.dumps(raw)[1:-1] not in text
    message = doc["runs"][0]["results"][0]["message"]["text"]
    assert_sarif_message_inert(message)
    assert "<script>alert(1)</script>" in message  # shown as text, escaped by the JSON itself


def test_junit_parses_and_holds_no_illegal_characters() -> None:
    data = junit.render(hostile_report())
    root = assert_xml_inert(data)
    text = data.decode("utf-8")
    assert "<script>" not in text and "]]>" not in text
    failure = root.find(".//failure")
    assert failure is not None and failure.text is not None
    assert "<script>alert(1)</script>" in failure.text  # round-trips as text
    assert "]]>" in failure.text


def test_markdown_is_inert() -> None:
    text = markdown.render(hostile_report()).decode("utf-8")
    assert_markdown_inert(text)
    assert "<script" not in text
    assert "::error::" not in text and "::add-mask::" not in text
    assert "\\`tick\\`" in text  # backticks cannot open a code span


def test_html_has_no_raw_agent_markup_and_only_our_script() -> None:
    text = html_report.render(hostile_report()).decode("utf-8")
    assert_html_inert(text, [html_report._JS])  # exactly one script element, ours; no URL
    assert "<script>alert" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    # the evidence that points into the hostile reply is highlighted, escaped
    assert "<mark>&lt;script&gt;alert(1)&lt;/script&gt;</mark>" in text


# Text made of what Markdown, HTML and a CI log read as syntax, so short examples hit it.
MARKUP = st.lists(
    st.sampled_from(
        [*"[]()!*_~`|\\<>&\"':/@#.=-+ \n\taw", "www.", "https", "::", "\x1b", "\u202e", "<br>"]
    )
).map("".join)


@given(MARKUP)
@example("<code>[click](https://evil.test/x)</code> www.evil.test @team ~~x~~ **b**")
@example("a\n::error::x\n  ::add-mask::y")
def test_any_text_in_a_cell_or_a_code_span_is_one_inert_cell(text: str) -> None:
    # md_code writes inside <code>, where Markdown is still read: no link, image or cell of its
    # own, whatever the text; md_text the same in a plain cell.
    table = f"| a | b |\n|---|---|\n| {md_text(text)} | {md_code(text)} |\n"
    assert_markdown_inert(table)


@given(MARKUP)
@example("x\n::error::y </p><script>alert(1)</script>")
def test_any_text_in_html_is_text(text: str) -> None:
    assert_html_inert(f'<p title="{html_text(text)}">{html_text(text)}</p>\n')
