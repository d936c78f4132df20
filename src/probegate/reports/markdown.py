"""Format not built yet."""

from __future__ import annotations

from probegate.errors import ReportError
from probegate.models.report import ScanReport


def render(report: ScanReport) -> bytes:
    raise ReportError("this output format is not built yet")
