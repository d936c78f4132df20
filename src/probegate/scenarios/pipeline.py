"""One ``probegate run``, end to end: the single call the command makes with a RunConfig.

Load every suite and baseline first (every usage error surfaces before the agent is called
once), then load the adapter, run each suite, write the outputs, compare with the baselines,
and turn the results into the exit code (:mod:`probegate.scenarios.gate`).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from probegate import clock
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
from probegate.scenarios.formats import FORMATS
from probegate.scenarios.gate import decide
from probegate.scenarios.loader import Suite, load_suites, select
from probegate.scenarios.models import RunResult
from probegate.scenarios.run_config import RunConfig
from probegate.scenarios.runner import options_for, pinned_timer, run_suite
from probegate.terminal import one_line


def execute_run(config: RunConfig, summary: dict[str, Any]) -> int:
    """Run what ``config`` says and return the exit code; ``summary`` gets the facts
    ``--json`` prints (scenarios, pass rate, files written, ...)."""
    suites = select(load_suites(config.path), config.suite, list(config.tags))
    baselines = [(path, load_baseline(path)) for path in config.baselines]
    check_suites(baselines, [suite.name for suite in suites])
    for suite in suites:
        for warning in suite.warnings:
            print(console.warning_line(warning), file=sys.stderr, flush=True)
    if config.dry_run:
        for line in console.dry_run_lines(suites):
            print(line)
        summary["scenarios"] = sum(len(suite.scenarios) for suite in suites)
        return 0
    runs = _run_suites(config, suites)
    regressions = find_regressions(baselines, runs)
    for name in config.formats:
        output = FORMATS[name]
        for file_name, data in output.render(runs, regressions):
            path = config.output_dir / file_name
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
    decision = decide(runs, regressions, config.fail_under_pass_rate)
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


def _run_suites(config: RunConfig, suites: list[Suite]) -> list[RunResult]:
    """Every suite through the adapter, each scenario's line printed as it ends."""
    spec = _adapter_spec(config.adapter)
    # Under SOURCE_DATE_EPOCH durations are pinned to 0, like scan's, so reruns are identical.
    timer = pinned_timer if clock.pinned() else time.monotonic
    runs: list[RunResult] = []
    with importable_from(Path.cwd()):
        adapter = load_adapter(spec)
        for suite in suites:
            print(console.suite_header(suite), flush=True)
            options = options_for(
                suite,
                timeout=config.timeout,
                retries=config.retries,
                retry_delay=config.retry_delay,
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
    return runs


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
