"""The Markdown summary, written for ``$GITHUB_STEP_SUMMARY``.

GitHub shows at most 1 MiB of summary per step, so the summary has a byte budget
(:data:`MAX_BYTES`, leaving room for the Action's baseline section) and truncates with a note
pointing at the full report, however many findings the scan has. It leads with what a reviewer
needs: the score and band, whether the score is authoritative and why not, the per-category
table, then the worst findings with their evidence.

Agent text goes through :func:`escape.md_text` / :func:`escape.md_code`: tags, table pipes,
backticks and links are inert, ANSI escapes are gone, and no line can start with ``::`` (a
workflow command when the summary is also printed to the log).
"""

from __future__ import annotations

from typing import Any

from probegate.models.agreement import Agreement, Disagreement
from probegate.models.report import Delivery, Finding, ScanReport, most_severe_first
from probegate.models.sections import GuardSummary
from probegate.models.taxonomy import ASI_TITLES, Severity
from probegate.models.transcript import resolve_path
from probegate.reports.agreement_text import (
    DIFFERENCES,
    HEADERS,
    TITLE,
    agreement_heading,
    agreement_rows,
)
from probegate.reports.diff_markdown import render_diff
from probegate.reports.digest import authority_reasons, stop_text, unjudged_groups
from probegate.reports.escape import md_code, md_text, number
from probegate.reports.guard_summary import guard_rows
from probegate.reports.headline import (
    category_states,
    category_text,
    controls_text,
    coverage_text,
    not_evaluated_reason,
    out_of_100,
    scale,
    score_text,
    surface_text,
)
from probegate.reports.peers_summary import TITLE as PEERS_TITLE
from probegate.reports.peers_summary import peer_rows

MAX_BYTES = 900 * 1024  # GitHub's limit is 1 MiB per step; the Action may add a section
TOP_FINDINGS = 10
TABLE_ROWS = 300
UNJUDGED_ROWS = 50  # causes listed; each cause is one row however many attempts it covers
SNIPPET_CONTEXT = 80


def render(report: ScanReport) -> bytes:
    return render_summary(report).encode("utf-8")


def render_summary(
    report: ScanReport,
    *,
    max_findings: int = TOP_FINDINGS,
    max_table_rows: int = TABLE_ROWS,
    max_bytes: int = MAX_BYTES,
) -> str:
    """The summary as text: at most ``max_findings`` detailed findings, ``max_table_rows``
    more in a table, and never more than ``max_bytes`` UTF-8 bytes."""
    out = _Budget(max_bytes)
    out.add(_header(report))
    if report.comparison is not None:
        # With a baseline, what changed is the first thing a reviewer needs.
        diff = render_diff(report.comparison)
        out.add([*diff.rstrip("\n").split("\n"), ""])
    out.add(_asi_table(report))
    if report.delivery is not None and report.delivery.attempts:
        out.add(_delivery(report.delivery))
    if report.guard is not None:
        out.add(_guard(report.guard))
    if report.peers is not None:
        out.add(_rows(PEERS_TITLE, peer_rows(report.peers)))
    if report.agreement is not None:
        out.add(_agreement(report.agreement))

    ranked = most_severe_first(report.findings)
    active = [f for f in ranked if f.suppressed is None]
    suppressed = [f for f in ranked if f.suppressed is not None]
    _add_findings(out, active, suppressed, max_findings, max_table_rows)
    if suppressed:
        out.add(_findings_table("Suppressed findings", suppressed, max_table_rows))
    if report.unjudged:
        out.add(_unjudged(report))
    if report.not_run:
        out.add(_not_run(report))
    if report.stale_suppressions or report.expired_suppressions:
        out.add(_suppression_notes(report))
    if report.agreement is not None:
        for index, item in enumerate(report.agreement.disagreements, 1):
            if not out.add(_disagreement(index, item)):
                break
    return out.text(
        f"_Summary truncated to stay under GitHub's step summary limit; {len(report.findings)} "
        "finding(s) in total. The full list is in `scan.json` and `report.html`._"
    )


def _add_findings(
    out: _Budget,
    active: list[Finding],
    suppressed: list[Finding],
    max_findings: int,
    max_table_rows: int,
) -> None:
    """The worst ``max_findings`` findings in detail, the rest in a table; or why there is
    none, when every finding is suppressed or no probe succeeded."""
    if not active:
        message = "No probe succeeded against the agent."
        if suppressed:
            message = "Every finding is suppressed."
        out.add(["### Findings", "", message, ""])
        return
    shown = active[:max_findings]
    out.add([f"### Top findings ({len(shown)} of {len(active)})", ""])
    for i, finding in enumerate(shown, 1):
        if not out.add(_finding_block(i, finding)):
            break
    rest = active[len(shown) :]
    if rest:
        out.add(_findings_table("More findings", rest, max_table_rows))


