"""The JSON report: canonical values, one field and one finding per line; signed as computed.

Agent text stays verbatim as a value; the characters a terminal acts on are written as their
``\\u`` escapes (:func:`escape.json_bytes`), which the signatures do not see (they cover the
parsed object, docs/signing.md).
"""

from __future__ import annotations

from probegate.canonical import pretty_bytes
from probegate.models.report import ScanReport
from probegate.perf import gc_paused
from probegate.reports.escape import json_bytes


def render(report: ScanReport) -> bytes:
    with gc_paused():  # a 10,000-finding report is millions of acyclic objects
        return json_bytes(pretty_bytes(report.to_dict()))
