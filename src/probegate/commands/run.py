"""``probegate run PATH --adapter MODULE:ATTR``: run scenario suites against your agent.

Only wiring: parse and check flags, load every suite and baseline (all usage errors surface
before the agent is called once), load the adapter, run, write the outputs, compare, and turn
the results into the exit code (:mod:`probegate.scenarios.gate`). AgenticAssure's ``run`` flags
(``-a``, ``-o``, ``-s/--suite``, ``-t/--tag``, ``--retry``, ``--dry-run``) are aliases here, so
its users' commands work unchanged (docs/scenarios.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from probegate import clock
from probegate.config import DEFAULT_OUTPUT_DIR
from probegate.errors import ReportError, UsageError
from probegate.files import write_atomic
from probegate.scenarios import console
from probegate.scenarios.adapter import importable_from, load_adapter
from probegate.scenarios.compare import (
    check_suites,
    find_incomparable,
    find_regressions,
    load_baseline,
)
from probegate.scenarios.config_file import configured_adapter
from probegate.scenarios.formats import EXCLUSIVE, FORMATS
from probegate.scenarios.gate import decide
from probegate.scenarios.loader import load_suites, select
from probegate.scenarios.models import RunResult
from probegate.scenarios.runner import DEFAULT_TIMEOUT, options_for, pinned_timer, run_suite
from probegate.terminal import json_text, one_line


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
        help="run scenario suites against your agent",
        description=(
            "Run scenario suites (AgenticAssure 0.4 files, unchanged) through your agent's "
            "adapter, score every scenario and write results_{run_id}.json per suite. Exit 0 "
            "when every scenario passed, 1 when a gate failed (a failed scenario, "
            "--fail-under-pass-rate, a regression against --compare), 2 on bad input. "
            "AgenticAssure's run flags are accepted as aliases."
        ),
    )
    p.add_argument(
        "path",
        type=Path,
        nargs="?",
        default=Path(),
        metavar="PATH",
        help="a suite YAML file or a directory searched recursively (default: .)",
    )
    p.add_argument(
        "-a",
        "--adapter",
        metavar="MODULE:ATTR",
        help="function (input, context) or class with run(input, context); MODULE is imported "
        "from the current directory (default: adapter: in agenticassure.yaml or "
        "agenticassure.toml there)",
    )
    p.add_argument(
        "-o",
        "--output",
        "--format",
        dest="output",
        action="append",
        metavar="FORMAT",
        help=f"{','.join(FORMATS)} (repeatable or a comma list; default json)",
    )
    p.add_argument(
        "--output-dir",
        dest="output_dir",
        type=Path,
        default=Path(DEFAULT_OUTPUT_DIR),
        metavar="DIR",
        help=f"where output files go (default: {DEFAULT_OUTPUT_DIR}, as for scan; "
        "'--output-dir .' writes beside the suites, as AgenticAssure does)",
    )
    p.add_argument(
        "-s",
        "--suite",
        metavar="NAME",
        help="run only the suite of this name",
    )
    p.add_argument(
        "-t",
        "--tag",
        action="append",
        default=[],
        metavar="TAG",
        help="run only scenarios with this tag (repeatable: any of them)",
    )
    p.add_argument(
        "--dry-run",
        dest="dry_run",
        action="store_true",
        help="load and check the suites, list the scenarios, run nothing (no adapter needed)",
    )
    p.add_argument(
        "--timeout",
        type=_non_negative_float,
        default=None,
        metavar="SECONDS",
        help="per scenario attempt, unless the scenario sets timeout_seconds (default: the "
        f"suite's config.default_timeout, else {DEFAULT_TIMEOUT:g}; 0 waits for ever)",
    )
    p.add_argument(
        "--retries",
        "--retry",
        dest="retries",
        type=_non_negative_int,
        default=None,
        metavar="N",
        help="retry a scenario whose adapter raised or timed out, up to N times "
        "(default: the suite's config.retries, else 0)",
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
        help="exit 1 on scenarios that passed in this earlier results file (probegate's or "
        "AgenticAssure's) and fail now (repeatable: one per suite)",
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
    clash = EXCLUSIVE.intersection(chosen)
    if len(clash) > 1:
        raise UsageError(
            f"--output: {' and '.join(sorted(clash))} both write results_{{run_id}}.json; "
            "choose one"
        )
    return chosen or ["json"]


def _adapter_spec(given: str | None) -> str:
    if given is not None:
        return given
    configured = configured_adapter(Path.cwd())
    if configured is None:
        raise UsageError(
            "no adapter: give --adapter MODULE:ATTR (-a), or adapter: in agenticassure.yaml; "
            "--dry-run lists the scenarios without one"
        )
    print(one_line(f"adapter {configured.spec} (from {configured.source.name})", 300), flush=True)
    return configured.spec


def run(args: argparse.Namespace) -> int:
    if not args.json:
        return _run(args, {})
    # Machine output: the human lines go to stderr, one JSON object to stdout at the end.
    summary: dict[str, Any] = {}
    with contextlib.redirect_stdout(sys.stderr):
        code = _run(args, summary)
    summary["exit_code"] = code
    print(json_text(json.dumps(summary, indent=2, sort_keys=True)))
    return code


def _run(args: argparse.Namespace, summary: dict[str, Any]) -> int:
    formats = _formats(args.output)
    suites = select(load_suites(args.path), args.suite, args.tag)
    baselines = [(path, load_baseline(path)) for path in args.compare]
    check_suites(baselines, [suite.name for suite in suites])
    for suite in suites:
        for warning in suite.warnings:
            print(console.warning_line(warning), file=sys.stderr, flush=True)
    if args.dry_run:
        for line in console.dry_run_lines(suites):
            print(line)
        summary["scenarios"] = sum(len(suite.scenarios) for suite in suites)
        return 0
    spec = _adapter_spec(args.adapter)
    # Under SOURCE_DATE_EPOCH durations are pinned to 0, like scan's, so reruns are identical.
    timer = pinned_timer if clock.pinned() else time.monotonic

    runs: list[RunResult] = []
    with importable_from(Path.cwd()):
        adapter = load_adapter(spec)
        for suite in suites:
            print(console.suite_header(suite), flush=True)
            options = options_for(
                suite, timeout=args.timeout, retries=args.retries, retry_delay=args.retry_delay
            )
            result = run_suite(
                suite,
                adapter,
                options,
                timer=timer,
                on_result=lambda r: print(console.scenario_line(r), flush=True),
            )
            stopped = console.fail_fast_line(suite, result)
            if stopped:
                print(stopped)
            print(console.suite_totals(result))
            runs.append(result)

    regressions = find_regressions(baselines, runs)
    for name in formats:
        output = FORMATS[name]
        for file_name, data in output.render(runs, regressions):
            path = args.output_dir / file_name
            write_atomic(path, data, error=ReportError)
            summary.setdefault("files", []).append(str(path))
            print(f"{output.label} written to {path}")
    for regression in regressions:
        print(console.regression_line(regression))
    for item in find_incomparable(baselines, runs):
        print(console.incomparable_line(item))
    note = console.fallback_note(runs)
    if note:
        print(note)
    decision = decide(runs, regressions, args.fail_under_pass_rate)
    total = sum(len(run.scenario_results) for run in runs)
    status = "FAILED: " + "; ".join(decision.reasons) if decision.reasons else "passed"
    summary.update(
        scenarios=total,
        pass_rate=decision.pass_rate,
        passed=not decision.reasons,
        reasons=list(decision.reasons),
        regressions=len(regressions),
    )
    print(f"probegate run: {total} scenarios, pass rate {decision.pass_rate:.1%}, {status}")
    return decision.exit_code
