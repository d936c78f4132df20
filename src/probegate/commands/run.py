"""``probegate run PATH --adapter MODULE:ATTR``: run scenario suites (seed 002).

Only wiring: parse and check flags, load every suite and baseline (all usage errors surface
before the agent is called once), load the adapter, run, write the outputs, compare, and turn
the results into the exit code (:mod:`probegate.scenarios.gate`).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from probegate import clock
from probegate.errors import ReportError, UsageError
from probegate.scenarios import console
from probegate.scenarios.adapter import importable_from, load_adapter
from probegate.scenarios.compare import check_suites, find_regressions, load_baseline
from probegate.scenarios.gate import decide
from probegate.scenarios.loader import load_suites
from probegate.scenarios.models import RunResult
from probegate.scenarios.outputs import FORMATS
from probegate.scenarios.runner import DEFAULT_TIMEOUT, RunOptions, pinned_timer, run_suite


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0.0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run scenario suites (seed 002)",
        description=(
            "Run scenario suites through your agent's adapter, score every scenario and write "
            "results_{run_id}.json per suite. Exit 0 when every scenario passed, 1 when a gate "
            "failed (a failed scenario, --fail-under-pass-rate, a regression against "
            "--compare), 2 on bad input."
        ),
    )
    p.add_argument(
        "path", type=Path, metavar="PATH", help="a suite YAML file or a directory of them"
    )
    p.add_argument(
        "--adapter",
        required=True,
        metavar="MODULE:ATTR",
        help="function (input, context) or class with run(input, context); "
        "MODULE is imported from the current directory",
    )
    p.add_argument(
        "--output",
        action="append",
        metavar="FORMAT",
        help=f"{','.join(FORMATS)} (repeatable or a comma list; default json)",
    )
    p.add_argument(
        "--output-dir",
        dest="output_dir",
        type=Path,
        default=Path(),
        metavar="DIR",
        help="where output files go (default: the current directory)",
    )
    p.add_argument(
        "--timeout",
        type=_non_negative_float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"per scenario attempt (default {DEFAULT_TIMEOUT:g}; 0 waits for ever)",
    )
    p.add_argument(
        "--retries",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help="retry a scenario whose adapter raised or timed out, up to N times (default 0)",
    )
    p.add_argument(
        "--retry-delay",
        dest="retry_delay",
        type=_non_negative_float,
        default=0.5,
        metavar="SECONDS",
        help="wait before the first retry, doubling for each next one (default 0.5)",
    )
    p.add_argument(
        "--fail-under-pass-rate",
        dest="fail_under_pass_rate",
        type=_fraction,
        metavar="X",
        help="exit 1 only when the pass rate over all scenarios is below X (0..1) "
        "instead of on any failed scenario",
    )
    p.add_argument(
        "--compare",
        action="append",
        type=Path,
        default=[],
        metavar="BASELINE_RESULTS.json",
        help="exit 1 on scenarios that passed in this earlier results file and fail now "
        "(repeatable: one per suite)",
    )


def _formats(values: list[str] | None) -> list[str]:
    chosen: list[str] = []
    for value in values or ["json"]:
        for name in (part.strip() for part in value.split(",")):
            if not name:
                continue
            if name not in FORMATS:
                raise UsageError(
                    f"--output: unknown format {name!r} (choose from {', '.join(FORMATS)})"
                )
            if name not in chosen:
                chosen.append(name)
    return chosen or ["json"]


def run(args: argparse.Namespace) -> int:
    formats = _formats(args.output)
    suites = load_suites(args.path)
    baselines = [(path, load_baseline(path)) for path in args.compare]
    check_suites(baselines, [suite.name for suite in suites])
    options = RunOptions(
        timeout=args.timeout or None, retries=args.retries, retry_delay=args.retry_delay
    )
    # Under SOURCE_DATE_EPOCH durations are pinned to 0, like scan's, so reruns are identical.
    timer = pinned_timer if clock.source_date_epoch() is not None else time.monotonic

    runs: list[RunResult] = []
    with importable_from(Path.cwd()):
        adapter = load_adapter(args.adapter)
        for suite in suites:
            print(console.suite_header(suite), flush=True)
            result = run_suite(
                suite,
                adapter,
                options,
                timer=timer,
                on_result=lambda r: print(console.scenario_line(r), flush=True),
            )
            print(console.suite_totals(result))
            runs.append(result)

    regressions = find_regressions(baselines, runs)
    for name in formats:
        output = FORMATS[name]
        for file_name, data in output.render(runs, regressions):
            path = args.output_dir / file_name
            _write(path, data)
            print(f"{output.label} written to {path}")
    for regression in regressions:
        print(console.regression_line(regression))
    decision = decide(runs, regressions, args.fail_under_pass_rate)
    total = sum(len(run.scenario_results) for run in runs)
    verdict = "FAILED: " + "; ".join(decision.reasons) if decision.reasons else "passed"
    print(f"probegate run: {total} scenarios, pass rate {decision.pass_rate:.1%}, {verdict}")
    return decision.exit_code


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        raise ReportError(f"{path}: cannot write: {exc.strerror or exc}") from None
