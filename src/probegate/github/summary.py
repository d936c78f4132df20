"""The job summary: the gate's decision, the scan's Markdown, and GitHub's 1 MiB cap."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from probegate.errors import EXIT_LABELS, ExitCode
from probegate.github.annotations import (
    AnnotationPlan,
    annotation_file,
    gated_findings,
)
from probegate.models.report import ScanReport, most_severe_first
from probegate.reports.escape import clean_text, md_text
from probegate.reports.headline import (
    category_states,
    category_text,
    coverage_text,
    out_of_100,
    scale,
    score_text,
)

SUMMARY_LIMIT = 1024 * 1024  # GitHub's job-summary cap per step, in bytes
LOG_LINES = 10  # gate and error lines of the scan's log quoted in the summary
TRUNCATED_NOTE = (
    "\n\n> *Truncated to fit GitHub's 1 MiB job-summary limit; the full report is in the "
    "output directory.*\n\n"
)
_DECISIONS: dict[int, str] = {
    ExitCode.PASSED: "passed",
    ExitCode.GATE_FAILED: "failed",
    ExitCode.UNDECIDED: "undecided",
    ExitCode.INTERRUPTED: "cancelled",
    ExitCode.TERMINATED: "cancelled",
}
# A cancelled job's scan stopped on a signal: not a row of the exit-code table (not a verdict).
_CANCELLED: dict[int, str] = {
    ExitCode.INTERRUPTED: "the scan was interrupted (SIGINT); the reports are partial",
    ExitCode.TERMINATED: "the scan was stopped (SIGTERM, a cancelled job); the reports are partial",
}


def fallback_summary(report: ScanReport, *, max_rows: int = 10) -> str:
    """A compact summary from ``scan.json`` when the Markdown format was not asked for."""
    gated = gated_findings(report)
    auth = "yes" if report.authority.authoritative else "**no**"
    lines = [
        f"## probegate: {md_text(report.band)} ({out_of_100(report.aivss)})",
        "",
        "| Score (AIVSS) | Band | Mode | Authoritative | Findings |",
        "|---:|---|---|---|---:|",
        f"| **{score_text(report.aivss)}**{scale(report.aivss, ' / 100')} "
        f"| {md_text(report.band)} | {md_text(report.mode)} "
        f"| {auth} | {len(gated)} |",
        "",
        f"Covers: {md_text(coverage_text(report))}",
        "",
    ]
    for reason in report.authority.reasons[:10]:
        lines.append(f"- {md_text(reason, limit=300)}")
    if report.authority.reasons:
        lines.append("")
    lines += ["| Category | Score | Unjudged attempts | Note |", "|---|---:|---:|---|"]
    for asi, state in category_states(report).items():
        note = "" if state.state == "tested" else state.reason
        lines.append(
            f"| {md_text(asi)} | {md_text(category_text(state))} | {state.unjudged} "
            f"| {md_text(note, limit=200)} |"
        )
    lines.append("")
    findings = most_severe_first(gated)
    if findings:
        lines += [
            f"### Top findings ({min(max_rows, len(findings))} of {len(findings)})",
            "",
            "| Severity | Finding | Probe | Location |",
            "|---|---|---|---|",
        ]
        for f in findings[:max_rows]:
            where = annotation_file(f.location) or ""
            if where:
                where = f"{where} line {f.location.line}"
            lines.append(
                f"| {f.severity} | {md_text(f.name or f.summary, limit=160)} "
                f"| {md_text(f.probe_id)} | {md_text(where)} |"
            )
        lines.append("")
    lines.append("Add `md` to the `formats` input for the full Markdown report.")
    return "\n".join(lines) + "\n"


def gate_section(
    code: int,
    *,
    messages: Sequence[str] = (),
    annotations: AnnotationPlan | None = None,
    problems: Sequence[str] = (),
    notices: Sequence[str] = (),
) -> str:
    """The gate's decision: exit code, the scan's own gate lines, what was left out."""
    decision = _DECISIONS.get(code, "error")
    label = EXIT_LABELS.get(code) or _CANCELLED.get(code, "unknown")
    lines = [f"> **probegate gate: {decision}** (exit code {code}: {label})"]
    for message in list(messages)[:LOG_LINES]:
        lines.append(f"> - {md_text(message, limit=300)}")
    for problem in problems:
        lines.append(f"> - Action: {md_text(problem, limit=300)}")
    for notice in notices:
        lines.append(f"> - {md_text(notice, limit=400)}")
    if annotations is not None and annotations.hidden > 0:
        lines.append(
            f"> - {len(annotations.shown)} of {sum(annotations.totals.values())} findings are "
            "annotated (GitHub shows at most 10 per level); all are in the reports."
        )
    return "\n".join(lines) + "\n\n"


def missing_baseline_note(path: str) -> str:
    """Why a first run without a baseline file is green, and how to get one."""
    return (
        f"no baseline file at {path} yet: this run has no baseline gate and every finding "
        "counts as new. Commit a scan.json there (probegate compare BASELINE CURRENT "
        "--write-baseline FILE) or keep main's scan as an artifact (docs/github-action.md)."
    )


def _fair_shares(sizes: Sequence[int], total: int) -> list[int]:
    """Split ``total`` bytes so small parts keep their size and big parts share the rest."""
    shares = [0] * len(sizes)
    remaining = max(total, 0)
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for rank, index in enumerate(order):
        share = min(sizes[index], remaining // (len(sizes) - rank))
        shares[index] = share
        remaining -= share
    return shares


def _cut(text: str, budget: int) -> str:
    """The longest prefix of whole lines that fits in ``budget`` UTF-8 bytes."""
    data = text.encode("utf-8")
    if len(data) <= budget:
        return text
    head = data[: max(budget, 0)].decode("utf-8", errors="ignore")
    newline = head.rfind("\n")
    return head[: newline + 1] if newline >= 0 else ""


def fit_summary(parts: Sequence[str], limit: int) -> tuple[str, bool]:
    """Join ``parts`` within ``limit`` bytes; parts that do not fit are cut at a line end.

    Returns the text and whether anything was cut. The result is never over ``limit``.
    """
    sizes = [len(p.encode("utf-8")) for p in parts]
    if sum(sizes) <= limit:
        return "".join(parts), False
    note = len(TRUNCATED_NOTE.encode("utf-8"))
    shares = _fair_shares(sizes, limit - note * len(parts))
    out: list[str] = []
    for part, size, share in zip(parts, sizes, shares, strict=True):
        out.append(part if size <= share else _cut(part, share) + TRUNCATED_NOTE)
    text = "".join(out)
    return (text if len(text.encode("utf-8")) <= limit else _cut(text, limit)), True


def log_messages(log: Path | None) -> list[str]:
    """The scan's gate decisions and errors from its log, for the summary (untrusted text)."""
    if log is None:
        return []
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    # `gate NAME: STATUS: reason` lines of the scan, its errors, compare's decision line.
    keep = ("gate ", "error:", "hint:", "probegate compare:", "probegate run:")
    found: list[str] = []
    for line in text.splitlines():
        line = clean_text(line).strip()
        if line.startswith(keep) and line not in found:
            found.append(line)
    return found[-LOG_LINES:]
