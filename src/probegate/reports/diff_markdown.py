"""The regression diff in Markdown: the baseline part of the job summary and `compare`'s text.

Pure: ``render_diff(comparison) -> str``, no clock and no file system. Every string that came
from a report is untrusted: finding summaries quote the agent, and a baseline file may have been
written by anyone. All of it goes through :func:`probegate.reports.escape.md_text`, the rule
every Markdown emitter shares: no table breakout, no HTML, no code spans or links, no line of
its own (so no ``::`` workflow command), no terminal escapes, no bidi overrides.
"""

from __future__ import annotations

from probegate.models.comparison import Comparison
from probegate.reports.diff_sections import (
    CONFIRM_HEADERS,
    DEFAULT_MAX_ROWS,
    MISMATCH_TAIL,
    Bucket,
    aivss_change,
    buckets,
    confirm_heading,
    confirm_rows,
    counts,
    method,
    side,
    signed,
    versus,
)
from probegate.reports.escape import md_text
from probegate.reports.headline import score_text

MAX_CELL = 160


def escape(text: str, *, limit: int = MAX_CELL) -> str:
    """Untrusted report text as one inert, bounded Markdown line (the emitters' shared rule)."""
    return md_text(text, limit=limit)


DIFF_HEADING = "## probegate: comparison with the baseline"


def render_diff(comparison: Comparison, *, max_rows: int = DEFAULT_MAX_ROWS) -> str:
    """The comparison as GitHub-flavoured Markdown, most important first.

    Tables stop after ``max_rows`` rows with a count of the rest, because a job summary has a
    size limit and ten thousand rows help nobody; the JSON output has every finding.
    """
    c = comparison
    lines: list[str] = [DIFF_HEADING, ""]
    if c.regression:
        lines.append("**Result: regression.** " + escape("; ".join(c.reasons), limit=1000))
    else:
        lines.append("**Result: no regression.**")
    lines.append("")
    lines += [
        "| | baseline | current | change |",
        "|---|---|---|---|",
        f"| scan | {escape(c.baseline.scan_id)} | {escape(c.current.scan_id)} | |",
        f"| mode | {escape(c.baseline.mode)} | {escape(c.current.mode)} | |",
        f"| probe library | {escape(c.baseline.probe_library_version)} "
        f"| {escape(c.current.probe_library_version)} | |",
        f"| AIVSS | {score_text(c.baseline.aivss)} | {score_text(c.current.aivss)} "
        f"| {aivss_change(c)} |",
        f"| band | {escape(c.baseline.band)} | {escape(c.current.band)} | |",
        "",
    ]
    (new_label, new_count), *rest = counts(c)
    lines += [
        f"{new_label.capitalize()}: **{new_count}** · "
        + " · ".join(f"{label}: {count}" for label, count in rest),
        "",
    ]
    if method(c):
        lines += [method(c), ""]
    if c.mismatch:
        lines += [
            "> **Scans differ:** "
            + escape("; ".join(c.mismatch), limit=1000)
            + f". {MISMATCH_TAIL}",
            "",
        ]
    _confirm(lines, c)
    for bucket in buckets(c):
        _section(lines, bucket, max_rows)
    if c.asi_deltas:
        lines += [
            "### Score by ASI category",
            "",
            "| ASI | baseline | current | change |",
            "|---|---|---|---|",
        ]
        for d in c.asi_deltas:
            before = side(d.baseline, d.baseline_state, d.baseline_unjudged)
            after = side(d.current, d.current_state, d.current_unjudged)
            lines.append(
                f"| {escape(d.asi)} | {escape(before)} | {escape(after)} | "
                f"{'' if d.delta is None else signed(d.delta)} |"
            )
        lines.append("")
    if c.notes:
        lines += ["### Notes", ""]
        lines += [f"- {escape(note, limit=1000)}" for note in c.notes]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _section(lines: list[str], bucket: Bucket, max_rows: int) -> None:
    refs = bucket.refs
    if not refs:
        return
    lines += [f"### {bucket.title} ({len(refs)})", ""]
    if bucket.about:
        lines += [bucket.about, ""]
    header = "| severity | ASI | probe | finding | fp |"
    rule = "|---|---|---|---|---|"
    counted = any(versus(ref) for ref in refs)
    if counted:
        header += " baseline -> current |"
        rule += "---|"
    if bucket.reasons:
        header += " suppression reason |"
        rule += "---|"
    lines += [header, rule]
    for ref in refs[:max_rows]:
        row = (
            f"| {escape(ref.severity.value)} | {escape(ref.asi)} | {escape(ref.probe_id)} "
            f"| {escape(ref.summary or ref.name)} | {escape(ref.fp[:12])} |"
        )
        if counted:
            row += f" {escape(versus(ref))} |"
        if bucket.reasons:
            row += f" {escape(ref.suppression_reason or '')} |"
        lines.append(row)
    if len(refs) > max_rows:
        lines.append("")
        lines.append(f"… and {len(refs) - max_rows} more (see `--output json`).")
    lines.append("")


def _confirm(lines: list[str], c: Comparison) -> None:
    """What ``--confirm N`` ran again and what each finding came to."""
    rows = [row.cells() for row in confirm_rows(c)]
    if not rows:
        return
    lines += [
        "### Confirm runs",
        "",
        confirm_heading(c),
        "",
        "| " + " | ".join(CONFIRM_HEADERS) + " |",
        "|" + "---|" * len(CONFIRM_HEADERS),
    ]
    lines += ["| " + " | ".join(escape(cell) for cell in row) + " |" for row in rows]
    lines.append("")
