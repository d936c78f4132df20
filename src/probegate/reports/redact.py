"""Redacting a report: every agent-facing text in the report form of placeholders.

The redaction itself (what is sensitive, the placeholders, moving evidence offsets) is
:mod:`probegate.models.redaction`, shared with the engine, which stores attempts in the stored
form while a scan runs; here a whole report is walked with one report-form
:class:`~probegate.models.redaction.Redactor`, so the numbering is the report's own and the
stored-form placeholders of journaled attempts are folded into it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probegate.models.agreement import Agreement
from probegate.models.redaction import (
    OffsetMap,
    Redactor,
    redact_text,
    redact_transcript_evidence,
)
from probegate.models.report import Finding, ScanReport
from probegate.models.sections import KindSection

__all__ = ["OffsetMap", "Redactor", "redact_report", "redact_text"]


def redact_report(report: ScanReport, secrets: Mapping[str, str]) -> ScanReport:
    """A copy of ``report`` with every agent-facing text redacted (see the module docstring).

    Redacted: finding summaries, trigger prompts, transcripts (the finding's and its control's,
    every string, at any depth of tool-call arguments), evidence subjects and offsets, probe
    result and unjudged reasons, the target's inferred goal and the strings of the section a
    target kind adds. Ids, fingerprints, paths and library text are left alone: they are not
    agent output, and a digit run in a fingerprint must not turn into ``${PHONE_1}``.
    A report that changes loses its ``signatures``: redact first, then sign.
    """
    redactor = Redactor(secrets)
    findings = [_redact_finding(f, redactor) for f in report.findings]
    results = [r.model_copy(update={"reason": redactor.text(r.reason)}) for r in report.results]
    unjudged = [u.model_copy(update={"reason": redactor.text(u.reason)}) for u in report.unjudged]
    target = report.target.model_copy(
        update={"inferred_goal": redactor.text(report.target.inferred_goal)}
    )
    update: dict[str, Any] = {
        "findings": findings,
        "results": results,
        "unjudged": unjudged,
        "target": target,
    }
    for name, section in _kind_sections(report).items():
        update[name] = type(section).model_validate(redactor.value(section.model_dump()))
    if report.agreement is not None:
        update["agreement"] = _redact_agreement(report.agreement, redactor)
    out = report.model_copy(update=update)
    if out != report:
        out = out.model_copy(update={"signatures": None})
    return out


def _kind_sections(report: ScanReport) -> dict[str, Any]:
    """The typed sections target kinds add (a guard's failures may quote what it was sent)."""
    return {
        name: value
        for name in type(report).model_fields
        if isinstance(value := getattr(report, name), KindSection)
    }


def _redact_agreement(agreement: Agreement, redactor: Redactor) -> Agreement:
    """Each disagreement's transcript, evidence and reason, as a finding's are."""
    listed = []
    for item in agreement.disagreements:
        transcript, evidence = redact_transcript_evidence(item.transcript, item.evidence, redactor)
        listed.append(
            item.model_copy(
                update={
                    "transcript": transcript,
                    "evidence": evidence,
                    "reason": redactor.text(item.reason),
                }
            )
        )
    return agreement.model_copy(update={"disagreements": listed})


def _redact_finding(finding: Finding, redactor: Redactor) -> Finding:
    update: dict[str, Any] = {"summary": redactor.text(finding.summary)}
    if finding.trigger_prompt is not None:
        update["trigger_prompt"] = redactor.text(finding.trigger_prompt)
    update["transcript"], update["evidence"] = redact_transcript_evidence(
        finding.transcript, finding.evidence, redactor
    )
    if finding.control is not None:
        # The control is the same conversation without the attack: the same secrets may be in it.
        transcript, evidence = redact_transcript_evidence(
            finding.control.transcript, finding.control.evidence, redactor
        )
        # Its summary can quote why it failed (an agent's error message): redacted as text.
        update["control"] = finding.control.model_copy(
            update={
                "transcript": transcript,
                "evidence": evidence,
                "summary": redactor.text(finding.control.summary),
            }
        )
    return finding.model_copy(update=update)
