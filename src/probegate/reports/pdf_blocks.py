"""The PDF report's building blocks: its styles, its escaping of agent text, its paragraphs
and tables, shared by the report's sections (reports/pdf_report.py, reports/pdf_agreement.py).

Agent text is hostile. ReportLab's ``Paragraph`` reads a small markup language (``<a href>``,
``<img src>``, ``<font>``, entities), so every piece of text is cleaned of control characters
and bidi overrides, then XML-escaped by :func:`pdf_text` before it becomes a paragraph: markup
in a reply is shown, never followed. The PDF's standard fonts cover Windows-1252; any other
character is written as ``[U+XXXX]`` rather than dropped or drawn as a box.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape as _xml_escape

from reportlab.lib import colors
from reportlab.lib.enums import TA_LEFT
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.pdfbase.pdfmetrics import stringWidth
from reportlab.platypus import Paragraph, Table, TableStyle

from probegate.reports.escape import clean_text, truncate

TEXT_MAX = 2_000  # characters of one piece of agent text (summary, prompt, remediation)

PAGE_WIDTH, PAGE_HEIGHT = A4
MARGIN = 18 * mm
FRAME_WIDTH = PAGE_WIDTH - 2 * MARGIN

MUTED = colors.HexColor("#59636e")
LINE = colors.HexColor("#d1d9e0")
CARD = colors.HexColor("#f6f8fa")

_BASE = getSampleStyleSheet()


def _callout(name: str, *, background: str, border: str) -> ParagraphStyle:
    """A boxed paragraph: whether the score is authoritative, a suppression."""
    return ParagraphStyle(
        name,
        parent=_BASE["BodyText"],
        fontSize=9.5,
        leading=12.5,
        borderPadding=5,
        backColor=colors.HexColor(background),
        borderColor=colors.HexColor(border),
        borderWidth=0.5,
        spaceBefore=6,
        spaceAfter=8,
    )


STYLES = {
    "title": ParagraphStyle("pg-title", parent=_BASE["Title"], alignment=TA_LEFT, fontSize=18),
    "h2": ParagraphStyle("pg-h2", parent=_BASE["Heading2"], spaceBefore=10),
    "h3": ParagraphStyle("pg-h3", parent=_BASE["Heading3"], spaceBefore=10, spaceAfter=4),
    "body": ParagraphStyle("pg-body", parent=_BASE["BodyText"], fontSize=9.5, leading=12.5),
    "small": ParagraphStyle(
        "pg-small", parent=_BASE["BodyText"], fontSize=8, leading=10, textColor=MUTED
    ),
    "label": ParagraphStyle(
        "pg-label",
        parent=_BASE["BodyText"],
        fontName="Helvetica-Bold",
        fontSize=9.5,
        spaceBefore=4,
        spaceAfter=0,
    ),
    "mono": ParagraphStyle(
        "pg-mono",
        parent=_BASE["Code"],
        fontSize=8,
        leading=10,
        backColor=CARD,
        borderPadding=4,
        leftIndent=4,
        rightIndent=4,
        spaceBefore=8,
        spaceAfter=8,
    ),
    "bullet": ParagraphStyle(
        "pg-bullet",
        parent=_BASE["BodyText"],
        fontSize=9,
        leading=12,
        leftIndent=10,
        bulletIndent=2,
    ),
    "score": ParagraphStyle("pg-score", parent=_BASE["BodyText"], fontSize=28, leading=34),
    "warn": _callout("pg-warn", background="#ffebe9", border="#cf222e"),
    "ok": _callout("pg-ok", background="#dafbe1", border="#1a7f37"),
    "cell": ParagraphStyle("pg-cell", parent=_BASE["BodyText"], fontSize=8.5, leading=10.5),
    # A table's header: words are never split (a column is made wide enough instead).
    "head": ParagraphStyle(
        "pg-head", parent=_BASE["BodyText"], fontSize=8.5, leading=10.5, splitLongWords=False
    ),
}
_CELL_PADDING = 6  # ReportLab's default left and right padding of a table cell

# --------------------------------------------------------------------------- escaping


def pdf_text(text: str, *, limit: int | None = TEXT_MAX) -> str:
    """Agent text as inert ReportLab paragraph markup in the standard fonts' character set.

    Control characters, ANSI escapes and bidi overrides go first (``clean_text``); the text is
    then cut, characters outside Windows-1252 become ``[U+XXXX]``, ``&``, ``<`` and ``>`` are
    escaped so nothing in it is read as markup, and line breaks become ``<br/>``.
    """
    text = clean_text(text).replace("\t", " ")
    if limit is not None:
        text = truncate(text, limit)
    shown = "".join(ch if _drawable(ch) else f"[U+{ord(ch):04X}]" for ch in text)
    return "<br/>".join(_xml_escape(line) for line in shown.split("\n"))


def _drawable(ch: str) -> bool:
    if ch == "\n" or (" " <= ch <= "~"):  # the common case, without an encode per character
        return True
    if not ch.isprintable():
        return False
    try:
        ch.encode("cp1252")
    except UnicodeEncodeError:
        return False
    return True


# --------------------------------------------------------------------------- building blocks


def para(markup: str, style: str = "body") -> Paragraph:
    """A paragraph from markup that is already escaped (only :func:`pdf_text` output inside)."""
    return Paragraph(markup, STYLES[style])


def code(markup: str) -> str:
    return f"<font face='Courier'>{markup}</font>"


def key_values(rows: Sequence[tuple[str, str]]) -> Table:
    data = [[para(f"<b>{key}</b>", "cell"), para(value, "cell")] for key, value in rows]
    table = Table(data, colWidths=[38 * mm, FRAME_WIDTH - 38 * mm], hAlign="LEFT")
    table.setStyle(
        TableStyle(
            [
                ("GRID", (0, 0), (-1, -1), 0.4, LINE),
                ("BACKGROUND", (0, 0), (0, -1), CARD),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
                ("TOPPADDING", (0, 0), (-1, -1), 2),
                ("BOTTOMPADDING", (0, 0), (-1, -1), 2),
            ]
        )
    )
    return table


def short_table(header: list[str], rows: list[list[str]], widths: list[float | None]) -> Table:
    """A table of short cells (markup already escaped) whose header repeats on every page.

    A ``None`` width takes what the others leave of the frame.
    """
    # A header is never broken inside a word ("Cate / gory"): each column is at least as wide
    # as its header's longest word, taken from the columns whose width is left open.
    fixed = [
        None if w is None else max(w, header_width(h)) for w, h in zip(widths, header, strict=False)
    ]
    free = FRAME_WIDTH - sum(w for w in fixed if w is not None)
    missing = sum(1 for w in fixed if w is None) or 1
    resolved = [w if w is not None else free / missing for w in fixed]
    resolved += [free / missing] * (len(header) - len(resolved))
    data = [[para(f"<b>{h}</b>", "head") for h in header]]
    data += [[para(cell, "cell") for cell in row] for row in rows]
    table = Table(data, colWidths=resolved, repeatRows=1, hAlign="LEFT")
    table.setStyle(
        TableStyle(
            [
                ("GRID", (0, 0), (-1, -1), 0.4, LINE),
                ("BACKGROUND", (0, 0), (-1, 0), CARD),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
                ("TOPPADDING", (0, 0), (-1, -1), 1.5),
                ("BOTTOMPADDING", (0, 0), (-1, -1), 1.5),
            ]
        )
    )
    return table


def header_width(header: str) -> float:
    """The width a header cell needs so that no word of it is split: its longest word, bold,
    and the cell's padding."""
    style = STYLES["head"]
    words = header.split() or [""]
    longest = max(stringWidth(word, "Helvetica-Bold", style.fontSize) for word in words)
    return longest + 2 * _CELL_PADDING + 1
