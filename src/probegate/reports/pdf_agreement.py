"""The agreement with AgentDojo's checks in the PDF report (a scan run with ``--suite agentdojo``).

The same words and figures as the other formats (:mod:`probegate.reports.agreement_text`),
laid out for a page: the table is turned on its side (one column per suite and the overall
one, one row per measure), since twelve measures side by side do not fit A4's width without
breaking their names; then how many disagreements of each kind and why, and the
disagreements as short table rows (probe and tasks, both verdicts and the kind, probegate's
reason, cut). It opens a page, as the findings do.
Transcripts stay in ``scan.json`` and the HTML report: a table row cannot split across pages.
Every string from the report goes through :func:`probegate.reports.pdf_blocks.pdf_text`.
"""

from __future__ import annotations

from reportlab.lib.units import mm
from reportlab.platypus import Flowable, PageBreak, Paragraph

from probegate.models.agreement import Agreement
from probegate.reports.agreement_text import (
    DIFFERENCES,
    HEADERS,
    TITLE,
    agreement_heading,
    agreement_rows,
    difference_counts,
)
from probegate.reports.pdf_blocks import STYLES, code, para, pdf_text, short_table

DISAGREEMENTS_MAX = 100  # table rows; scan.json has every one
REASON_MAX = 160


def section(agreement: Agreement | None, *, max_rows: int = DISAGREEMENTS_MAX) -> list[Flowable]:
    """The report's agreement section; nothing for a scan that was not run on AgentDojo."""
    if agreement is None:
        return []
    rows = agreement_rows(agreement)
    header = [pdf_text(HEADERS[0]), *(pdf_text(row[0], limit=40) for row in rows)]
    measures = [
        [pdf_text(name), *(pdf_text(row[i], limit=20) for row in rows)]
        for i, name in enumerate(HEADERS[1:], 1)
    ]
    out: list[Flowable] = [
        PageBreak(),
        para(pdf_text(TITLE), "h2"),
        para(pdf_text(agreement_heading(agreement), limit=400) + "."),
        short_table(header, measures, [32 * mm] + [None] * len(rows)),
    ]
    items = agreement.disagreements
    if not items:
        out.append(para("No disagreement."))
        return out
    out.append(para(f"{len(items)} disagreement(s), by why:"))
    for kind, count in difference_counts(agreement):
        out.append(
            Paragraph(
                f"{count} {code(pdf_text(kind))}: {pdf_text(DIFFERENCES[kind])}",
                STYLES["bullet"],
                bulletText="•",
            )
        )
    table = [
        [
            code(pdf_text(item.probe_id, limit=80))
            + "<br/>"
            + pdf_text(f"{item.suite}: {item.user_task}, {item.injection_task}", limit=120),
            f"{pdf_text(item.probegate)} / {'succeeded' if item.agentdojo else 'failed'}<br/>"
            + code(pdf_text(item.difference, limit=20)),
            # One line of words: the reason's own line breaks would make a tall row.
            pdf_text(" ".join(item.reason.split()), limit=REASON_MAX),
        ]
        for item in items[:max_rows]
    ]
    # Wide enough for AgentDojo's longest probe id and "vulnerable / succeeded" on one line.
    header = ["Probe and tasks", "probegate / AgentDojo, kind", "probegate's reason"]
    out.append(short_table(header, table, [72 * mm, 37 * mm, None]))
    if len(items) > max_rows:
        out.append(para(f"… and {len(items) - max_rows} more in scan.json.", "small"))
    return out
