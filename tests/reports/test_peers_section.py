"""The report's ``peers`` section: what an agent did with the A2A peers probegate served it.

Counts only, so the section is the same bytes for the same agent; it is merged across shards
by summing, as the MCP server's and the model proxy's are; Markdown, HTML and PDF show it as a
table of the same rows, and a report without it shows none (the golden files hold that).
"""

from __future__ import annotations

import json

from probegate.engine.shards import _sections
from probegate.models.report import ScanReport
from probegate.models.sections import McpUnauthenticated, PeerRejections, PeersSummary
from probegate.reports import html_report, markdown, pdf_report
from probegate.reports.escape import html_text
from probegate.reports.peers_summary import TITLE, peer_rows
from tests.reports.inert import assert_html_inert, assert_markdown_inert
from tests.reports.pdfpages import read_pdf
from tests.reports.samples import golden_report


def _peers(n: int) -> PeersSummary:
    return PeersSummary(
        conversations=4 * n,
        cards=8 * n,
        messages=66 * n,
        tasks=64 * n,
        rejected=PeerRejections(flood=2 * n, unknown_peer=n),
        unauthenticated=McpUnauthenticated(requests=n),
    )


def _report(peers: PeersSummary | None) -> ScanReport:
    return golden_report().model_copy(update={"peers": peers})


def test_the_rows_say_each_count_and_each_reason_that_counted() -> None:
    assert peer_rows(_peers(1)) == [
        ("conversations", "4"),
        ("agent cards served", "8"),
        ("messages received", "66"),
        ("tasks answered", "64"),
        ("requests refused", "3 (1 to a peer not declared, 2 past the message limit)"),
        ("traffic without a token (not the agent's)", "1 (1 to an address never issued)"),
    ]
    quiet = _peers(1).model_copy(
        update={"rejected": PeerRejections(), "unauthenticated": McpUnauthenticated()}
    )
    assert peer_rows(quiet)[-2:] == [
        ("requests refused", "0"),
        ("traffic without a token (not the agent's)", "0"),
    ]


def test_the_section_round_trips_and_is_left_out_when_absent() -> None:
    report = _report(_peers(1))
    data = report.to_dict()
    assert data["peers"]["rejected"]["flood"] == 2 and data["peers"]["tasks"] == 64
    assert ScanReport.model_validate(json.loads(json.dumps(data))) == report
    assert "peers" not in golden_report().to_dict()


def test_shards_sum_their_peers_counts() -> None:
    shards = [_report(_peers(1)), _report(_peers(2)), _report(None)]
    assert _sections(shards)["peers"] == _peers(3)
    assert _sections([_report(None)])["peers"] is None


def test_markdown_html_and_pdf_show_the_rows() -> None:
    report = _report(_peers(1))
    rows = peer_rows(_peers(1))
    summary = markdown.render(report).decode("utf-8")
    assert_markdown_inert(summary)
    assert f"### {TITLE}" in summary
    for label, value in rows:
        assert f"| {label} | {value} |" in summary.replace("&#x27;", "'")
    page = html_report.render(report).decode("utf-8")
    assert_html_inert(page, [html_report._JS])
    assert f"<h2>{TITLE}</h2>" in page
    for label, value in rows:
        assert f"<tr><th>{html_text(label)}</th><td>{html_text(value)}</td></tr>" in page
    text = " ".join(" ".join(p.text for p in read_pdf(pdf_report.render(report))).split())
    assert TITLE in text
    for label, value in rows:
        assert f"{label} {value}" in text


def test_a_report_without_peers_has_no_section() -> None:
    report = golden_report()
    assert TITLE not in markdown.render(report).decode("utf-8")
    assert TITLE not in html_report.render(report).decode("utf-8")
