"""The PDF report (``--output pdf``, ``report.pdf``): the scan as a document an auditor files.

Pages: the summary (score, band, authority and why, counts, what was scanned, the signature
status of ``scan.json``), a bar chart of the per-ASI scores, the agreement with AgentDojo's
checks when the scan ran its suites, every finding with its evidence and remediation, the
unjudged attempts and the per-probe outcomes. Laid out with ReportLab, the
optional ``pdf`` extra (``pip install 'probegate[pdf]'``); :mod:`probegate.reports` imports this
module only when a PDF is asked for, and says how to install the extra when it is missing.

Pure and deterministic like every emitter: a report in, bytes out, no clock and no file
system. ReportLab's invariant mode fixes the document id and its internal timestamp (to
``SOURCE_DATE_EPOCH`` when that is set, else a constant), and the PDF's creation date is the
report's own ``created_at``, so the same report gives the same bytes.

Agent text is hostile. ReportLab's ``Paragraph`` reads a small markup language (``<a href>``,
``<img src>``, ``<font>``, entities), so every piece of text is cleaned of control characters
and bidi overrides, then XML-escaped by :func:`pdf_text` before it becomes a paragraph: markup
in a reply is shown, never followed. The PDF's standard fonts cover Windows-1252; any other
character is written as ``[U+XXXX]`` rather than dropped or drawn as a box, which also makes
zero-width and look-alike characters visible to a reader. Long text is cut (the full text is in
``scan.json``); table cells only ever hold short, cut text, since a table row cannot split
across pages.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

from reportlab.lib.pagesizes import A4
from reportlab.lib.units import mm
from reportlab.pdfgen.canvas import Canvas
from reportlab.platypus import (
    Flowable,
    PageBreak,
    Paragraph,
    SimpleDocTemplate,
    Spacer,
)

from probegate.models.report import Finding, ScanReport, most_severe_first
from probegate.models.taxonomy import ASI_TITLES, Severity
from probegate.reports.digest import authority_reasons
from probegate.reports.escape import clean_text, number
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
    target_text,
)
from probegate.reports.pdf_agreement import section as agreement_section
from probegate.reports.pdf_blocks import (
    FRAME_WIDTH,
    MARGIN,
    PAGE_WIDTH,
    pdf_text,
)
from probegate.reports.pdf_blocks import MUTED as _MUTED
from probegate.reports.pdf_blocks import STYLES as _STYLES
from probegate.reports.pdf_blocks import code as _code
from probegate.reports.pdf_blocks import key_values as _key_values
from probegate.reports.pdf_blocks import para as _p
from probegate.reports.pdf_blocks import short_table as _table
from probegate.reports.pdf_chart import category_chart
from probegate.reports.peers_summary import TITLE as PEERS_TITLE
from probegate.reports.peers_summary import peer_rows

SUBJECT_MAX = 400
# A real scan has at most one finding per probe (about 130 in the library today); a synthetic
# or merged report may have thousands, which would be thousands of pages. The most severe are
# shown in full, the next ones as table rows; scan.json always has all of them.
FINDINGS_DETAILED_MAX = 200
RESULT_ROWS_MAX = 1_000  # table rows (per-probe outcomes, further findings)
UNJUDGED_MAX = 200


_SEVERITY_COLOURS = {
    Severity.CRITICAL: "#82071e",
    Severity.HIGH: "#cf222e",
    Severity.MEDIUM: "#bc4c00",
    Severity.LOW: "#4d2d00",
}

# --------------------------------------------------------------------------- document


def render(report: ScanReport) -> bytes:
    buffer = io.BytesIO()
    doc = SimpleDocTemplate(
        buffer,
        pagesize=A4,
        leftMargin=MARGIN,
        rightMargin=MARGIN,
        topMargin=MARGIN,
        bottomMargin=MARGIN,
        title=f"probegate scan {clean_text(report.scan_id)}",
        author="probegate",
        creator=f"probegate {clean_text(report.package_version)}",
        subject=f"AIVSS {out_of_100(report.aivss)} {report.band}",
        invariant=1,
    )
    footer = _footer(report.scan_id)
    doc.build(
        _story(report),
        onFirstPage=footer,
        onLaterPages=footer,
        canvasmaker=_canvas_with_date(_pdf_date(report.created_at)),
    )
    return buffer.getvalue()


def _pdf_date(created_at: str) -> str:
    """The report's own time as a PDF date (UTC); a constant when it cannot be read."""
    try:
        moment = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        moment = datetime(2000, 1, 1, tzinfo=UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("D:%Y%m%d%H%M%S+00'00'")


def _canvas_with_date(stamp: str) -> type[Canvas]:
    """A Canvas whose CreationDate/ModDate are ``stamp``, not the time of rendering."""

    class _DatedCanvas(Canvas):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.setDateFormatter(lambda *_: stamp)

    return _DatedCanvas


def _footer(scan_id: str) -> Any:
    label = f"probegate scan {clean_text(scan_id)[:80]}"

    def draw(canvas: Canvas, _doc: Any) -> None:
        canvas.saveState()
        canvas.setFont("Helvetica", 7.5)
        canvas.setFillColor(_MUTED)
        canvas.drawString(MARGIN, 10 * mm, label.encode("cp1252", "replace").decode("cp1252"))
        canvas.drawRightString(PAGE_WIDTH - MARGIN, 10 * mm, f"page {canvas.getPageNumber()}")
        canvas.restoreState()

    return draw


def _story(report: ScanReport) -> list[Flowable]:
    story: list[Flowable] = []
    story += _summary(report)
    story += _chart(report)
    story += agreement_section(report.agreement)
    story += _findings(report)
    story += _unjudged(report)
    story += _results(report)
    story += _guard(report)
    story += _peers(report)
    story.append(
        _p(
            f"probegate {pdf_text(report.package_version)} · probe library "
            f"{pdf_text(report.probe_library_version)} · formula "
            f"{pdf_text(report.aivss_formula_version)} · created {pdf_text(report.created_at)}",
            "small",
        )
    )
    return story


# --------------------------------------------------------------------------- sections


def _summary(report: ScanReport) -> list[Flowable]:
    authority = report.authority
    out: list[Flowable] = [
        _p(f"probegate scan {pdf_text(report.scan_id, limit=200)}", "title"),
        _p(
            f"target {pdf_text(target_text(report.target), limit=300)}"
            f" · mode {pdf_text(report.mode)} · seed {report.seed} · tier "
            f"{pdf_text(report.tier)} · {pdf_text(report.stopped_reason)}",
            "small",
        ),
        _p(f"surface: {pdf_text(surface_text(report.target), limit=600)}", "small"),
        _p(
            f"<b>{score_text(report.aivss)}</b>"
            f"<font size='12' color='#59636e'>{scale(report.aivss)}</font> "
            f"<font size='16'><b>{pdf_text(report.band)}</b></font>"
            "<font size='10' color='#59636e'> (AIVSS, higher is safer)</font>",
            "score",
        ),
    ]
    if report.aivss is None:
        out.append(_p(f"No score: {pdf_text(not_evaluated_reason(report), limit=400)}.", "warn"))
    if authority.authoritative:
        out.append(_p("The score is <b>authoritative</b>.", "ok"))
    else:
        lines = [
            f"The score is <b>not authoritative</b>, so a score gate ({_code('--fail-under')}) "
            "cannot pass on this scan. What would change it:"
        ]
        lines += [f"• {pdf_text(reason, limit=400)}" for reason in authority_reasons(report)[:20]]
        out.append(_p("<br/>".join(lines), "warn"))
    summary = report.findings_summary
    definition = report.target.definition
    out.append(
        _key_values(
            [
                ("Findings", " · ".join(f"{summary.get(s.value, 0)} {s.value}" for s in Severity)),
                ("Suppressed", str(sum(1 for f in report.findings if f.suppressed is not None))),
                ("Unjudged attempts", str(len(report.unjudged))),
                ("Not run", str(len(report.not_run))),
                ("Controls", pdf_text(controls_text(report).removeprefix("Controls: "), limit=300)),
                ("Not applicable", str(len(report.not_applicable))),
                ("Probes", str(len(report.results))),
                ("Evaluation", pdf_text(report.evaluation_mode)),
                ("Coverage", pdf_text(coverage_text(report), limit=400)),
                ("Coverage grade", pdf_text(report.coverage_grade, limit=40)),
                (
                    "Defined in",
                    _code(f"{pdf_text(definition.path, limit=300)}:{definition.line}")
                    if definition is not None
                    else "no file of the repository",
                ),
            ]
        )
    )
    out.append(_p("Signature status", "h2"))
    out.append(_p(signature_status(report.signatures)))
    return out


def signature_status(signatures: dict[str, Any] | None) -> str:
    """What ``scan.json`` carries; this PDF is a rendering of it and is not signed itself."""
    lines: list[str] = []
    if not signatures:
        lines.append("The report is <b>unsigned</b>: no HMAC-SHA256 and no Ed25519 signature.")
    else:
        has_hmac = isinstance(signatures.get("hmac_sha256"), str)
        lines.append(f"HMAC-SHA256: <b>{'present' if has_hmac else 'absent'}</b>")
        ed = signatures.get("ed25519")
        if isinstance(ed, dict):
            key_id = pdf_text(str(ed.get("key_id", "")), limit=100)
            lines.append(f"Ed25519: <b>present</b>, key id {_code(key_id)}")
        else:
            lines.append("Ed25519: <b>absent</b>")
    lines.append(
        f"This PDF is a rendering of {_code('scan.json')} and carries no signature of its own. "
        f"Check the report with {_code('probegate verify scan.json --pubkey-file KEY.pub')}: "
        "only a signature by a pinned key is proof."
    )
    return "<br/>".join(lines)


def _chart(report: ScanReport) -> list[Flowable]:
    """All ten ASI categories as horizontal bars, 0-100, with what each score stands on; the
    worst rows marked, the ones without a score framed, and why said below the chart
    (reports/pdf_chart.py draws the rows)."""
    states = category_states(report)
    label_width, value_width, cover_width = 65 * mm, 28 * mm, 30 * mm
    bar_width = FRAME_WIDTH - label_width - value_width - cover_width
    out: list[Flowable] = [
        _p("OWASP Top 10 for Agentic Applications", "h2"),
        _p(
            f"<b>{out_of_100(report.aivss)}</b> {pdf_text(report.band)} · coverage: "
            f"{pdf_text(coverage_text(report), limit=400)}"
        ),
        category_chart(states, FRAME_WIDTH, (label_width, bar_width, value_width)),
        _p(
            "Score per category, 0-100, higher is safer, with the attempts that could not be "
            "judged beside it and the probes behind it. Red rows score under 40: 0.0 means "
            "every probe of the category that could be judged succeeded. A dashed frame is a "
            "category without a score (n/a), amber when its probes ran but too few could be "
            "judged; why:",
            "small",
        ),
    ]
    for asi, state in states.items():
        if state.state != "tested":
            out.append(
                _p(
                    f"{pdf_text(asi)} {pdf_text(category_text(state))}: "
                    f"{pdf_text(state.reason, limit=400)}",
                    "small",
                )
            )
    return out


def _findings(report: ScanReport) -> list[Flowable]:
    findings = most_severe_first(report.findings)
    out: list[Flowable] = [PageBreak(), _p(f"Findings ({len(findings)})", "h2")]
    if not findings:
        out.append(_p("No probe succeeded against the agent."))
        return out
    for finding in findings[:FINDINGS_DETAILED_MAX]:
        out += _finding(finding)
    rest = findings[FINDINGS_DETAILED_MAX:]
    if rest:
        out.append(_p(f"Further findings ({len(rest)})", "h2"))
        rows = [
            [
                pdf_text(f.severity.value, limit=10),
                _code(pdf_text(f.probe_id, limit=80)),
                pdf_text(f.name, limit=120) + (" (suppressed)" if f.suppressed else ""),
            ]
            for f in rest[:RESULT_ROWS_MAX]
        ]
        out.append(_table(["Severity", "Probe", "Finding"], rows, [20 * mm, 70 * mm]))
        if len(rest) > RESULT_ROWS_MAX:
            out.append(_p(f"{len(rest) - RESULT_ROWS_MAX} more in scan.json.", "small"))
    return out


def _finding(finding: Finding) -> list[Flowable]:
    colour = _SEVERITY_COLOURS[finding.severity]
    out: list[Flowable] = [
        _p(
            f"<font color='{colour}'>[{finding.severity.value.upper()}]</font> "
            f"{pdf_text(finding.name, limit=200)} "
            f"<font size='8' color='#59636e'>{pdf_text(finding.probe_id, limit=200)}</font>",
            "h3",
        ),
        _p(pdf_text(finding.summary)),
    ]
    if finding.suppressed is not None:
        expires = finding.suppressed.expires
        out.append(
            _p(
                f"<b>Suppressed:</b> {pdf_text(finding.suppressed.reason, limit=500)}"
                + (f" (expires {pdf_text(expires, limit=40)})" if expires else "")
                + ". No gate counts it.",
                "warn",
            )
        )
    location = f"{pdf_text(finding.location.path, limit=300)}:{finding.location.line}"
    out.append(
        _key_values(
            [
                ("ASI", pdf_text(f"{finding.asi} {ASI_TITLES.get(finding.asi, '')}", limit=120)),
                ("OWASP LLM", pdf_text(", ".join(finding.owasp_llm), limit=120)),
                ("MITRE ATLAS", pdf_text(", ".join(finding.mitre_atlas), limit=200)),
                ("CSA", pdf_text(finding.csa_category, limit=120)),
                ("Channel", pdf_text(finding.channel, limit=60)),
                ("Severity (0-10)", number(finding.aivss_severity)),
                ("Attempts", f"{finding.successes} of {finding.attempt_count} succeeded"),
                ("Confidence", number(finding.confidence)),
                ("Location", _code(location)),
            ]
        )
    )
    if finding.evidence:
        out.append(_p("Evidence", "label"))
        for ev in finding.evidence:
            where = _code(f"{pdf_text(ev.path, limit=200)} [{ev.start}:{ev.end}]")
            out.append(
                Paragraph(
                    f"{pdf_text(ev.detector, limit=60)} · {pdf_text(ev.category, limit=80)} · "
                    f"score {number(ev.score)} · {where}: "
                    f"<font backColor='#fff8c5'>{pdf_text(ev.subject, limit=SUBJECT_MAX)}</font>",
                    _STYLES["bullet"],
                    bulletText="•",
                )
            )
    if finding.control is not None:
        out.append(_p("Control (the same conversation without the attack)", "label"))
        out.append(
            _p(
                f"{_code(pdf_text(finding.control.attempt_id, limit=200))}: "
                f"{pdf_text(finding.control.summary, limit=400)}"
            )
        )
    if finding.trigger_prompt:
        out.append(_p("Trigger prompt", "label"))
        out.append(_p(pdf_text(finding.trigger_prompt), "mono"))
    out.append(_p("Remediation", "label"))
    out.append(_p(pdf_text(finding.remediation)))
    reproducer = (
        f" · reproducer {pdf_text(finding.pov_reference, limit=300)}"
        if finding.pov_reference
        else ""
    )
    out.append(_p(f"fp {pdf_text(finding.fp)} · id {pdf_text(finding.id)}{reproducer}", "small"))
    out.append(Spacer(1, 4))
    return out


def _unjudged(report: ScanReport) -> list[Flowable]:
    if not report.unjudged:
        return []
    out: list[Flowable] = [
        _p(f"Unjudged attempts ({len(report.unjudged)})", "h2"),
        _p("No oracle could decide these; they are never counted as resisted.", "small"),
    ]
    for item in report.unjudged[:UNJUDGED_MAX]:
        out.append(
            Paragraph(
                f"{_code(pdf_text(item.probe_id, limit=200))}: {pdf_text(item.reason, limit=400)}",
                _STYLES["bullet"],
                bulletText="•",
            )
        )
    if len(report.unjudged) > UNJUDGED_MAX:
        out.append(_p(f"{len(report.unjudged) - UNJUDGED_MAX} more in scan.json.", "small"))
    return out


def _results(report: ScanReport) -> list[Flowable]:
    results = sorted(report.results, key=lambda r: (r.asi, r.probe_id))
    out: list[Flowable] = [_p(f"Probe outcomes ({len(results)})", "h2")]
    if not results:
        out.append(_p("No probe ran."))
        return out
    rows = [
        [
            _code(pdf_text(r.probe_id, limit=80)),
            pdf_text(r.asi, limit=10),
            pdf_text(r.outcome.replace("_", " "), limit=20),
            str(r.vulnerable),
            str(r.resisted),
            str(r.unjudged),
        ]
        for r in results[:RESULT_ROWS_MAX]
    ]
    # Narrow number columns: the probe's id (up to about 45 characters) fits on one line.
    header = ["Probe", "ASI", "Outcome", "Vulnerable", "Resisted", "Unjudged"]
    out.append(_table(header, rows, [None, 12 * mm, 22 * mm, 16 * mm, 15 * mm, 15 * mm]))
    if len(results) > RESULT_ROWS_MAX:
        out.append(_p(f"{len(results) - RESULT_ROWS_MAX} more in scan.json.", "small"))
    if report.not_run:
        out.append(
            _p(
                f"{len(report.not_run)} probe(s) not run (they need something this target does "
                "not expose; each with what enables it): "
                + pdf_text(
                    ", ".join(f"{n.probe_id} ({n.enabled_by})" for n in report.not_run),
                    limit=1500,
                ),
                "small",
            )
        )
    if report.not_applicable:
        out.append(
            _p(
                f"{len(report.not_applicable)} categories not applicable to this target: "
                + pdf_text(", ".join(report.not_applicable), limit=1500),
                "small",
            )
        )
    return out


def _guard(report: ScanReport) -> list[Flowable]:
    if report.guard is None:
        return []
    rows = [(pdf_text(k, limit=80), pdf_text(v, limit=200)) for k, v in guard_rows(report.guard)]
    return [_p("Runtime guard", "h2"), _key_values(rows)]


def _peers(report: ScanReport) -> list[Flowable]:
    if report.peers is None:
        return []
    rows = [(pdf_text(k, limit=80), pdf_text(v, limit=200)) for k, v in peer_rows(report.peers)]
    return [_p(pdf_text(PEERS_TITLE), "h2"), _key_values(rows)]