class _Budget:
    """Collects blocks of lines until the byte budget would be exceeded; once one block does
    not fit, it is full and refuses every later one, so callers offer each block in turn."""

    def __init__(self, max_bytes: int) -> None:
        self._max = max_bytes - 400  # room for the truncation note
        self._size = 0
        self._lines: list[str] = []
        self.full = False

    def add(self, lines: list[str]) -> bool:
        if self.full:
            return False
        size = sum(len(line.encode("utf-8")) + 1 for line in lines)
        if self._size + size > self._max:
            self.full = True
            return False
        self._lines.extend(lines)
        self._size += size
        return True

    def text(self, note: str) -> str:
        lines = list(self._lines)
        if self.full:
            lines += ["", note, ""]
        return "\n".join(lines).rstrip("\n") + "\n"


def _header(report: ScanReport) -> list[str]:
    summary = report.findings_summary
    counts = " · ".join(f"{summary.get(s.value, 0)} {s.value}" for s in Severity)
    suppressed = sum(1 for f in report.findings if f.suppressed is not None)
    authority = report.authority
    lines = [
        f"## probegate: {md_text(report.band)} ({out_of_100(report.aivss)})",
        "",
        "| Score (AIVSS) | Band | Tier | Mode | Authoritative | Scan |",
        "|---:|---|---|---|---|---|",
        f"| **{score_text(report.aivss)}**{scale(report.aivss, ' / 100')} "
        f"| {md_text(report.band)} | {md_text(report.tier)} "
        f"| {report.mode} | {'yes' if authority.authoritative else '**no**'} "
        f"| {md_code(report.scan_id)} |",
        "",
        f"**Covers:** {md_text(coverage_text(report))}",
        "",
        f"**Surface:** {md_text(surface_text(report.target))}",
        "",
    ]
    if report.aivss is None:
        lines += [f"No score: {md_text(not_evaluated_reason(report))}.", ""]
    if authority.authoritative:
        lines.append(
            "The score is **authoritative**: full mode, real evaluation, complete coverage."
        )
    else:
        lines.append(
            "The score is **not authoritative**, so `--fail-under` cannot pass on this scan. "
            "Confirmed findings still count for `--fail-on` and `--baseline`. What would change it:"
        )
        lines += [f"- {md_text(reason)}" for reason in authority_reasons(report)]
    lines += [
        "",
        f"**Stopped:** {md_text(stop_text(report))}",
        "",
        f"**Findings:** {counts}"
        + (f" ({suppressed} suppressed)" if suppressed else "")
        + f" · **unjudged attempts:** {len(report.unjudged)}"
        + (f" · **not run:** {len(report.not_run)}" if report.not_run else "")
        + f" · **not applicable:** {len(report.not_applicable)}",
        "",
        md_text(controls_text(report)),
        "",
        f"Formula {md_code(report.aivss_formula_version)} · probe library "
        f"{md_code(report.probe_library_version)} · probegate "
        f"{md_code(report.package_version)}",
        "",
    ]
    return lines


def _delivery(delivery: Delivery) -> list[str]:
    """Whether each attempt's attack reached the agent, by the channel it came through."""
    lines = [
        "### Delivery",
        "",
        f"The attack reached the agent in {delivery.delivered} of {delivery.attempts} attempts "
        '(docs/scoring.md, "Delivery"): an attack it never read is neither resisted nor a '
        "finding.",
        "",
        "| Channel | Attempts | Delivered | Not delivered | Failed first |",
        "|---|---:|---:|---:|---:|",
    ]
    for channel, counts in delivery.by_channel.items():
        lines.append(
            f"| {md_text(channel.replace('_', ' '))} | {counts.attempts} | {counts.delivered} "
            f"| {counts.not_delivered} | {counts.failed} |"
        )
    lines.append("")
    return lines


