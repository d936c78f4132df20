"""The step summary: what a reviewer needs first, and never over GitHub's 1 MiB."""

from __future__ import annotations

import pytest

from probegate.models.report import Authority
from probegate.reports import markdown
from tests.factories import make_finding, make_report
from tests.reports.samples import golden_report

MIB = 1024 * 1024


def test_score_band_authority_and_counts_are_the_report_numbers() -> None:
    report = golden_report().model_copy(
        update={
            "authority": Authority(
                authoritative=False,
                failed=["mode_authoritative", "undertested"],
                reasons=["mode is fast; only --mode full is authoritative"],
            )
        }
    )
    text = markdown.render_summary(report)
    assert f"**{report.aivss}** / 100" in text
    assert report.band in text.splitlines()[0]
    assert "not authoritative" in text
    assert "only --mode full is authoritative" in text
    assert "mode_authoritative" not in text  # the reasons in words, never the names
    summary = report.findings_summary
    assert f"{summary['critical']} critical · {summary['high']} high" in text
    assert f"**unjudged attempts:** {len(report.unjudged)}" in text
    for asi, score in report.asi_scores.items():
        note = " (1 unjudged)" if asi == "ASI03" else ""  # missing evidence beside the score
        assert any(
            line.startswith(f"| {asi} ") and f"| {score}{note} |" in line
            for line in text.splitlines()
        )
    # An undertested category shows no score, never 100.
    assert "| ASI07 Insecure Inter-Agent Communication | n/a (undertested) |" in text
    assert "100.0" not in text


def test_authoritative_scan_says_so() -> None:
    report = make_report(mode="full")
    assert "The score is **authoritative**" in markdown.render_summary(report)


def test_top_findings_lead_with_the_worst_and_show_evidence() -> None:
    text = markdown.render_summary(golden_report())
    top = text.index("#### 1. CRITICAL")
    assert top < text.index("#### 2. HIGH") < text.index("#### 3. LOW")
    assert "<b>PG-CANARY-abc123</b>" in text  # the evidence in its transcript context
    assert "Suppressed findings (1)" in text  # suppressed ones are listed apart, not hidden


@pytest.mark.slow
def test_ten_thousand_findings_stay_under_one_mebibyte() -> None:
    findings = [make_finding(i, agent_text="x" * 400 + " | <b>" * 50) for i in range(10_000)]
    report = make_report(findings)
    data = markdown.render(report)
    assert len(data) < MIB
    assert len(data) <= markdown.MAX_BYTES
    text = data.decode("utf-8")
    assert "10000 high" in text
    assert "more, listed in `scan.json`" in text or "Summary truncated" in text


def test_a_tight_budget_truncates_with_a_note() -> None:
    report = make_report([make_finding(i) for i in range(50)])
    text = markdown.render_summary(report, max_bytes=6000)
    assert len(text.encode()) <= 6000
    assert "Summary truncated" in text
    full = markdown.render_summary(report)
    assert "Summary truncated" not in full
    assert full.count("#### ") == markdown.TOP_FINDINGS
    assert markdown.render_summary(report, max_findings=3).count("#### ") == 3


def test_a_scan_too_thin_to_score_says_n_a_and_why() -> None:
    report = golden_report().model_copy(
        update={
            "aivss": None,
            "band": "not_evaluated",
            "authority": Authority(
                authoritative=False,
                failed=["not_evaluated"],
                reasons=["too thin to score: none of the 4 applicable categories was well tested"],
            ),
        }
    )
    text = markdown.render_summary(report)
    assert text.splitlines()[0] == "## probegate: not\\_evaluated (n/a)"
    assert "| **n/a** |" in text
    assert "No score: none of the 4 applicable categories was well tested." in text


def test_controls_and_probes_not_run_are_shown() -> None:
    text = markdown.render_summary(golden_report())
    assert "Controls: 4 run; 2 attempt(s) showed the same behaviour without the attack" in text
    assert "(the same conversation without the attack): without the attack the agent" in text
    assert "### Not run (1)" in text and "<code>--judge SPEC</code>" in text
