"""The regression diff for a terminal: what ``probegate compare`` prints by default.

Aligned plain text: no Markdown pipes, no ``\\_`` escapes, colour only where ``style`` allows
it (:class:`probegate.terminal.Style`: a terminal, no ``NO_COLOR``). It says what
:mod:`probegate.reports.diff_markdown` says, from the same buckets (``diff_sections``). Every
string that came from a report is untrusted (finding summaries quote the agent, a baseline may
have been written by anyone), so each is one cleaned line (:func:`probegate.terminal.one_line`):
no escape sequence, no bidi control, no line of its own, no ``::`` workflow command. Pure: no
clock, no file system.
"""

from __future__ import annotations

from collections.abc import Sequence

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
from probegate.reports.headline import score_text
from probegate.terminal import Style, one_line

MAX_CELL = 40  # a column of a table (a scan id, a band, a probe id)
MAX_LINE = 160  # free text at the end of a row (a finding's summary, a reason)


def render_text(comparison: Comparison, style: Style, *, max_rows: int = DEFAULT_MAX_ROWS) -> str:
    """The comparison as aligned text for a terminal, most important first."""
    c = comparison
    lines: list[str] = []
    if c.regression:
        reasons = one_line("; ".join(c.reasons), 1000)
        lines.append(f"{style('Result: regression.', 'bold', 'red')} {reasons}")
    else:
        lines.append(style("Result: no regression.", "bold", "green"))
    lines.append("")
    lines += _table(
        ["", "baseline", "current", "change"],
        [
            ["scan", _cell(c.baseline.scan_id), _cell(c.current.scan_id), ""],
            ["mode", _cell(c.baseline.mode), _cell(c.current.mode), ""],
            [
                "probe library",
                _cell(c.baseline.probe_library_version),
                _cell(c.current.probe_library_version),
                "",
            ],
            ["AIVSS", score_text(c.baseline.aivss), score_text(c.current.aivss), aivss_change(c)],
            ["band", _cell(c.baseline.band), _cell(c.current.band), ""],
        ],
    )
    lines.append("")
    (new_label, new_count), *rest = counts(c)
    shown_new = style(new_count, "bold", "red") if c.new else new_count
    lines.append("  " + " · ".join([f"{new_label} {shown_new}", *(f"{k} {v}" for k, v in rest)]))
    if method(c):
        lines.append("  " + method(c))
    lines.append("")
    if c.mismatch:
        mismatch = one_line("; ".join(c.mismatch), 1000)
        lines += [f"{style('Scans differ:', 'yellow')} {mismatch}. {MISMATCH_TAIL}", ""]
    lines += _confirm(c, style)
    for bucket in buckets(c):
        lines += _bucket(bucket, style, max_rows)
    if c.asi_deltas:
        lines.append(style("Score by ASI category", "bold"))
        rows = [
            [
                _cell(d.asi),
                side(d.baseline, d.baseline_state, d.baseline_unjudged),
                side(d.current, d.current_state, d.current_unjudged),
                "" if d.delta is None else signed(d.delta),
            ]
            for d in c.asi_deltas
        ]
        lines += _table(["ASI", "baseline", "current", "change"], rows)
        lines.append("")
    if c.notes:
        lines.append(style("Notes", "bold"))
        lines += [f"  - {one_line(note, 1000)}" for note in c.notes]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _cell(text: str) -> str:
    return one_line(text, MAX_CELL)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to their widest cell, two spaces apart, indented by two."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]


def _bucket(bucket: Bucket, style: Style, max_rows: int) -> list[str]:
    refs = bucket.refs
    if not refs:
        return []
    lines = [style(f"{bucket.title} ({len(refs)})", "bold")]
    if bucket.about:
        lines.append("  " + bucket.about.replace("`", ""))
    shown = refs[:max_rows]
    probe_width = max(len(_cell(ref.probe_id)) for ref in shown)
    for ref in shown:
        severity = style.severity(f"{ref.severity.value:<8}", ref.severity.value)
        lines.append(
            f"  {severity}  {_cell(ref.asi):<5}  {_cell(ref.probe_id):<{probe_width}}  "
            f"{_cell(ref.fp[:12]):<12}  {one_line(ref.summary or ref.name, MAX_LINE)}"
        )
        if versus(ref):
            lines.append(f"    {one_line(versus(ref), MAX_LINE)}")
        if bucket.reasons and ref.suppressed:
            lines.append(f"    suppressed: {one_line(ref.suppression_reason or '', MAX_LINE)}")
    if len(refs) > max_rows:
        lines.append(f"  … and {len(refs) - max_rows} more (see --output json)")
    lines.append("")
    return lines


def _confirm(c: Comparison, style: Style) -> list[str]:
    """What ``--confirm N`` ran again and what each finding came to."""
    rows = [row.cells() for row in confirm_rows(c)]
    if not rows:
        return []
    cells = [[_cell(cell) if i == 0 else cell for i, cell in enumerate(row)] for row in rows]
    return [
        style("Confirm runs", "bold"),
        "  " + confirm_heading(c),
        *_table(CONFIRM_HEADERS, cells),
        "",
    ]
