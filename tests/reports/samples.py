"""Fixed synthetic reports for the emitter tests (golden files, hostile text, signing), and a
real scan into a temp directory for the tests that read what the CLI wrote."""

from __future__ import annotations

from pathlib import Path

from probegate.cli import main
from probegate.models.report import ProbeResult, ScanReport, Suppression, UnjudgedAttempt
from probegate.models.taxonomy import Severity
from probegate.models.verdict import Evidence
from tests.factories import make_finding, make_report

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
    findings[0] = findings[0].model_copy(update={"aivss_severity": 9.6})
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
            attempts=2,
            resisted=2,
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
    return report.model_copy(
        update={
            "results": results,
            "unjudged": [
                UnjudgedAttempt(
                    attempt_id="asi07.peer-spoof.v1#seed#0",
                    probe_id="asi07.peer-spoof.v1",
                    reason="target timed out after 30 s",
                )
            ],
            "not_applicable": ["asi05.code-exec.v1"],
            "undertested": ["ASI07"],
            "asi_scores": {**report.asi_scores, "ASI01": 12.5, "ASI02": 30.0, "ASI07": 100.0},
        }
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
            "unjudged": [UnjudgedAttempt(attempt_id="a1", probe_id="asi02.x.v1", reason=HOSTILE)],
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
