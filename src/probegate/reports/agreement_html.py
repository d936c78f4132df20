"""The agreement with AgentDojo's checks in the HTML report (a scan run with ``--suite agentdojo``).

It says what the Markdown summary and the closing lines say, in the same words and rows
(:mod:`probegate.reports.agreement_text`): the table per suite and overall, how many
disagreements of each kind and why, then the disagreements themselves, each with what both
sides said, probegate's reason and its transcript (drawn by the page's own transcript view, so
evidence is marked as in a finding). Every string that came from the report is escaped with
:func:`probegate.reports.escape.html_text`. Pure: no clock, no file system.
"""

from __future__ import annotations

from collections.abc import Callable

from probegate.models.agreement import Agreement, Disagreement
from probegate.models.transcript import Transcript
from probegate.models.verdict import Evidence
from probegate.reports.agreement_text import (
    DIFFERENCES,
    HEADERS,
    TITLE,
    agreement_heading,
    agreement_rows,
    difference_counts,
    verdicts_text,
)
from probegate.reports.escape import html_text, truncate

# A full run of the four suites disagrees on hundreds of attempts; the first ones are shown in
# full, the count of the rest points at scan.json, which has every one.
DISAGREEMENTS_SHOWN = 50
REASON_MAX = 300

# The page's transcript view: a transcript and the evidence to mark in it, as HTML parts.
TranscriptView = Callable[[Transcript, list[Evidence]], list[str]]


def section(
    agreement: Agreement | None,
    transcript: TranscriptView,
    *,
    max_items: int = DISAGREEMENTS_SHOWN,
) -> list[str]:
    """The report's agreement section; nothing for a scan that was not run on AgentDojo."""
    if agreement is None:
        return []
    esc = html_text
    out = [
        f"<h2>{esc(TITLE)}</h2>\n",
        f"<p>{esc(agreement_heading(agreement))}.</p>\n",
        '<div class="wide"><table><tr>' + "".join(f"<th>{esc(h)}</th>" for h in HEADERS),
        "</tr>\n",
    ]
    for row in agreement_rows(agreement):
        out.append("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>\n")
    out.append("</table></div>\n")
    items = agreement.disagreements
    if not items:
        out.append("<p>No disagreement.</p>\n")
        return out
    out.append(f"<p>{len(items)} disagreement(s), by why:</p><ul>")
    for kind, count in difference_counts(agreement):
        out.append(
            f'<li>{count} <span class="mono">{esc(kind)}</span>: {esc(DIFFERENCES[kind])}</li>'
        )
    out.append("</ul>\n<ol>")
    for item in items[:max_items]:
        out += _disagreement(item, transcript)
    out.append("</ol>\n")
    if len(items) > max_items:
        out.append(
            f'<p class="muted">… and {len(items) - max_items} more, listed in '
            '<span class="mono">scan.json</span>.</p>\n'
        )
    return out


def _disagreement(item: Disagreement, transcript: TranscriptView) -> list[str]:
    """One disagreement: its kind, the probe and the pair of tasks, both verdicts, the reason."""
    esc = html_text
    parts = [
        f'<li><span class="mono">{esc(item.difference)}</span> · '
        f'<span class="mono">{esc(item.probe_id)}</span> ({esc(item.suite)}: '
        f"{esc(item.user_task)}, {esc(item.injection_task)}): {esc(verdicts_text(item))}."
    ]
    if item.reason:
        parts.append(
            '<br><span class="muted">'
            f"probegate's reason:</span> {esc(truncate(item.reason, REASON_MAX))}"
        )
    if item.transcript is not None:
        parts += (
            "<details><summary>Transcript</summary>",
            *transcript(item.transcript, item.evidence),
            "</details>",
        )
    parts.append("</li>\n")
    return parts
