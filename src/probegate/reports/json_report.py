"""The JSON report: canonical values, one field and one finding per line; signed as computed.

Agent text stays verbatim as a value; the characters a terminal acts on are written as their
``\\u`` escapes (:func:`escape.json_bytes`), which the signatures do not see (they cover the
parsed object, docs/signing.md).

The report is written a piece at a time (:func:`write`): its long lists are dumped one item at
a time as they are written (``ScanReport.to_fields``), so neither the whole report as JSON
values nor its whole text is ever held (a 10,000-finding report peaked at 200 MB written whole,
83 MB over its read).
"""

from __future__ import annotations

from collections.abc import Callable

from probegate.canonical import write_pretty
from probegate.models.report import ScanReport
from probegate.perf import gc_paused
from probegate.reports.escape import json_bytes


def write(report: ScanReport, sink: Callable[[bytes], object], chunk: int = 1 << 20) -> None:
    """The bytes of :func:`render`, handed to ``sink`` in pieces of whole values of about
    ``chunk`` bytes (the escape is per character, so escaping each piece escapes the text)."""
    with gc_paused():  # a 10,000-finding report is millions of acyclic objects
        write_pretty(report.to_fields(), lambda piece: sink(json_bytes(piece)), chunk)


def render(report: ScanReport) -> bytes:
    pieces: list[bytes] = []
    write(report, pieces.append)
    return b"".join(pieces)
