"""Golden files: each format's bytes for one fixed report, and determinism around them.

The table of formats is the registry: every format whose bytes are the same on every install
(``Format.stable_bytes``) has a golden file named like its output file. The PDF's bytes belong
to the layout library's version (an optional extra with a version range), so it is checked by
rendering its pages and reading its text (test_pdf.py), and for determinism below.

Regenerate after an intended change with ``PROBEGATE_UPDATE_GOLDEN=1 pytest tests/reports``
and review the diff like code.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from probegate.models.report import ScanReport
from probegate.reports import FORMATS
from tests.reports.samples import golden_report

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
UPDATE = os.environ.get("PROBEGATE_UPDATE_GOLDEN") == "1"
STABLE = sorted(name for name, fmt in FORMATS.items() if fmt.stable_bytes)


def test_the_golden_files_are_the_stable_formats() -> None:
    assert {p.name for p in GOLDEN.iterdir()} == {FORMATS[name].filename for name in STABLE}


@pytest.mark.parametrize("name", STABLE)
def test_golden(name: str) -> None:
    data = FORMATS[name].render(golden_report())
    path = GOLDEN / FORMATS[name].filename
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        pytest.skip(f"golden file {path.name} rewritten")
    assert path.exists(), f"missing {path}; run with PROBEGATE_UPDATE_GOLDEN=1"
    expected = path.read_bytes()
    if data != expected:  # a readable first difference instead of two blobs
        got, want = data.decode("utf-8"), expected.decode("utf-8")
        at = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)
        at = min(len(got), len(want)) if at is None else at
        pytest.fail(
            f"{path.name} differs at char {at}: got {got[at - 40 : at + 80]!r}, "
            f"golden {want[at - 40 : at + 80]!r} (PROBEGATE_UPDATE_GOLDEN=1 to accept)"
        )


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_same_scan_same_bytes_after_a_round_trip(name: str) -> None:
    """What `probegate report` relies on: a report read back from its JSON renders the same."""
    report = golden_report()
    reread = ScanReport.model_validate(json.loads(FORMATS["json"].render(report)))
    first = FORMATS[name].render(report)
    assert FORMATS[name].render(report) == first
    assert FORMATS[name].render(reread) == first
