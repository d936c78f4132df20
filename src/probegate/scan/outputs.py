"""Stage 5, outputs: the report's bytes in the store and in every format asked for.

The stored report (models/store_layout.py) is what ``probegate report``, ``compare`` and
``--resume`` read back; the output directory holds one scan's report files, never an older
run's beside them.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from probegate.models.report import ScanReport
from probegate.models.store_layout import ScanFiles
from probegate.reports import FORMATS, FormatName, write_outputs


def write_report_files(
    report: ScanReport, files: ScanFiles, formats: list[FormatName], output_dir: Path
) -> dict[FormatName, Path]:
    """The stored report, then each format's file; returns the files written by format."""
    FORMATS[FormatName.JSON].write_file(files.report, report, private=True)
    written = write_outputs(report, formats, output_dir)
    _remove_stale_outputs(output_dir, written)
    return written


def _remove_stale_outputs(output_dir: Path, written: dict[FormatName, Path]) -> None:
    """Report files of formats this scan did not write are an older scan's: remove them.

    Only probegate's own file names are touched, so the folder holds one scan's reports and a
    reader never mixes this scan's JSON report with an older run's HTML.
    """
    keep = {path.name for path in written.values()}
    for fmt in FORMATS.values():
        stale = output_dir / fmt.filename
        if fmt.filename in keep or not stale.is_file():
            continue
        with contextlib.suppress(OSError), stale.open("rb") as fh:
            ours = b"probegate" in fh.read(64 * 1024)
        if ours:  # a file of the same name that probegate did not write is the user's
            with contextlib.suppress(OSError):
                stale.unlink()
