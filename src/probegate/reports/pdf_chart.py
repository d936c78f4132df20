"""The PDF report's chart: one row per ASI category, drawn with ReportLab's graphics.

The looks follow :func:`probegate.reports.headline.category_tone`, as the HTML chart's do: the
worst rows are the most visible (a red band and edge, bold words, a stub of a bar for 0.0), a
row without a score is an empty dashed frame in italics, never an empty bar, and each row says
what its score stands on (its probes judged). Text is the report's own words for categories
(titles, scores, counts), never agent text.
"""

from __future__ import annotations

from reportlab.graphics.shapes import Drawing, Rect, String
from reportlab.lib import colors

from probegate.models.report import CategoryState
from probegate.models.taxonomy import ASI_TITLES
from probegate.reports.headline import (
    category_coverage,
    category_text,
    category_tone,
    score_colour,
)

_MUTED = colors.HexColor("#59636e")
_CARD = colors.HexColor("#f6f8fa")
ROW = 18.0


def category_chart(
    states: dict[str, CategoryState], width: float, widths: tuple[float, float, float]
) -> Drawing:
    """The rows of ``states`` in a drawing ``width`` wide: the label, bar and score columns are
    ``widths``, the coverage column takes the rest."""
    height = ROW * len(states) + 4
    drawing = Drawing(width, height)
    for index, (asi, state) in enumerate(states.items()):
        _chart_row(drawing, height - (index + 1) * ROW, width, asi, state, widths)
    return drawing


def _rect(
    x: float,
    y: float,
    width: float,
    height: float,
    fill: colors.Color | None,
    *,
    stroke: colors.Color | None = None,
    dash: tuple[float, float] | None = None,
) -> Rect:
    rect = Rect(x, y, width, height)
    rect.fillColor = fill
    rect.strokeColor = stroke
    if stroke is not None:
        rect.strokeWidth = 0.8
        if dash is not None:
            rect.strokeDashArray = list(dash)
    return rect


# How each tone of row looks (headline.category_tone): font and colour of its words, and the
# frame of a row without a score. The worst rows are the most visible; none looks like another.
_TONE_FONT = {
    "zero": ("Helvetica-Bold", "#82071e"),
    "low": ("Helvetica-Bold", "#82071e"),
    "scored": ("Helvetica", "#1f2328"),
    "undertested": ("Helvetica-Oblique", "#9a6700"),
    "none": ("Helvetica-Oblique", "#59636e"),
}
_TONE_FRAME = {
    "undertested": ("#fff8c5", "#9a6700", (3.0, 2.0)),
    "none": ("#ffffff", "#afb8c1", (1.5, 2.0)),
}
_BAND = colors.HexColor("#ffebe9")
_EDGE = colors.HexColor("#cf222e")


def _chart_row(
    drawing: Drawing,
    y: float,
    width: float,
    asi: str,
    state: CategoryState,
    widths: tuple[float, float, float],
) -> None:
    row = ROW
    label_width, bar_width, value_width = widths
    tone = category_tone(state)
    font, ink = _TONE_FONT[tone]
    colour = colors.HexColor(ink)
    if tone in ("zero", "low"):  # the band across the row, and an edge no one misses
        drawing.add(_rect(0, y - 1, width, row - 1, _BAND))
        drawing.add(_rect(0, y - 1, 2.5, row - 1, _EDGE))
    if tone in _TONE_FRAME:
        back, edge, dash = _TONE_FRAME[tone]
        frame = colors.HexColor(back)
        drawing.add(
            _rect(
                label_width,
                y + 1,
                bar_width,
                row - 5,
                frame,
                stroke=colors.HexColor(edge),
                dash=dash,
            )
        )
    else:
        score = state.score or 0.0
        # A stub for 0.0: a bar of no length would be drawn like no score at all.
        length = max(3.0, max(0.0, min(score, 100.0)) / 100 * bar_width)
        drawing.add(_rect(label_width, y + 1, bar_width, row - 5, _CARD))
        drawing.add(
            _rect(label_width, y + 1, length, row - 5, colors.HexColor(score_colour(score)))
        )
    label = f"{asi} {ASI_TITLES.get(asi, '')}".strip()
    label = label.encode("cp1252", "replace").decode("cp1252")[:48]
    for x, text, size, face, ink_of in (
        (5, label, 8, font, colour),
        (label_width + bar_width + 4, category_text(state), 8, font, colour),
        (label_width + bar_width + value_width, category_coverage(state), 7, "Helvetica", _MUTED),
    ):
        drawing.add(String(x, y + 5, text, fontName=face, fontSize=size, fillColor=ink_of))
