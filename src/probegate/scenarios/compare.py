"""Comparing runs (docs/scenarios.md): a regression is a scenario that passed and now fails.

The baseline is a ``results_{run_id}.json`` from an earlier run, written by probegate or by
AgenticAssure. Only the fields the comparison needs are read (suite name, scenario names,
``passed``, each score's scorer and method), so either tool's file works. Suites are matched by
``suite_name`` and scenarios by ``scenario.name``; a scenario that is new, or gone, is not a
regression.

Like is compared with like: when a scenario now fails only on ``similarity`` scored by
probegate's offline fallback, while the baseline's ``similarity`` came from AgenticAssure's
embeddings, the two verdicts measured different things. That scenario is listed as not
comparable, with the reason, and does not count as a regression.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from probegate.errors import UsageError
from probegate.scenarios.models import RunResult, ScenarioRunResult
from probegate.scenarios.scorers import SIMILARITY_FALLBACK, SimilarityScorer, uses_fallback
from probegate.validation import describe

SIMILARITY = SimilarityScorer.name


class _Named(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str


class _BaselineScore(BaseModel):
    model_config = ConfigDict(extra="ignore")

    scorer_name: str
    passed: bool
    details: dict[str, Any] | None = None


class _BaselineScenarioResult(BaseModel):
    model_config = ConfigDict(extra="ignore")

    scenario: _Named
    passed: bool
    scores: list[_BaselineScore] = Field(default_factory=list)


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


@dataclass(frozen=True)
class Incomparable:
    """A scenario that passed in the baseline and fails now, on a check measured differently."""

    suite_name: str
    scenario: str
    baseline: Path
    reason: str


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
        problem = describe(exc, data=data)
        raise UsageError(f"--compare {path}: not a results file: {problem}") from None


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
    return [change for change in _changes(baselines, runs) if isinstance(change, Regression)]


def find_incomparable(
    baselines: list[tuple[Path, BaselineRun]], runs: list[RunResult]
) -> list[Incomparable]:
    """Scenarios that would be regressions but were judged differently in the baseline."""
    return [change for change in _changes(baselines, runs) if isinstance(change, Incomparable)]


def _changes(
    baselines: list[tuple[Path, BaselineRun]], runs: list[RunResult]
) -> Iterator[Regression | Incomparable]:
    by_suite = {run.suite_name: run for run in runs}
    for path, baseline in baselines:
        run = by_suite.get(baseline.suite_name)
        if run is None:  # check_suites refused this before the run
            continue
        before = {r.scenario.name: r for r in baseline.scenario_results}
        for result in run.scenario_results:
            old = before.get(result.scenario.name)
            if old is None or not old.passed or result.passed:
                continue
            reason = _measured_differently(old, result)
            if reason is None:
                yield Regression(run.suite_name, result.scenario.name, path)
            else:
                yield Incomparable(run.suite_name, result.scenario.name, path, reason)


def _measured_differently(old: _BaselineScenarioResult, new: ScenarioRunResult) -> str | None:
    """Why a pass-then-fail is not a like-for-like comparison, or None when it is one."""
    if new.error is not None or not new.scores:
        return None
    failed = [s for s in new.scores if not s.passed]
    if not failed or not all(uses_fallback(s) for s in failed):
        return None
    embedded = [
        s
        for s in old.scores
        if s.scorer_name == SIMILARITY and (s.details or {}).get("method") != SIMILARITY_FALLBACK
    ]
    if not embedded:
        return None
    return (
        "similarity: the baseline used AgenticAssure's sentence embeddings, this run the "
        "offline token-overlap fallback"
    )