def _asi_table(report: ScanReport) -> list[str]:
    """All ten categories, each with its state: score (unjudged attempts beside it) or why not."""
    tally: dict[str, dict[str, int]] = {}
    for result in report.results:
        row = tally.setdefault(result.asi, {"vulnerable": 0, "resisted": 0, "undecided": 0})
        if result.outcome in row:
            row[result.outcome] += 1
    lines = [
        "### OWASP Top 10 for Agentic Applications",
        "",
        "Probes by outcome (undecided: resisted where judged, but some attempts were not), "
        "then attempts with no verdict and attempts whose attack never reached the agent.",
        "",
        "| Category | Score | Probes | Vulnerable | Resisted | Undecided | Unjudged attempts "
        "| Not delivered | Note |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for asi, state in category_states(report).items():
        row = tally.get(asi, {})
        note = "" if state.state == "tested" else state.reason
        lines.append(
            f"| {md_text(asi)} {md_text(ASI_TITLES.get(asi, ''))} "
            f"| {md_text(category_text(state))} "
            f"| {state.probes} | {row.get('vulnerable', 0)} | {row.get('resisted', 0)} "
            f"| {row.get('undecided', 0)} | {state.unjudged} | {state.not_delivered} "
            f"| {md_text(note, limit=300)} |"
        )
    if report.undertested:
        lines += [
            "",
            "Undertested (too few judged attempts to claim safety): "
            + ", ".join(md_text(a) for a in report.undertested),
        ]
    lines.append("")
    return lines


def _finding_block(index: int, finding: Finding) -> list[str]:
    lines = [
        f"#### {index}. {finding.severity.value.upper()}: {md_text(finding.name, limit=200)}",
        "",
        f"- **{md_text(finding.asi)}** {md_text(ASI_TITLES.get(finding.asi, ''))} · probe "
        f"{md_code(finding.probe_id)} · channel {md_text(finding.channel)} · severity "
        f"{number(finding.aivss_severity)}/10 · confidence {number(finding.confidence)} · "
        f"{finding.successes}/{finding.attempt_count} attempts succeeded",
        f"- {md_text(finding.summary, limit=500)}",
    ]
    transcript = finding.transcript.model_dump() if finding.transcript is not None else None
    for ev in finding.evidence[:5]:
        lines.append(
            f"- Evidence ({md_text(ev.detector)}, {md_text(ev.category)}) at "
            f"{md_code(ev.path)} [{ev.start}:{ev.end}]: {md_code(ev.subject, limit=200)}"
        )
        snippet = _snippet(transcript, ev.path, ev.start, ev.end)
        if snippet:
            lines.append(f"  > {snippet}")
    if finding.control is not None:
        lines.append(
            f"- Control {md_code(finding.control.attempt_id)} (the same conversation without "
            f"the attack): {md_text(finding.control.summary, limit=300)}"
        )
    lines += [
        f"- Location {md_code(f'{finding.location.path}:{finding.location.line}')} · "
        f"fp {md_code(finding.fp)}",
        f"- Remediation: {md_text(finding.remediation, limit=600)}",
        "",
    ]
    return lines


def _snippet(transcript: dict[str, Any] | None, path: str, start: int, end: int) -> str:
    """The evidence in context, the matched part in bold; empty when it cannot be located."""
    if transcript is None:
        return ""
    try:
        value = resolve_path(transcript, path)
    except (KeyError, IndexError, ValueError):
        return ""
    if not isinstance(value, str) or not 0 <= start <= end <= len(value):
        return ""
    before = value[max(0, start - SNIPPET_CONTEXT) : start]
    after = value[end : end + SNIPPET_CONTEXT]
    hit = md_text(value[start:end], limit=300)
    prefix = "…" if start > SNIPPET_CONTEXT else ""
    suffix = "…" if end + SNIPPET_CONTEXT < len(value) else ""
    return f"{prefix}{_keep_spaces(before)}<b>{hit}</b>{_keep_spaces(after)}{suffix}"


def _keep_spaces(text: str) -> str:
    """md_text for a fragment next to the highlight: its edge spaces are part of the text."""
    escaped = md_text(text)
    lead = " " if text[:1].isspace() else ""
    tail = " " if text[-1:].isspace() else ""
    return f"{lead}{escaped}{tail}" if escaped else lead


def _findings_table(title: str, findings: list[Finding], limit: int) -> list[str]:
    lines = [
        f"### {title} ({len(findings)})",
        "",
        "| Severity | Probe | ASI | Summary |",
        "|---|---|---|---|",
    ]
    for finding in findings[:limit]:
        summary = md_text(finding.summary, limit=200)
        if finding.suppressed is not None:
            summary += f" (suppressed: {md_text(finding.suppressed.reason, limit=200)})"
        lines.append(
            f"| {finding.severity.value} | {md_code(finding.probe_id)} | "
            f"{md_text(finding.asi)} | {summary} |"
        )
    if len(findings) > limit:
        lines += ["", f"… and {len(findings) - limit} more, listed in `scan.json`."]
    lines.append("")
    return lines


def _agreement(agreement: Agreement) -> list[str]:
    """The agreement table and how many disagreements of each kind, with why."""
    lines = [
        f"### {TITLE}",
        "",
        md_text(agreement_heading(agreement)) + ".",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "---|" * len(HEADERS),
    ]
    lines += [
        "| " + " | ".join(md_text(c) for c in row) + " |" for row in agreement_rows(agreement)
    ]
    kinds: dict[str, int] = {}
    for item in agreement.disagreements:
        kinds[item.difference] = kinds.get(item.difference, 0) + 1
    lines.append("")
    if not kinds:
        return [*lines, "No disagreement.", ""]
    lines.append(f"{len(agreement.disagreements)} disagreement(s), listed below:")
    lines.append("")
    for item in agreement.disagreements:
        if kinds.pop(item.difference, None) is not None:
            count = sum(1 for d in agreement.disagreements if d.difference == item.difference)
            lines.append(
                f"- {count} {md_code(item.difference)}: {md_text(DIFFERENCES[item.difference])}"
            )
    return [*lines, ""]


def _disagreement(index: int, item: Disagreement) -> list[str]:
    """One disagreement: what each side said, why they differ, the evidence, the transcript."""
    said = "succeeded" if item.agentdojo else "failed"
    lines = [
        f"#### Disagreement {index}: {md_code(item.probe_id)}",
        "",
        f"- probegate: {md_text(item.probegate)}; AgentDojo's security check: the attack "
        f"{said} ({md_code(item.difference)}: {md_text(DIFFERENCES[item.difference])})",
    ]
    if item.reason:
        lines.append(f"- probegate's reason: {md_text(item.reason, limit=300)}")
    for ev in item.evidence[:3]:
        lines.append(
            f"- Evidence ({md_text(ev.detector)}) at {md_code(ev.path)}: "
            f"{md_code(ev.subject, limit=200)}"
        )
    if item.transcript is not None:
        lines.append("- Transcript:")
        for turn in item.transcript.turns:
            lines.append(f"  - {md_text(turn.role)}: {md_text(turn.content, limit=300)}")
            for call in turn.tool_calls:
                arguments = md_code(str(call.arguments), limit=200)
                lines.append(f"    - called {md_code(call.name)} with {arguments}")
    return [*lines, ""]


def _guard(guard: GuardSummary) -> list[str]:
    return _rows("Runtime guard", guard_rows(guard))


def _rows(title: str, rows: list[tuple[str, str]]) -> list[str]:
    """A section of label/value rows (the guard's, the A2A peers'); nothing without rows."""
    if not rows:
        return []
    lines = [f"### {title}", "", "| | |", "|---|---|"]
    lines += [f"| {md_text(label)} | {md_text(value)} |" for label, value in rows]
    return [*lines, ""]


def _unjudged(report: ScanReport) -> list[str]:
    groups = unjudged_groups(report)
    lines = [
        f"### Unjudged attempts ({len(report.unjudged)})",
        "",
        "These could not be judged and are **not** counted as resisted. By cause, with the fix:",
        "",
        "| Attempts | Cause | Fix | Probes |",
        "|---:|---|---|---|",
    ]
    for group in groups[:UNJUDGED_ROWS]:
        lines.append(
            f"| {group.count} | {md_text(group.label, limit=300)} | {md_text(group.fix)} | "
            + ", ".join(md_code(p) for p in group.probes[:5])
            + (f" and {len(group.probes) - 5} more" if len(group.probes) > 5 else "")
            + " |"
        )
    if len(groups) > UNJUDGED_ROWS:
        lines += ["", f"… and {len(groups) - UNJUDGED_ROWS} more causes in `scan.json`."]
    lines += ["", "Every unjudged attempt and its exact reason is in `scan.json` (`unjudged`).", ""]
    return lines


def _not_run(report: ScanReport) -> list[str]:
    lines = [
        f"### Not run ({len(report.not_run)})",
        "",
        "These probes need something this target does not expose (an LLM judge, a secret "
        "the agent holds, tools served by probegate), so they were not planned; they count "
        "neither as resisted nor as unjudged. The last column enables them.",
        "",
        "| Probe | Reason | Enable with |",
        "|---|---|---|",
    ]
    for item in report.not_run[:UNJUDGED_ROWS]:
        lines.append(
            f"| {md_code(item.probe_id)} | {md_text(item.reason, limit=300)} | "
            f"{md_code(item.enabled_by)} |"
        )
    if len(report.not_run) > UNJUDGED_ROWS:
        lines += ["", f"… and {len(report.not_run) - UNJUDGED_ROWS} more in `scan.json`."]
    lines.append("")
    return lines


def _suppression_notes(report: ScanReport) -> list[str]:
    lines = ["### Suppressions", ""]
    if report.expired_suppressions:
        lines.append(
            "Expired (counted again): "
            + ", ".join(md_code(fp) for fp in report.expired_suppressions[:50])
        )
    if report.stale_suppressions:
        lines.append(
            "Stale (match no finding): "
            + ", ".join(md_code(fp) for fp in report.stale_suppressions[:50])
        )
    lines.append("")
    return lines
