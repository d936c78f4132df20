"""Comparison between runs (seed 002): a regression is a scenario that passed and now fails.

The baseline is a ``results_{run_id}.json`` from an earlier run. Only the fields the comparison
needs are read (suite name, scenario names, ``passed``), so a results file written by an older
probegate, or by another tool that follows the seed, still works as a baseline. Suites are
matched by ``suite_name`` and scenarios by ``scenario.name``; a scenario that is new, or gone,
is not a regression.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from probegate.errors import UsageError
from probegate.scenarios.models import RunResult


class _Named(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str


class _BaselineScenarioResult(BaseModel):
    model_config = ConfigDict(extra="ignore")

    scenario: _Named
    passed: bool


class BaselineRun(BaseModel):
    """The part of a stored RunResult a comparison reads."""

    model_config = ConfigDict(extra="ignore")

    suite_name: str
    scenario_results: list[_BaselineScenarioResult]


@dataclass(frozen=True)
class Regression:
    """A scenario that passed in the baseline and fails in this run."""

    suite_name: str
    scenario: str
    baseline: Path


def load_baseline(path: Path) -> BaselineRun:
    """Read a baseline results file, or raise one usage-error line naming file and field."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"--compare {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--compare {path}: cannot read: {exc}") from None
    except ValueError as exc:
        raise UsageError(f"--compare {path}: not JSON: {exc}") from None
    try:
        return BaselineRun.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise UsageError(f"--compare {path}: not a results file: {where}: {first['msg']}") from None


def check_suites(baselines: list[tuple[Path, BaselineRun]], suite_names: list[str]) -> None:
    """Refuse, before anything runs, a baseline whose suite is not part of this run."""
    for path, baseline in baselines:
        if baseline.suite_name not in suite_names:
            names = ", ".join(sorted(suite_names)) or "none"
            raise UsageError(
                f"--compare {path}: suite {baseline.suite_name!r} is not in this run "
                f"(suites: {names})"
            )


def find_regressions(
    baselines: list[tuple[Path, BaselineRun]], runs: list[RunResult]
) -> list[Regression]:
    """Scenarios passing in a baseline and failing now, in the current run's order."""
    by_suite = {run.suite_name: run for run in runs}
    found: list[Regression] = []
    for path, baseline in baselines:
        run = by_suite.get(baseline.suite_name)
        if run is None:  # check_suites refused this before the run
            continue
        passed_before = {r.scenario.name: r.passed for r in baseline.scenario_results}
        found.extend(
            Regression(run.suite_name, result.scenario.name, path)
            for result in run.scenario_results
            if passed_before.get(result.scenario.name) and not result.passed
        )
    return found
