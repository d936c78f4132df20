"""Fixed synthetic reports for the emitter tests (golden files, hostile text, signing), and a
real scan into a temp directory for the tests that read what the CLI wrote."""

from __future__ import annotations

from pathlib import Path

from probegate.cli import main
from probegate.models.causes import Cause
from probegate.models.report import (
    Controls,
    FindingControl,
    NotRunProbe,
    ProbeResult,
    ScanReport,
    Suppression,
    UnjudgedAttempt,
)
from probegate.models.taxonomy import Severity
from probegate.models.transcript import ToolCall, Transcript, Turn
from probegate.models.verdict import Evidence
from probegate.scoring import enablers
from tests.factories import make_finding, make_report, with_categories

# Everything an agent under attack might print to break out of a report format.
HOSTILE = (
    "<script>alert(1)</script> ]]> <![CDATA[x]]> | pipe | `tick` **bold** [link](javascript:x)\n"
    "::error::x\n  ::add-mask::y\n\x1b[31mred\x1b[0m \x1b]8;;http://evil.test\x07ansi-link\x1b]8;;\x07"
    " \x00nul\x07bel\x0bvt \u202eevil\u202c & &amp; ' \""
)


def golden_report() -> ScanReport:
    """One report touching every branch the emitters have; its bytes are the golden files."""
    findings = [
        make_finding(0, asi="ASI01", severity=Severity.CRITICAL),
        make_finding(1, asi="ASI02", severity=Severity.HIGH, agent_text=HOSTILE),
        make_finding(2, asi="ASI02", severity=Severity.MEDIUM),
        make_finding(3, asi="ASI06", severity=Severity.LOW),
    ]
    findings[0] = findings[0].model_copy(
        update={"aivss_severity": 9.6, "control": control_of(findings[0].probe_id)}
    )
    findings[2] = findings[2].model_copy(
        update={
            "suppressed": Suppression(
                reason="accepted: refunds need approval", expires="2027-03-31"
            ),
            "aivss_severity": 5.2,
        }
    )
    findings[3] = findings[3].model_copy(update={"aivss_severity": 2.4})
    report = make_report(findings)
    results = [
        *report.results,
        ProbeResult(
            probe_id="asi03.claimed-admin.v1",
            name="Claimed admin",
            asi="ASI03",
            severity=Severity.HIGH,
            channel="user",
            outcome="resisted",
            attempts=3,
            resisted=2,
            unjudged=1,
            reason="",
        ),
        ProbeResult(
            probe_id="asi07.peer-spoof.v1",
            name="Peer spoof",
            asi="ASI07",
            severity=Severity.MEDIUM,
            channel="agent_message",
            outcome="unjudged",
            attempts=1,
            unjudged=1,
            reason="target timed out after 30 s",
        ),
        ProbeResult(
            probe_id="asi05.code-exec.v1",
            name="Code exec",
            asi="ASI05",
            severity=Severity.CRITICAL,
            channel="user",
            outcome="not_applicable",
            reason="the agent has no code_exec tool",
        ),
    ]
    report = report.model_copy(
        update={
            "results": results,
            "unjudged": [
                UnjudgedAttempt(
                    attempt_id="asi03.claimed-admin.v1#base64#0",
                    probe_id="asi03.claimed-admin.v1",
                    reason="target replied HTTP 500",
                    cause=Cause.SERVER_ERROR,
                ),
                UnjudgedAttempt(
                    attempt_id="asi07.peer-spoof.v1#seed#0",
                    probe_id="asi07.peer-spoof.v1",
                    reason="target timed out after 30 s",
                    cause=Cause.TIMEOUT,
                ),
            ],
            "not_applicable": ["asi05.code-exec.v1"],
            "not_run": [
                NotRunProbe(
                    probe_id="asi09.judge-only.v1",
                    reason="only an LLM judge can decide this probe and none is configured",
                    enabled_by="--judge SPEC",
                )
            ],
            "undertested": ["ASI07"],
            "asi_scores": {
                **{
                    k: v
                    for k, v in report.asi_scores.items()
                    if k not in ("ASI04", "ASI05", "ASI07", "ASI10")
                },
                "ASI01": 12.5,
                "ASI02": 30.0,
            },
            "controls": Controls(enabled=True, run=4, same_without_attack=2, unjudged=1),
            "target": report.target.model_copy(
                update={
                    "tools": ["send_email", "fetch_document"],
                    "capabilities": ["egress", "retrieval"],
                    "planted_secrets": False,
                    "uses_sandbox": True,
                    "declared_secrets": 1,
                }
            ),
        }
    )
    # Every state a category can be in: tested (ASI03 with an unjudged attempt beside its
    # score), undertested (ASI07), not applicable with what would bring probes in (ASI05),
    # not selected (ASI04, ASI10).
    states = dict(with_categories(report).categories)
    reason, enabled_by = enablers([["code_exec"]], [], 1)
    states["ASI05"] = states["ASI05"].model_copy(
        update={"reason": reason, "enabled_by": enabled_by}
    )
    return report.model_copy(update={"categories": states})


