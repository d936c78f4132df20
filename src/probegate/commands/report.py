"""`probegate report SCAN`: re-emit any format from a stored scan.

SCAN is a path to a scan JSON or a scan id, looked up as ``<store>/scans/<id>/scan.json``.
The report is read by the one stored-report reader (:mod:`probegate.models.stored`: strict,
either schema) and handed to the same pure emitters ``scan`` uses, so the bytes are identical to
what the scan wrote (signatures included: they are carried, never recomputed here).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from probegate.errors import UsageError
from probegate.models.store_layout import ScanFiles
from probegate.models.stored import load_report
from probegate.reports import FORMATS, FormatName, formats_help, parse_formats, write_outputs
from probegate.terminal import clean

DEFAULT_STORE = ".probegate"
DEFAULT_OUTPUT_DIR = "probegate-out"
_SCAN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="re-emit any format from a stored scan",
        description=(
            "Regenerate output formats from a stored scan, byte-identical to what "
            "'probegate scan' wrote. SCAN is a scan id or a path to its JSON."
        ),
    )
    p.add_argument("scan", metavar="SCAN", help="scan id or path to a scan JSON")
    p.add_argument(
        "--output",
        action="append",
        metavar="FMT",
        help=formats_help(),
    )
    p.add_argument(
        "--output-path",
        metavar="P",
        help="write the single requested format to P ('-' for standard output)",
    )
    p.add_argument(
        "--output-dir",
        default=DEFAULT_OUTPUT_DIR,
        metavar="DIR",
        help=f"directory for the standard file names (default: {DEFAULT_OUTPUT_DIR})",
    )
    p.add_argument(
        "--store",
        default=DEFAULT_STORE,
        metavar="DIR",
        help=f"scan store (default: {DEFAULT_STORE})",
    )


def run(args: argparse.Namespace) -> int:
    formats = parse_formats(args.output)
    report = load_report(resolve_scan(args.scan, Path(args.store)))
    for note in report.import_notes:  # a report of the older field set, mapped
        print(f"note: {clean(note)}", file=sys.stderr)
    if args.json:  # machine output: the report itself, as scan.json holds it
        FORMATS[FormatName.JSON].write(report, sys.stdout.buffer.write)  # terminal-safe as written
        sys.stdout.flush()
        return 0
    if args.output_path is not None:
        if len(formats) != 1:
            raise UsageError("--output-path takes exactly one --output format")
        if args.output_path == "-":
            FORMATS[formats[0]].write(report, sys.stdout.buffer.write)
            sys.stdout.flush()
            return 0
        FORMATS[formats[0]].write_file(Path(args.output_path), report)
        print(args.output_path)
        return 0
    for path in write_outputs(report, formats, Path(args.output_dir)).values():
        print(path)
    return 0


def resolve_scan(scan: str, store: Path) -> Path:
    """The scan JSON that SCAN names: an existing file, else a scan id in the store."""
    path = Path(scan)
    if path.is_file():
        return path
    if _SCAN_ID.match(scan) and ".." not in scan:
        stored = ScanFiles.of(store, scan).report
        if stored.is_file():
            return stored
        raise UsageError(f"no scan {scan!r}: neither a file nor {stored}")
    raise UsageError(f"no scan file {scan}")
