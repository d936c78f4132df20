"""``--output pdf``: pages a person can read, text a machine can extract, bytes that repeat.

Every page is rendered to PNG with PDFium (pypdfium2) and must carry ink; the text layer must
hold what the report says (score, band, every finding, evidence, remediation, signature
status). Hostile agent text must come out as text, never as markup, links or script. Without
the ``pdf`` extra the command fails once, with exit 2 and the install command, before scanning.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from PIL import Image
from reportlab.lib.pagesizes import A4
from reportlab.lib.units import mm
from reportlab.platypus import SimpleDocTemplate

from probegate.cli import main
from probegate.models.report import ScanReport
from probegate.reports import FORMATS, pdf_blocks
from probegate.reports.headline import category_coverage, coverage_text, out_of_100
from probegate.reports.pdf_blocks import pdf_text as escape_for_pdf
from probegate.reports.pdf_report import render
from tests.reports.pdfpages import Page, pdf_text, read_pdf
from tests.reports.samples import HOSTILE, golden_report, hostile_report, scan_to


def _scan(tmp_path: Path, *argv: str) -> tuple[int, Path]:
    return scan_to(tmp_path, "json,pdf", *argv)


def test_pdf_is_registered_as_report_pdf() -> None:
    assert FORMATS["pdf"].filename == "report.pdf"
    assert FORMATS["pdf"].extra == "pdf"


def test_demo_scan_pdf_pages_render_and_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = _scan(tmp_path, "demo")
    assert code == 0
    data = (out / "report.pdf").read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    report = json.loads((out / "scan.json").read_text(encoding="utf-8"))
    pages = read_pdf(data, tmp_path / "png", scale=0.6)
    assert len(pages) > 3
    for page in pages:
        assert page.png.stat().st_size > 1000, page.number
        assert page.ink > 0.005, f"page {page.number} is blank"
        assert page.text.strip(), f"page {page.number} has no text layer"
        assert f"page {page.number}" in page.text  # the footer
    first = pages[0].text
    assert report["scan_id"] in first
    assert f"{report['aivss']}/100" in first.replace(" ", "") and report["band"] in first
    assert "not authoritative" in first and "Signature status" in first
    assert "unsigned" in first
    assert "ASI01 Agent Goal Hijack" in first and "ASI10 Rogue Agents" in first
    text = "\n".join(p.text for p in pages)
    flat = " ".join(text.split())
    for finding in report["findings"]:
        assert finding["probe_id"] in flat, finding["probe_id"]
        assert finding["fp"] in flat
    assert flat.count("Remediation") == len(report["findings"])
    assert report["findings"][0]["evidence"][0]["path"] in flat
    for result in report["results"]:
        assert result["probe_id"] in flat


def test_per_asi_chart_draws_bars(tmp_path: Path) -> None:
    """The golden report's scores are above zero: the first page carries coloured bars."""
    report = golden_report()
    assert any(score > 0 for score in report.asi_scores.values())
    first = read_pdf(render(report), tmp_path)[0]
    unscored = {
        asi: state.model_copy(update={"state": "not_selected", "score": None})
        for asi, state in report.categories.items()
    }
    no_bars = report.model_copy(update={"asi_scores": {}, "categories": unscored})
    assert first.colourful > read_pdf(render(no_bars))[0].colourful + 0.01
    for asi, score in report.asi_scores.items():
        assert asi in first.text and str(score) in first.text


def _with_zero(report: ScanReport, asi: str) -> ScanReport:
    categories = dict(report.categories)
    categories[asi] = categories[asi].model_copy(update={"score": 0.0, "value": 0.0})
    scores = {**report.asi_scores, asi: 0.0}
    return report.model_copy(update={"categories": categories, "asi_scores": scores})


def _with_state(report: ScanReport, asi: str, state: str) -> ScanReport:
    categories = dict(report.categories)
    categories[asi] = categories[asi].model_copy(
        update={"state": state, "score": None, "reason": "none of its probes applies"}
    )
    scores = {k: v for k, v in report.asi_scores.items() if k != asi}
    return report.model_copy(update={"categories": categories, "asi_scores": scores})


def _marked(page: Page) -> float:
    """The share of the page's pixels in a marked row's band (#ffebe9) or its red (#cf222e)."""
    image = Image.open(page.png).convert("RGB")
    pixels = image.get_flattened_data() if hasattr(image, "get_flattened_data") else image.getdata()
    band = sum(
        1
        for r, g, b in pixels
        if (r > 250 and 225 < g < 242 and 225 < b < 240) or (r > 190 and g < 60 and b < 70)
    )
    return band / (image.width * image.height)


def test_a_zero_category_is_drawn_in_red_and_an_n_a_one_is_not(tmp_path: Path) -> None:
    """The same category (ASI06, scored 50) three ways: at 0.0 it is the most visible row (a
    red band, edge and stub), n/a has no bar and none of the red, and neither looks like the
    other."""
    report = golden_report()
    zero = read_pdf(render(_with_zero(report, "ASI06")), tmp_path / "zero")[0]
    none = read_pdf(render(_with_state(report, "ASI06", "not_applicable")), tmp_path / "na")[0]
    scored = read_pdf(render(report), tmp_path / "scored")[0]
    assert _marked(zero) > _marked(scored) + 0.003  # the band across one row, at least
    assert abs(_marked(none) - _marked(scored)) < 0.0005  # n/a: no red, no band
    assert "ASI06 Memory & Context Poisoning" in zero.text and "0.0" in zero.text
    assert "n/a (not applicable)" in none.text


