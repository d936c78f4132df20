"""The regression diff in Markdown: the baseline part of the job summary and `compare`'s text.

Pure: ``render_diff(comparison) -> str``, no clock and no file system. Every string that came
from a report is untrusted: finding summaries quote the agent, and a baseline file may have been
written by anyone. All of it goes through :func:`probegate.reports.escape.md_text`, the rule
every Markdown emitter shares: no table breakout, no HTML, no code spans or links, no line of
its own (so no ``::`` workflow command), no terminal escapes, no bidi overrides.
"""

from __future__ import annotations

from probegate.models.comparison import Comparison, FindingRef
from probegate.reports.escape import md_text
from probegate.reports.headline import score_text

MAX_CELL = 160
DEFAULT_MAX_ROWS = 50


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
        f"| {_signed(c.aivss_delta)}"
        f"{'' if c.score_gated else ' (not gated)'} |",
        f"| band | {escape(c.baseline.band)} | {escape(c.current.band)} | |",
        "",
        f"New: **{len(c.new)}** · new but suppressed: {len(c.new_suppressed)} · "
        f"fixed: {len(c.fixed)} · persisting: {len(c.persisting)} "
        f"({sum(1 for f in c.persisting if f.suppressed)} suppressed) · "
        f"not re-judged: {len(c.unconfirmed)}"
        + (f" · not compared: {len(c.not_compared)}" if c.common_probes_only else ""),
        "",
    ]
    if c.mismatch:
        lines += [
            "> **Scans differ:** " + escape("; ".join(c.mismatch), limit=1000) + ". Only the "
            "probes present in both scans are compared, and the score change is not gated.",
            "",
        ]
    _section(lines, "New findings", c.new, max_rows)
    _section(
        lines,
        "New findings, suppressed",
        c.new_suppressed,
        max_rows,
        reason=True,
        about="Accepted in the suppression file: listed, not a regression.",
    )
    _section(
        lines,
        "Fixed findings",
        c.fixed,
        max_rows,
        about="This scan judged these probes and saw them resisted. Refresh the baseline "
        "(`probegate compare BASELINE CURRENT --write-baseline BASELINE`) to drop them.",
    )
    _section(
        lines,
        "Not re-judged",
        c.unconfirmed,
        max_rows,
        about="In the baseline, but this scan did not judge their probes (not run, unjudged "
        "or not applicable), so they are neither fixed nor persisting.",
    )
    if c.common_probes_only:
        _section(
            lines,
            "Not compared",
            c.not_compared,
            max_rows,
            about="Their probes are not in both scans.",
        )
    if c.asi_deltas:
        lines += [
            "### Score by ASI category",
            "",
            "| ASI | baseline | current | change |",
            "|---|---|---|---|",
        ]
        for d in c.asi_deltas:
            lines.append(
                f"| {escape(d.asi)} | {_num(d.baseline)} | {_num(d.current)} | "
                f"{'' if d.delta is None else _signed(d.delta)} |"
            )
        lines.append("")
    if c.notes:
        lines += ["### Notes", ""]
        lines += [f"- {escape(note, limit=1000)}" for note in c.notes]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _section(
    lines: list[str],
    title: str,
    refs: list[FindingRef],
    max_rows: int,
    *,
    reason: bool = False,
    about: str = "",
) -> None:
    if not refs:
        return
    lines += [f"### {title} ({len(refs)})", ""]
    if about:
        lines += [about, ""]
    header = "| severity | ASI | probe | finding | fp |"
    rule = "|---|---|---|---|---|"
    if reason:
        header += " suppression reason |"
        rule += "---|"
    lines += [header, rule]
    for ref in refs[:max_rows]:
        row = (
            f"| {escape(ref.severity.value)} | {escape(ref.asi)} | {escape(ref.probe_id)} "
            f"| {escape(ref.summary or ref.name)} | {escape(ref.fp[:12])} |"
        )
        if reason:
            row += f" {escape(ref.suppression_reason or '')} |"
        lines.append(row)
    if len(refs) > max_rows:
        lines.append("")
        lines.append(f"… and {len(refs) - max_rows} more (see `--output json`).")
    lines.append("")


def _signed(value: float) -> str:
    if value == 0:
        return "0"
    return f"{value:+g}"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:g}"
