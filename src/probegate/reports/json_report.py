"""The JSON report: sorted keys, UTF-8, two-space indent; signatures as already computed."""

from __future__ import annotations

from probegate.canonical import pretty_bytes
from probegate.models.report import ScanReport


def render(report: ScanReport) -> bytes:
    return pretty_bytes(report.to_dict())