def test_the_chart_shows_coverage_next_to_the_score(tmp_path: Path) -> None:
    report = golden_report()
    first = " ".join(read_pdf(render(report), tmp_path)[0].text.split())
    line = " ".join(
        f"{out_of_100(report.aivss)} {report.band} · coverage: {coverage_text(report)}".split()
    )
    assert line in first
    for state in report.categories.values():
        assert category_coverage(state) in first


def test_table_headers_keep_their_words_whatever_the_widths() -> None:
    """A column narrower than its header's longest word is widened from the open column: no
    header is broken inside a word ("Cate / gory")."""
    table = pdf_blocks.short_table(
        ["Probe", "Category", "Unjudged"], [["asi01.x.v1", "ASI01", "3"]], [None, 5 * mm, 5 * mm]
    )
    widths = table._colWidths
    assert widths[1] >= pdf_blocks.header_width("Category") > 5 * mm
    assert abs(sum(widths) - pdf_blocks.FRAME_WIDTH) < 0.01
    story = [table]
    buffer = io.BytesIO()
    SimpleDocTemplate(buffer, pagesize=A4).build(story)
    text = " ".join(pdf_text(buffer.getvalue()).split())
    assert "Category" in text and "Unjudged" in text


def test_signature_status_names_what_the_report_carries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["keys", "generate", "--out-dir", str(tmp_path), "--name", "k"]) == 0
    key = tmp_path / "k.key"
    monkeypatch.setenv("PROBEGATE_SIGNING_SECRET", "s" * 32)
    code, out = _scan(tmp_path, "demo-hardened", "--signing-key", str(key))
    assert code == 0
    report = json.loads((out / "scan.json").read_text(encoding="utf-8"))
    first = " ".join(read_pdf((out / "report.pdf").read_bytes())[0].text.split())
    assert "HMAC-SHA256: present" in first
    assert f"Ed25519: present, key id {report['signatures']['ed25519']['key_id']}" in first
    assert "probegate verify" in first


def test_same_report_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    report = golden_report()
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    assert render(report) == render(report)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    first = render(report)
    assert render(report) == first


@pytest.mark.slow
def test_scan_and_report_command_write_the_same_pdf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    code, out = _scan(tmp_path, "demo")
    assert code == 0
    again = tmp_path / "again.pdf"
    code = main(["report", str(out / "scan.json"), "--output", "pdf", "--output-path", str(again)])
    assert code == 0
    assert again.read_bytes() == (out / "report.pdf").read_bytes()


def test_creation_date_is_the_reports_own(tmp_path: Path) -> None:
    report = golden_report().model_copy(update={"created_at": "2026-03-04T05:06:07Z"})
    assert b"D:20260304050607+00'00'" in render(report)


def test_hostile_text_is_shown_as_text_and_nothing_else(tmp_path: Path) -> None:
    data = render(hostile_report())
    # No link, no action, no script, no embedded file: markup in agent text was not followed.
    for marker in (b"/URI", b"/JavaScript", b"/JS", b"/Launch", b"/EmbeddedFile", b"/Annots"):
        assert marker not in data, marker
    pages = read_pdf(data, tmp_path)
    text = " ".join(" ".join(p.text for p in pages).split())
    assert "<script>alert(1)</script>" in text  # shown literally
    assert "[link](javascript:x)" in text
    assert "& &amp;" in text  # an entity in agent text stays what it was
    assert "\x1b" not in text and "\x00" not in text
    assert "[U+202E]" not in text  # bidi overrides are removed before anything else
    assert "evil" in text


def test_characters_outside_the_fonts_are_written_as_code_points() -> None:
    shown = escape_for_pdf("café 中 z\u200bw <b>&")
    assert shown == "café [U+4E2D] z[U+200B]w &lt;b&gt;&amp;"
    assert escape_for_pdf(HOSTILE).count("<") == escape_for_pdf(HOSTILE).count("<br/>")


def test_unicode_text_reaches_the_page(tmp_path: Path) -> None:
    finding = (
        golden_report()
        .findings[0]
        .model_copy(update={"summary": "Le client a reçu 中文 and a zero\u200bwidth space"})
    )
    report = golden_report().model_copy(update={"findings": [finding]})
    text = " ".join(pdf_text(render(report)).split())
    assert "Le client a reçu [U+4E2D][U+6587] and a zero[U+200B]width space" in text


@pytest.mark.slow
def test_many_findings_stay_within_bounds() -> None:
    """Only the most severe findings are laid out in full; the rest are rows."""
    base = golden_report()
    template = base.findings[0]
    findings = [
        template.model_copy(update={"probe_id": f"asi01.bulk-{i:04d}.v1", "id": f"PG-{i:04d}"})
        for i in range(260)
    ]
    data = render(base.model_copy(update={"findings": findings}))
    text = " ".join(pdf_text(data).split())
    assert "Further findings (60)" in text
    assert "asi01.bulk-0259.v1" in text
    assert text.count("Remediation") == 200


@pytest.mark.parametrize("command", ["scan", "report"])
def test_missing_extra_is_one_usage_error_before_any_work(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    if command == "report":
        assert _scan(tmp_path, "demo-hardened")[0] == 0
        argv = ["report", str(tmp_path / "out" / "scan.json"), "--output", "pdf"]
    else:
        argv = ["scan", "demo", "--output", "json,pdf", "--store", str(tmp_path / "store")]
    capsys.readouterr()
    # As if ReportLab were not installed: the import system finds nothing under that name.
    for name in [m for m in sys.modules if m == "reportlab" or m.startswith("reportlab.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delitem(sys.modules, "probegate.reports.pdf_report", raising=False)
    monkeypatch.setitem(sys.modules, "reportlab", None)
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0, err
    assert "pip install 'probegate[pdf]'" in err and "Traceback" not in err
    if command == "scan":
        assert not (tmp_path / "store").exists() and not (tmp_path / "probegate-out").exists()
