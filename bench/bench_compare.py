"""Benchmark: compare two 10,000-finding reports (target: under 1 s).

A large agent fleet merged from shards can carry thousands of findings, and the comparison runs
on every pull request, so it must stay linear. The baseline and current reports share 9,500
findings; 500 are fixed (their probes resisted) and 500 are new. Timed separately: the
comparison itself (the target), reading both reports from JSON, and rendering the Markdown
diff, so a slowdown points at its stage. Exits non-zero when the comparison misses the target.

Run: ``.venv/bin/python bench/bench_compare.py`` (``make bench`` runs it too).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TypeVar

from bench_reports import synthetic_report  # the sibling bench; run as a script from bench/

from probegate.baseline import compare
from probegate.canonical import pretty_bytes
from probegate.models.report import ScanReport
from probegate.models.stored import parse_report
from probegate.reports.diff_markdown import render_diff

FINDINGS = 10_000
CHURN = 500
TARGET_SECONDS = 1.0
REPEATS = 5

T = TypeVar("T")


def _pair() -> tuple[ScanReport, ScanReport]:
    """Baseline and current: 9,500 findings in both, 500 fixed (resisted now), 500 new, each
    probe judged 30 times.

    Built from the report bench's synthetic scan, so both benches measure the same shape.
    """
    full = synthetic_report(FINDINGS + CHURN)

    def side(keep: slice) -> ScanReport:
        kept = full.findings[keep]
        ids = {f.probe_id for f in kept}
        # Thirty attempts a probe (a full scan's), so a finding that came or went is beyond
        # chance and every one is tested: the comparison's heaviest case.
        results = [
            r.model_copy(update={"outcome": "vulnerable", "vulnerable": 20, "resisted": 10})
            if r.probe_id in ids
            else r.model_copy(update={"outcome": "resisted", "vulnerable": 0, "resisted": 30})
            for r in full.results
        ]
        return full.model_copy(update={"findings": kept, "results": results})

    return side(slice(0, FINDINGS)), side(slice(CHURN, FINDINGS + CHURN))


def _best(fn: Callable[[], T]) -> tuple[float, T]:
    """Best of REPEATS wall-clock runs: the figure least disturbed by the machine."""
    best = float("inf")
    value: T | None = None
    for _ in range(REPEATS):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    assert value is not None
    return best, value


def main() -> None:
    baseline, current = _pair()
    assert len(baseline.findings) == len(current.findings) == FINDINGS

    seconds, comparison = _best(lambda: compare(baseline, current))
    assert len(comparison.new) == CHURN and len(comparison.fixed) == CHURN
    assert len(comparison.persisting) == FINDINGS - CHURN

    raw_base = pretty_bytes(baseline.to_dict())
    raw_cur = pretty_bytes(current.to_dict())
    load_seconds, _ = _best(
        lambda: (
            parse_report(raw_base, source="baseline"),
            parse_report(raw_cur, source="current"),
        )
    )
    render_seconds, _ = _best(lambda: render_diff(comparison))

    status = "OK" if seconds < TARGET_SECONDS else "SLOW"
    print(
        f"bench_compare: compare {FINDINGS:,} vs {FINDINGS:,} findings: {seconds * 1000:.1f} ms "
        f"(target < {TARGET_SECONDS * 1000:.0f} ms) {status}"
    )
    print(
        f"bench_compare: load both reports from JSON ({(len(raw_base) + len(raw_cur)) / 1e6:.1f}"
        f" MB): {load_seconds * 1000:.1f} ms; render Markdown diff: {render_seconds * 1000:.1f} ms"
    )
    if status != "OK":
        sys.exit(1)


if __name__ == "__main__":
    main()
