"""The agreement with AgentDojo's checks (``--suite agentdojo``) in the HTML and PDF reports.

Both say what the Markdown summary says, from the same rows and words (agreement_text): the
table per suite and overall, the kinds of disagreement with why, and the disagreements, capped
with how many more. Agent text in the reasons and transcripts stays text. A report without an
agreement section has none (the golden files hold its HTML to the byte).
"""

from __future__ import annotations

from pathlib import Path

from probegate.reports import html_report, markdown, pdf_report
from probegate.reports.agreement_html import DISAGREEMENTS_SHOWN
from probegate.reports.agreement_text import DIFFERENCES, HEADERS, TITLE, agreement_rows
from probegate.reports.escape import html_text
from probegate.reports.pdf_agreement import DISAGREEMENTS_MAX
from tests.reports.agreement_samples import agreement_report
from tests.reports.inert import assert_html_inert
from tests.reports.pdfpages import read_pdf
from tests.reports.samples import golden_report


def _section(page: str) -> str:
    start = page.index(f"<h2>{html_text(TITLE)}</h2>")
    return page[start : page.index("<h2>", start + 4)]


def test_html_shows_the_table_the_kinds_and_each_disagreement() -> None:
    report = agreement_report()
    assert report.agreement is not None
    page = html_report.render(report).decode("utf-8")
    assert_html_inert(page, [html_report._JS])
    section = _section(page)
    # Before the findings: for a scan of AgentDojo's suites it is the headline.
    assert page.index(section) < page.index("<h2>Findings")
    assert "".join(f"<th>{html_text(h)}</th>" for h in HEADERS) in section
    for row in agreement_rows(report.agreement):
        assert "<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in row) + "</tr>" in section
    assert [r[0] for r in agreement_rows(report.agreement)] == ["banking", "slack", "overall"]
    assert "3 disagreement(s), by why:" in section
    for item in report.agreement.disagreements:
        assert html_text(DIFFERENCES[item.difference]) in section
        assert f'<span class="mono">{html_text(item.probe_id)}</span>' in section
        assert f"({item.suite}: {item.user_task}, {item.injection_task})" in section
    # The reason and the transcript are the agent's words: escaped, the evidence marked.
    assert "<script>alert" not in section
    assert "reason 10: &lt;script&gt;alert(1)&lt;/script&gt;" in section
    assert "<details><summary>Transcript</summary>" in section
    assert "<pre><mark>evil</mark>-iban</pre>" in section
    assert "more, listed in" not in section


def test_html_lists_the_first_disagreements_and_counts_the_rest() -> None:
    report = agreement_report(DISAGREEMENTS_SHOWN + 12)
    assert report.agreement is not None
    total = len(report.agreement.disagreements)
    section = _section(html_report.render(report).decode("utf-8"))
    assert section.count('<li><span class="mono">') == DISAGREEMENTS_SHOWN
    assert f"… and {total - DISAGREEMENTS_SHOWN} more, listed in" in section


def test_html_and_markdown_say_the_same_words() -> None:
    report = agreement_report()
    assert report.agreement is not None
    summary = markdown.render(report).decode("utf-8")
    page = html_report.render(report).decode("utf-8")
    assert f"### {TITLE}" in summary and f"<h2>{html_text(TITLE)}</h2>" in page
    for kind in {d.difference for d in report.agreement.disagreements}:
        assert DIFFERENCES[kind] in summary and html_text(DIFFERENCES[kind]) in page


def test_a_report_without_agreement_has_no_section() -> None:
    report = golden_report()
    assert report.agreement is None
    assert TITLE not in html_report.render(report).decode("utf-8")
    assert html_text(TITLE) not in html_report.render(report).decode("utf-8")


def test_pdf_shows_the_table_the_kinds_and_each_disagreement(tmp_path: Path) -> None:
    report = agreement_report()
    assert report.agreement is not None
    data = pdf_report.render(report)
    for marker in (b"/URI", b"/JavaScript", b"/JS", b"/Launch", b"/Annots"):
        assert marker not in data, marker
    pages = read_pdf(data, tmp_path)
    text = " ".join(" ".join(p.text for p in pages).split())
    assert TITLE in text
    assert "AgentDojo 0.1.35 (v1.2.2) security checks; attack important_instructions" in text
    # The table on its side: one row per measure, the suites and overall as columns.
    rows = agreement_rows(report.agreement)
    assert "suite banking slack overall" in text
    for i, name in enumerate(HEADERS[1:], 1):
        assert " ".join([name, *(row[i] for row in rows)]) in text
    assert "3 disagreement(s), by why:" in text
    for item in report.agreement.disagreements:
        assert f"{item.difference}: {DIFFERENCES[item.difference]}" in text
        said = "succeeded" if item.agentdojo else "failed"
        assert f"{item.probegate} / {said} {item.difference}" in text
        assert item.probe_id in text
        assert f"{item.suite}: {item.user_task}, {item.injection_task}" in text
    assert "reason 10: <script>alert(1)</script>" in text  # shown literally, never read
    assert "more in scan.json" not in text


def test_pdf_lists_the_first_disagreements_and_counts_the_rest(tmp_path: Path) -> None:
    report = agreement_report(DISAGREEMENTS_MAX + 7)
    assert report.agreement is not None
    total = len(report.agreement.disagreements)
    pages = read_pdf(pdf_report.render(report))
    text = " ".join(" ".join(p.text for p in pages).split())
    shown = [d.probe_id for d in report.agreement.disagreements]
    assert shown[DISAGREEMENTS_MAX - 1] in text and shown[DISAGREEMENTS_MAX] not in text
    assert f"… and {total - DISAGREEMENTS_MAX} more in scan.json." in text


def test_a_pdf_without_agreement_has_no_section(tmp_path: Path) -> None:
    pages = read_pdf(pdf_report.render(golden_report()))
    assert TITLE not in " ".join(p.text for p in pages)
