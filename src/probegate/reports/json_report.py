"""The JSON report: canonical values, one field and one finding per line; signed as computed.

Agent text stays verbatim as a value; the characters a terminal acts on are written as their
``\\u`` escapes (:func:`escape.json_bytes`), which the signatures do not see (they cover the
parsed object, docs/signing.md).

The report is written a piece at a time (:func:`write`): its long lists are dumped one item at
a time as they are written, so neither the whole report as JSON values nor its whole text is
ever held (a 10,000-finding report: 200 MB at the peak when written whole, its read 117 MB).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from probegate.canonical import Items, write_pretty
from probegate.models.report import ScanReport
from probegate.perf import gc_paused
from probegate.reports.escape import json_bytes

# The lists that grow with the scan, written item by item.
_LONG = ("findings", "results", "unjudged")


def write(report: ScanReport, sink: Callable[[bytes], object], chunk: int = 1 << 20) -> None:
    """The bytes of :func:`render`, handed to ``sink`` in pieces of whole values of about
    ``chunk`` bytes (the escape is per character, so escaping each piece escapes the text)."""
    with gc_paused():  # a 10,000-finding report is millions of acyclic objects
        fields: dict[str, Any] = report.to_dict(exclude=set(_LONG))
        for name in _LONG:
            fields[name] = Items(getattr(report, name), _dump)
        write_pretty(fields, lambda piece: sink(json_bytes(piece)), chunk)


def render(report: ScanReport) -> bytes:
    pieces: list[bytes] = []
    write(report, pieces.append)
    return b"".join(pieces)


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True)
