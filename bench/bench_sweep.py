"""What "secrets are evidence in every probe" costs (docs/scoring.md, "Secrets anywhere").

Every attempt is swept for its secrets after its probe's oracles (library/oracles/sweep.py):
this times the demo and demo-careful full scans (4,020 attempts each, judged in-process, so CPU
time is the cost) with the sweep and with it replaced by one that finds nothing, in alternating
runs, and prints the medians, the difference and the controls each ran. The target: at most
10 % on a full scan.
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import probegate.judge.attempt as judged
from probegate.cli import main as cli_main

RUNS = 7
TARGET = 0.10


def _scan(target: str, sweep: Any) -> tuple[float, int]:
    """CPU seconds of one full scan of ``target`` with ``sweep`` as the judge's sweep, and the
    controls it ran (a secret the sweep finds makes a finding, which its control checks)."""
    saved = judged.sweep
    judged.sweep = sweep
    try:
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
            start = time.process_time()
            code = cli_main(
                ["scan", target, "--mode", "full", "--quiet", "--no-sign", "--output", "json",
                 "--store", str(Path(tmp) / "store"), "--output-dir", str(Path(tmp) / "out")]
            )  # fmt: skip
            took = time.process_time() - start
            report = json.loads((Path(tmp) / "out" / "scan.json").read_text(encoding="utf-8"))
    finally:
        judged.sweep = saved
    if code != 0:
        sys.exit(f"the {target} full scan exited {code}")
    return took, int(report["controls"]["run"])


def _nothing(transcript: Any, ctx: Any) -> tuple[()]:
    return ()


def main() -> None:
    real = judged.sweep
    failed = False
    for target in ("demo", "demo-careful"):
        _scan(target, real)  # warm: imports, the library's compiled patterns
        on_runs, off_runs = [], []
        for _ in range(RUNS):
            on_runs.append(_scan(target, real))
            off_runs.append(_scan(target, _nothing))
        on, off = (statistics.median(t for t, _ in runs) for runs in (on_runs, off_runs))
        cost = (on - off) / off
        print(
            f"{target} full scan CPU, median of {RUNS} alternating runs: with the secret "
            f"sweep {on:.2f} s ({on_runs[0][1]} controls), without {off:.2f} s "
            f"({off_runs[0][1]} controls): {cost:+.1%} (target at most +{TARGET:.0%})"
        )
        failed = failed or cost > TARGET
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
