"""``probegate run PATH --adapter MODULE:ATTR``: run scenario suites against your agent.

Only wiring, as for ``scan``: flags -> one validated :class:`RunConfig`
(scenarios/run_config.py) -> one call, :func:`probegate.scenarios.pipeline.execute_run`, which
returns the exit code. AgenticAssure's ``run`` flags
(``-a``, ``-o``, ``-s/--suite``, ``-t/--tag``, ``--retry``, ``--dry-run``) are aliases here, so
its users' commands work unchanged (docs/scenarios.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from probegate.config import DEFAULT_OUTPUT_DIR
from probegate.scenarios.formats import FORMATS
from probegate.scenarios.pipeline import execute_run
from probegate.scenarios.run_config import RunConfig, parse_formats
from probegate.scenarios.runner import DEFAULT_TIMEOUT
from probegate.terminal import json_text


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


def run_config(args: argparse.Namespace) -> RunConfig:
    """The parsed flags as the run's one validated config."""
    return RunConfig(
        path=args.path,
        adapter=args.adapter,
        formats=parse_formats(args.output),
        output_dir=args.output_dir,
        suite=args.suite,
        tags=tuple(args.tag),
        dry_run=bool(args.dry_run),
        timeout=args.timeout,
        retries=args.retries,
        retry_delay=args.retry_delay,
        fail_under_pass_rate=args.fail_under_pass_rate,
        baselines=tuple(args.compare),
    )


def run(args: argparse.Namespace) -> int:
    config = run_config(args)
    if not args.json:
        return execute_run(config, {})
    # Machine output: the human lines go to stderr, one JSON object to stdout at the end.
    summary: dict[str, Any] = {}
    with contextlib.redirect_stdout(sys.stderr):
        code = execute_run(config, summary)
    summary["exit_code"] = code
    print(json_text(json.dumps(summary, indent=2, sort_keys=True)))
    return code