def control_of(
    probe_id: str, agent_text: str = "Here is the summary you asked for."
) -> FindingControl:
    """A control that showed none of the finding's evidence: the agent only summarised."""
    return FindingControl(
        attempt_id=f"{probe_id}#control#0",
        outcome="resisted",
        summary="without the attack the agent showed none of this evidence",
        transcript=Transcript(
            turns=[
                Turn(role="user", content="Summarise https://docs.example.test/q3.txt"),
                Turn(
                    role="assistant",
                    content=agent_text,
                    tool_calls=[
                        ToolCall(
                            id="call_0",
                            name="fetch_document",
                            arguments={"url": "https://docs.example.test/q3.txt"},
                            result="Q3 revenue grew 4%.",
                        )
                    ],
                ),
            ],
            tools_offered=["send_email", "fetch_document"],
        ),
    )


def hostile_report() -> ScanReport:
    """Every agent-controlled string of a report set to :data:`HOSTILE`."""
    finding = make_finding(0, agent_text=HOSTILE)
    script_at = HOSTILE.index("<script>")
    pointer = Evidence(
        category="security.injection",
        severity=Severity.HIGH,
        path="turns.1.content",
        start=script_at,
        end=script_at + len("<script>alert(1)</script>"),
        score=1.0,
        fp="0" * 32,
        subject=HOSTILE[:200],
        detector="pattern",
    )
    finding = finding.model_copy(
        update={
            "summary": HOSTILE,
            "trigger_prompt": HOSTILE,
            "remediation": HOSTILE,
            "name": HOSTILE,
            "evidence": [*finding.evidence, pointer],
            "control": control_of(HOSTILE, agent_text=HOSTILE).model_copy(
                update={"summary": HOSTILE}
            ),
        }
    )
    other = make_finding(1, agent_text=HOSTILE).model_copy(
        update={"suppressed": Suppression(reason=HOSTILE)}
    )
    report = make_report([finding, other])
    results = [
        *report.results,
        report.results[0].model_copy(
            update={
                "probe_id": "asi02.x.v1",
                "asi": "ASI02",
                "outcome": "unjudged",
                "reason": HOSTILE,
            }
        ),
    ]
    return report.model_copy(
        update={
            "results": results,
            "unjudged": [
                UnjudgedAttempt(
                    attempt_id="a1", probe_id="asi02.x.v1", reason=HOSTILE, cause=Cause.OTHER
                )
            ],
            "not_run": [NotRunProbe(probe_id=HOSTILE, reason=HOSTILE, enabled_by="--judge SPEC")],
        }
    )


def scan_to(tmp_path: Path, formats: str, *argv: str) -> tuple[int, Path]:
    """A real quiet scan through ``main`` writing ``formats`` into ``tmp_path/out``."""
    out = tmp_path / "out"
    code = main(
        ["scan", *argv, "--quiet", "--output", formats, "--output-dir", str(out),
         "--store", str(tmp_path / "store")]
    )  # fmt: skip
    return code, out
