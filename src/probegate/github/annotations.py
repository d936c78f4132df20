"""Findings as annotations on the pull request: the most severe first, within GitHub's caps."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from probegate.github.workflow import workflow_command
from probegate.models.report import Finding, ScanReport, SourceLocation, most_severe_first
from probegate.models.taxonomy import Severity
from probegate.reports.escape import clean_text, truncate

ANNOTATIONS_PER_LEVEL = 10  # GitHub shows at most 10 errors, 10 warnings, 10 notices per step
MESSAGE_LIMIT = 2000  # characters of one annotation message
TITLE_LIMIT = 200

AnnotationLevel = Literal["error", "warning", "notice"]
_LEVEL_OF_SEVERITY: dict[Severity, AnnotationLevel] = {
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "notice",
}


def gated_findings(report: ScanReport) -> list[Finding]:
    """The findings the gates count: every finding that is not suppressed."""
    return [f for f in report.findings if f.suppressed is None]


def annotation_file(location: SourceLocation | None) -> str | None:
    """A finding's location as an annotation ``file``: repo-relative, no ``..``, else None."""
    if location is None:
        return None
    text = clean_text(location.path).strip()
    if not text or "://" in text:
        return None
    posix = Path(text.replace("\\", "/"))
    if posix.is_absolute() or ".." in posix.parts:
        return None
    return posix.as_posix()


@dataclass(frozen=True)
class Annotation:
    level: AnnotationLevel
    title: str
    message: str
    file: str | None = None
    line: int | None = None

    def command(self) -> str:
        return workflow_command(
            self.level, self.message, {"file": self.file, "line": self.line, "title": self.title}
        )


@dataclass(frozen=True)
class AnnotationPlan:
    shown: list[Annotation]
    totals: dict[AnnotationLevel, int]

    @property
    def hidden(self) -> int:
        return sum(self.totals.values()) - len(self.shown)


def plan_annotations(
    report: ScanReport, *, per_level: int = ANNOTATIONS_PER_LEVEL
) -> AnnotationPlan:
    """The most severe unsuppressed findings, at most ``per_level`` of each annotation level."""
    shown: list[Annotation] = []
    totals: dict[AnnotationLevel, int] = {"error": 0, "warning": 0, "notice": 0}
    for finding in most_severe_first(gated_findings(report)):
        level = _LEVEL_OF_SEVERITY[finding.severity]
        totals[level] += 1
        if totals[level] > per_level:
            continue
        title = truncate(
            clean_text(f"probegate {finding.severity}: {finding.name or finding.probe_id}")
            .replace("\n", " ")
            .strip(),
            TITLE_LIMIT,
        )
        parts = [finding.summary.strip()]
        if finding.remediation.strip():
            parts.append("Remediation: " + finding.remediation.strip())
        parts.append(f"Probe {finding.probe_id}, finding {finding.id}.")
        message = truncate(clean_text("\n".join(parts)), MESSAGE_LIMIT)
        file = annotation_file(finding.location)
        line = finding.location.line if file else None
        shown.append(Annotation(level, title, message, file, line if line and line > 0 else None))
    return AnnotationPlan(shown, totals)
