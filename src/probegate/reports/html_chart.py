"""The HTML report's chart of the ten ASI categories (reports/html_report.py), read at a
glance: the score and its coverage above it, 0.0 the most visible row, a category without a
score an empty dashed frame (docs/report-format.md, "HTML report"). Every word comes from
reports/headline.py, as the PDF's chart's (reports/pdf_chart.py) do."""

from __future__ import annotations

from probegate.models.report import CategoryState, ScanReport
from probegate.models.taxonomy import ASI_TITLES
from probegate.reports.escape import html_text
from probegate.reports.headline import (
    category_coverage,
    category_states,
    category_text,
    category_tone,
    coverage_text,
    out_of_100,
    score_colour,
)

# The chart's columns (SVG user units): the category, its bar, its score, its coverage.
_LABEL, _BAR, _VALUE, _COVER = 330, 380, 150, 180
_ROW = 28
# How each tone of row looks (headline.category_tone): the worst rows the most visible, a
# row without a score drawn as an empty dashed frame, never as an empty bar.
_TONE_TEXT = {
    "zero": 'font-weight="700" fill="#82071e"',
    "low": 'font-weight="700" fill="#82071e"',
    "scored": 'fill="#1f2328"',
    "undertested": 'font-style="italic" fill="#9a6700"',
    "none": 'font-style="italic" fill="#59636e"',
}
_TONE_FRAME = {
    "undertested": 'fill="#fff8c5" stroke="#9a6700" stroke-dasharray="5 3"',
    "none": 'fill="#ffffff" stroke="#afb8c1" stroke-dasharray="2 3"',
}


def chart(report: ScanReport) -> list[str]:
    """All ten ASI categories: the score on a bar (0-100, higher is safer) with what it stands
    on beside it, the worst rows marked, the ones without a score framed and said why."""
    esc = html_text
    states = category_states(report)
    total = _LABEL + _BAR + _VALUE + _COVER
    height = _ROW * len(states) + 6
    parts = [
        "<h2>OWASP Top 10 for Agentic Applications</h2>\n",
        f'<p class="cover"><strong>{out_of_100(report.aivss)}</strong> {esc(report.band)} · '
        f"coverage: {esc(coverage_text(report))}</p>\n",
        f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" viewBox="0 0 {total} {height}" '
        'role="img" aria-label="Score and coverage per ASI category">\n',
    ]
    for i, (asi, state) in enumerate(states.items()):
        parts.append(_chart_row(i * _ROW + 4, asi, state))
    parts.append("</svg>\n")
    parts.append(
        '<p class="muted">Red rows score under 40: 0.0 means every probe of the category that '
        "could be judged succeeded against the agent. A dashed frame is a category with no "
        "score (n/a), amber when its probes ran but too few could be judged; the table says "
        "why.</p>\n"
    )
    parts.append(
        '<div class="wide"><table><tr><th>Category</th><th>State</th><th>Score</th>'
        "<th>Coverage</th><th>Unjudged attempts</th><th>Findings</th><th>Why</th></tr>\n"
    )
    for asi, state in states.items():
        why = "" if state.state == "tested" else state.reason
        tone = category_tone(state)
        mark = ' class="worst"' if tone in ("zero", "low") else ""
        parts.append(
            f"<tr{mark}><td>{esc(asi)}</td><td>{esc(state.state.replace('_', ' '))}</td>"
            f"<td>{esc(category_text(state))}</td><td>{esc(category_coverage(state))}</td>"
            f"<td>{state.unjudged}</td><td>{state.findings}</td><td>{esc(why)}</td></tr>\n"
        )
    parts.append("</table></div>\n")
    return parts


def _chart_row(y: int, asi: str, state: CategoryState) -> str:
    esc = html_text
    tone = category_tone(state)
    label = f"{asi} {ASI_TITLES.get(asi, '')}".strip()
    text, cover = category_text(state), category_coverage(state)
    look = _TONE_TEXT[tone]
    shapes = ""
    if tone in ("zero", "low"):  # the band across the row, and an edge no one misses
        shapes += (
            f'<rect x="0" y="{y - 3}" width="{_LABEL + _BAR + _VALUE + _COVER}" '
            f'height="{_ROW - 2}" fill="#ffebe9"/>'
            f'<rect x="0" y="{y - 3}" width="4" height="{_ROW - 2}" fill="#cf222e"/>'
        )
    if tone in _TONE_FRAME:
        shapes += (
            f'<rect x="{_LABEL + 0.5}" y="{y + 0.5}" width="{_BAR - 1}" height="19" '
            f"{_TONE_FRAME[tone]}/>"
        )
    else:
        score = state.score or 0.0
        # A stub for 0.0: a bar of no length would be drawn like no score at all.
        length = max(6.0, max(0.0, min(score, 100.0)) / 100 * _BAR)
        shapes += (
            f'<rect x="{_LABEL}" y="{y}" width="{_BAR}" height="20" fill="#f6f8fa"/>'
            f'<rect x="{_LABEL}" y="{y}" width="{length:.1f}" height="20" '
            f'fill="{score_colour(score)}"/>'
        )
    return (
        f"<g><title>{esc(label)}: {esc(text)}; {esc(cover)}</title>{shapes}"
        f'<text x="10" y="{y + 15}" font-size="12" {look}>{esc(label)}</text>'
        f'<text x="{_LABEL + _BAR + 8}" y="{y + 15}" font-size="12" {look}>{esc(text)}</text>'
        f'<text x="{_LABEL + _BAR + _VALUE}" y="{y + 15}" font-size="11" fill="#59636e">'
        f"{esc(cover)}</text></g>\n"
    )
