"""The comparison with the baseline in the HTML report: what a scan run with ``--baseline``
decided, with both counts of every finding it did not call new or fixed.

It says what :mod:`probegate.reports.diff_markdown` says, from the same buckets
(``diff_sections``), as HTML the report's stylesheet already lays out (``.warn``, ``.okay``,
tables in ``.wide``). Every string that came from a report is escaped with
:func:`probegate.reports.escape.html_text`. Pure: no clock, no file system.
"""

from __future__ import annotations

from probegate.models.comparison import Comparison, FindingRef
from probegate.reports.diff_sections import (
    CONFIRM_HEADERS,
    DEFAULT_MAX_ROWS,
    Bucket,
    aivss_change,
    buckets,
    confirm_heading,
    confirm_rows,
    counts,
    method,
    versus,
)
from probegate.reports.escape import html_text
from probegate.reports.headline import score_text


def section(comparison: Comparison | None, *, max_rows: int = DEFAULT_MAX_ROWS) -> list[str]:
    """The report's "Comparison with the baseline" section; nothing without a comparison."""
    if comparison is None:
        return []
    c, esc = comparison, html_text
    if c.regression:
        result = f'<p class="warn"><b>Regression.</b> {esc("; ".join(c.reasons))}</p>\n'
    else:
        result = '<p class="okay"><b>No regression.</b></p>\n'
    out = [
        "<h2>Comparison with the baseline</h2>\n",
        result,
        f"<p>Baseline {esc(c.baseline.scan_id)}: AIVSS {score_text(c.baseline.aivss)}; this "
        f"scan: {score_text(c.current.aivss)}; change {esc(aivss_change(c))}.</p>\n",
        "<p>" + " · ".join(f"{esc(label)} {esc(n)}" for label, n in counts(c)) + "</p>\n",
    ]
    if method(c):
        out.append(f'<p class="muted">{esc(method(c))}</p>\n')
    out += _confirm(c)
    for bucket in buckets(c):
        out += _bucket(bucket, max_rows)
    out += [f'<p class="muted">{esc(note)}</p>\n' for note in c.notes]
    return out


def _bucket(bucket: Bucket, max_rows: int) -> list[str]:
    refs = bucket.refs
    if not refs:
        return []
    esc = html_text
    out = [f"<h3>{esc(bucket.title)} ({len(refs)})</h3>\n"]
    if bucket.about:
        out.append(f"<p>{esc(bucket.about.replace('`', ''))}</p>\n")
    out.append(
        '<div class="wide"><table><tr><th>Severity</th><th>ASI</th><th>Probe</th>'
        "<th>Baseline -&gt; this scan</th><th>Finding</th></tr>\n"
    )
    out += [_row(ref, reasons=bucket.reasons) for ref in refs[:max_rows]]
    out.append("</table></div>\n")
    if len(refs) > max_rows:
        out.append(f"<p>… and {len(refs) - max_rows} more (scan.json has every one).</p>\n")
    return out


def _row(ref: FindingRef, *, reasons: bool) -> str:
    esc = html_text
    finding = esc(ref.summary or ref.name)
    if reasons and ref.suppressed:
        finding += f"<br><i>suppressed: {esc(ref.suppression_reason or '')}</i>"
    return (
        f"<tr><td>{ref.severity.value}</td><td>{esc(ref.asi)}</td>"
        f'<td class="mono">{esc(ref.probe_id)}</td><td>{esc(versus(ref))}</td>'
        f"<td>{finding}</td></tr>\n"
    )


def _confirm(c: Comparison) -> list[str]:
    rows = [row.cells() for row in confirm_rows(c)]
    if not rows:
        return []
    esc = html_text
    out = [
        "<h3>Confirm runs</h3>\n",
        f"<p>{esc(confirm_heading(c))}</p>\n",
        '<div class="wide"><table><tr>'
        + "".join(f"<th>{esc(h)}</th>" for h in CONFIRM_HEADERS)
        + "</tr>\n",
    ]
    out += ["<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>\n" for row in rows]
    out.append("</table></div>\n")
    return out
