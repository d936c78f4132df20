"""The JSON report: canonical values, one field and one finding per line; signed as computed."""

from __future__ import annotations

from probegate.canonical import pretty_bytes
from probegate.models.report import ScanReport
from probegate.perf import gc_paused


def render(report: ScanReport) -> bytes:
    with gc_paused():  # a 10,000-finding report is millions of acyclic objects
        return pretty_bytes(report.to_dict())
