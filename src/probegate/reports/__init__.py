"""Emitters: one module per format, each a pure ``render(report) -> bytes``.

A format marked ``streams`` (JSON, HTML) also has ``write(report, sink)``, which hands the same
bytes to ``sink`` a piece at a time (:func:`streamer`): its file is written without the whole
text ever held.

:data:`FORMATS` is the registry of output formats, keyed by :class:`FormatName`: adding one is
its module, its member, its arm in :func:`emitter` (mypy holds that dispatch exhaustive) and
one line here. The ``--output`` help of ``scan``, ``report`` and ``merge``
(:func:`formats_help`), the formats table of docs/report-format.md, the README's table, the
``formats`` input of action.yml and the golden-file test all follow it
(tests/reports/test_formats_registry.py). A format's module is imported when a report is
rendered in it, so a scan that writes JSON alone never loads the SARIF object model, its schema
checker or ReportLab. ``pdf`` needs the optional ``pdf`` extra (ReportLab): asking for the
format without the extra is one usage error before any work starts.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import assert_never

from probegate.errors import ReportError, UsageError
from probegate.files import Produce, write_atomic_files, write_atomic_pieces
from probegate.models.report import ScanReport
from probegate.models.store_layout import REPORT_FILE
from probegate.perf import gc_paused
from probegate.validation import did_you_mean


class FormatName(StrEnum):
    """What ``--output`` names a format: one member per line of :data:`FORMATS`."""

    JSON = "json"
    SARIF = "sarif"
    JUNIT = "junit"
    MD = "md"
    HTML = "html"
    PDF = "pdf"


@dataclass(frozen=True)
class Format:
    """One output format: ``--output NAME`` writes ``filename`` in the output directory."""

    name: FormatName
    filename: str
    purpose: str  # what it is for, one line (help, docs, the Action's input)
    # The same report gives the same bytes on every install (a golden file holds them); not so
    # for a format whose bytes belong to an optional library's version.
    stable_bytes: bool = True
    extra: str | None = None  # the optional dependency group the format needs
    # Written a piece at a time: its module has ``write(report, sink)`` beside ``render``.
    streams: bool = False

    def render(self, report: ScanReport) -> bytes:
        """The report in this format; its module is imported now, not when probegate starts."""
        if self.extra == "pdf":
            require_pdf()
        return emitter(self.name)(report)

    def write(self, report: ScanReport, sink: Callable[[bytes], object]) -> None:
        """The bytes of :meth:`render`, handed to ``sink`` a piece at a time where the format
        streams (a 10,000-finding JSON report is never held whole), else at once."""
        write = streamer(self.name) if self.streams else None
        if write is None:
            sink(self.render(report))
            return
        write(report, sink)

    def write_file(self, path: Path, report: ScanReport, *, private: bool = False) -> None:
        """The report in this format at ``path``, atomically (:func:`write_atomic_pieces`)."""
        write_atomic_pieces(
            path, lambda sink: self.write(report, sink), error=ReportError, private=private
        )


def emitter(name: FormatName) -> Callable[[ScanReport], bytes]:
    """The ``render`` of the format's module, imported on first use."""
    match name:
        case FormatName.JSON:
            from probegate.reports import json_report

            return json_report.render
        case FormatName.SARIF:
            from probegate.reports import sarif

            return sarif.render
        case FormatName.JUNIT:
            from probegate.reports import junit

            return junit.render
        case FormatName.MD:
            from probegate.reports import markdown

            return markdown.render
        case FormatName.HTML:
            from probegate.reports import html_report

            return html_report.render
        case FormatName.PDF:
            from probegate.reports import pdf_report

            return pdf_report.render
        case _:
            assert_never(name)


Stream = Callable[[ScanReport, Callable[[bytes], object]], None]


def streamer(name: FormatName) -> Stream | None:
    """The ``write(report, sink)`` of a format that streams, imported on first use."""
    if name is FormatName.JSON:
        from probegate.reports import json_report

        return json_report.write
    if name is FormatName.HTML:
        from probegate.reports import html_report

        return html_report.write
    if name is FormatName.SARIF:
        from probegate.reports import sarif

        return sarif.write
    return None


PDF_INSTALL_HINT = "pip install 'probegate[pdf]'"


def require_pdf() -> None:
    """One usage error (exit 2) naming the extra, when ReportLab is not installed."""
    if importlib.util.find_spec("reportlab") is None:
        raise UsageError(
            f"--output pdf needs the optional pdf extra, which is not installed: {PDF_INSTALL_HINT}"
        )


FORMATS: dict[FormatName, Format] = {
    f.name: f
    for f in (
        Format(FormatName.JSON, REPORT_FILE,
               "the signed record; every other format is derived from it", streams=True),
        Format(FormatName.SARIF, "scan.sarif",
               "GitHub code scanning and other SARIF consumers", streams=True),
        Format(FormatName.JUNIT, "junit.xml", "CI test reporters"),
        Format(FormatName.MD, "summary.md", "`$GITHUB_STEP_SUMMARY`"),
        Format(FormatName.HTML, "report.html",
               "a developer reading findings and transcripts", streams=True),
        Format(FormatName.PDF, "report.pdf",
               f"an auditor's file; needs the optional extra `{PDF_INSTALL_HINT}`",
               stable_bytes=False, extra="pdf"),
    )
}  # fmt: skip


def formats_help(default: str = "json") -> str:
    """The ``--output`` help every command that writes reports shows."""
    names = ", ".join(f"{f.name} ({f.filename})" for f in FORMATS.values())
    return f"report formats, a comma list or repeated: {names}; default {default}"


def parse_formats(values: list[str] | None) -> list[FormatName]:
    """``--output json,sarif --output md`` -> ordered unique names; unknown ones are exit 2."""
    names: list[FormatName] = []
    for value in values or [FormatName.JSON]:
        for raw in value.split(","):
            name = raw.strip().lower()
            if not name:
                continue
            if name not in FORMATS:
                known = ", ".join(FORMATS)
                hint = did_you_mean(name, [str(f) for f in FORMATS])
                raise UsageError(f"unknown output format {name!r}{hint} (choose from {known})")
            if name not in names:
                names.append(FormatName(name))
    if any(FORMATS[name].extra == "pdf" for name in names):
        require_pdf()  # before the scan runs, not after an hour of it
    return names or [FormatName.JSON]


def write_outputs(
    report: ScanReport, formats: list[FormatName], output_dir: Path
) -> dict[FormatName, Path]:
    """Render every format first, then write: a format that fails leaves no file changed.

    A format that streams (JSON, HTML) is written a piece at a time into its temporary file,
    after the others are rendered; every file is renamed into place once all are made.
    """
    with gc_paused():  # the collector rescans a huge report over and over otherwise
        rendered = {n: FORMATS[n].render(report) for n in formats if not FORMATS[n].streams}
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create output directory {output_dir}: {exc}") from exc
    paths = {name: output_dir / FORMATS[name].filename for name in formats}
    write_atomic_files(
        [(paths[name], _producer(report, name, rendered.get(name))) for name in formats],
        error=ReportError,
    )
    return paths


def _producer(report: ScanReport, name: FormatName, data: bytes | None) -> Produce:
    """What writes format ``name``'s file: its rendered bytes, or its streaming writer."""
    if data is not None:
        return lambda sink: sink(data)
    return lambda sink: FORMATS[name].write(report, sink)
