"""SARIF 2.1.0 for GitHub code scanning (docs/report-format.md).

One module per job: :mod:`.log` assembles the run, :mod:`.rules` and :mod:`.results` build its
rules and results, :mod:`.omjson` writes each object as JSON under the names and defaults of
``sarif-om`` (the object model generated from the OASIS schema, bundled as data), and :mod:`.schema`
checks the log against the bundled OASIS schema with jsonschema: the log without its rules and
results before any byte is written, then each rule and result before it is written. An invalid
log is a ``ReportError``, never a file GitHub rejects later (a file is written through a
temporary one, dropped on an error).

The output is shaped by GitHub's ingestion rules too, checked in tests with the SARIF Multitool
and with upload-sarif's own fingerprinting code: every result has a repo-relative location that
exists, rules carry descriptions, help, ``helpUri``, ``security-severity`` and at most ten
tags, and the rule id is stable across probe versions.

Pure and deterministic: no clock, no file system beyond the bundled schema, sorted keys.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from probegate.canonical import canonical_bytes, canonical_line
from probegate.errors import ReportError
from probegate.models.report import ScanReport
from probegate.perf import gc_paused
from probegate.reports.escape import json_bytes
from probegate.reports.sarif.log import build_parts
from probegate.reports.sarif.schema import RESULTS, RULES, validate, validate_items


def render(report: ScanReport) -> bytes:
    """The SARIF log for ``report``, validated, as sorted compact JSON."""
    out = bytearray()
    write(report, out.extend)
    return bytes(out)


def write(report: ScanReport, sink: Callable[[bytes], object]) -> None:
    """:func:`render`'s bytes, handed to ``sink`` a piece at a time: the log without its rules
    and results, validated; then each rule and each result, made, validated and written one at
    a time, so a 10,000-finding scan's are never all held (built whole, its log peaked at 200
    MB).

    A rule or result the schema refuses raises :class:`ReportError` after earlier pieces were
    handed on: a file is written through a temporary one that is then dropped
    (files.write_atomic_pieces), so no invalid file is ever left.
    """
    with gc_paused():
        document, rules_of, results_of = build_parts(report)
        validate(document)
        run = document["runs"][0]
        # Each list's place in the log's canonical bytes: a value no report can hold (a random
        # token between NULs), written in the empty list's stead and cut out.
        lists = {
            _marker(): validate_items(rules_of(), RULES, unique_by="id"),
            _marker(): validate_items(results_of(), RESULTS),
        }
        rules_marker, results_marker = lists
        run["tool"]["driver"]["rules"] = rules_marker
        run["results"] = results_marker
        # Compact, not indented: json's indenting encoder is pure Python (seconds for a large
        # scan) and GitHub's upload limit is on size; sorted keys keep the bytes stable.
        # Property bags carry report fields as they are: their terminal-unsafe characters
        # are written as \u escapes, the same values for every parser.
        rest = canonical_line(document)
        del document, run
        places = sorted((rest.find(canonical_bytes(m)), m) for m in lists)
        if places[0][0] < 0:
            raise ReportError("SARIF output: a list's place was not found in the log")
        at = 0
        for start, marker in places:
            sink(json_bytes(rest[at:start]) + b"[")
            between = b""
            for item in lists[marker]:
                sink(between + json_bytes(canonical_bytes(item)))
                between = b","
            sink(b"]")
            at = start + len(canonical_bytes(marker))
        sink(json_bytes(rest[at:]))


def _marker() -> str:
    return f"\x00{secrets.token_hex(16)}\x00"
