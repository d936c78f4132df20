"""SARIF 2.1.0 for GitHub code scanning (docs/report-format.md).

One module per job: :mod:`.log` assembles the run, :mod:`.rules` and :mod:`.results` build its
rules and results, :mod:`.omjson` writes each object as JSON under the names and defaults of
``sarif-om`` (the object model generated from the OASIS schema, bundled as data), and :mod:`.schema`
checks the document against the bundled OASIS schema with jsonschema before any byte is
returned: an invalid document is a ``ReportError``, never a file GitHub rejects later.

The output is shaped by GitHub's ingestion rules too, checked in tests with the SARIF Multitool
and with upload-sarif's own fingerprinting code: every result has a repo-relative location that
exists, rules carry descriptions, help, ``helpUri``, ``security-severity`` and at most ten
tags, and the rule id is stable across probe versions.

Pure and deterministic: no clock, no file system beyond the bundled schema, sorted keys.
"""

from __future__ import annotations

from probegate.canonical import canonical_line
from probegate.models.report import ScanReport
from probegate.perf import gc_paused
from probegate.reports.escape import json_bytes
from probegate.reports.sarif.log import build
from probegate.reports.sarif.schema import validate


def render(report: ScanReport) -> bytes:
    """The SARIF log for ``report``, validated, as sorted compact JSON."""
    with gc_paused():
        document = build(report)
        validate(document)
        # Compact, not indented: json's indenting encoder is pure Python (seconds for a large
        # scan) and GitHub's upload limit is on size; sorted keys keep the bytes stable.
        # Property bags carry report fields as they are: their terminal-unsafe characters
        # are written as \u escapes, the same values for every parser.
        return json_bytes(canonical_line(document))
