"""Run a suite: each scenario through the adapter, then its scorers; one RunResult per suite.

Scenarios run one after another, each attempt in a worker thread with a timeout. Retries are
for failures to *get* a result (an exception or a timeout: flaky networks, rate limits), with a
doubling delay between attempts; an agent that answers wrongly is scored, not retried, and an
adapter that returns something that is not an AgentResult has a bug that retrying cannot fix.
A suite with ``config.fail_fast`` stops after its first failed scenario, as AgenticAssure's
does; the scenarios after it are not run and not in the results.

The clock is injected (``timer``) so that under ``SOURCE_DATE_EPOCH`` durations are pinned to
zero and the same run gives the same bytes, as ``probegate scan`` does.
"""

from __future__ import annotations

import copy
import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from probegate import clock
from probegate.canonical import canonical_bytes
from probegate.inprocess import bounded, call_with_timeout, describe_exception
from probegate.scenarios.adapter import Adapter
from probegate.scenarios.loader import Suite
from probegate.scenarios.models import (
    AgentResult,
    RunResult,
    Scenario,
    ScenarioRunResult,
    ScoreResult,
)
from probegate.scenarios.scorers import SCORERS, ScorerError
from probegate.validation import describe

DEFAULT_TIMEOUT = 60.0
MAX_RETRY_DELAY = 30.0

Timer = Callable[[], float]


@dataclass(frozen=True)
class RunOptions:
    """How scenarios are attempted. ``timeout=None`` waits for ever.

    ``timeout`` is the default of every scenario; a scenario's own ``timeout_seconds`` wins.
    """

    timeout: float | None = DEFAULT_TIMEOUT
    retries: int = 0
    retry_delay: float = 0.5
    fail_fast: bool = False


def options_for(
    suite: Suite, *, timeout: float | None, retries: int | None, retry_delay: float
) -> RunOptions:
    """The options of one suite: a flag given on the command line, else ``suite.config``.

    ``timeout`` and ``retries`` are ``None`` when the flag was not given. A timeout of 0
    (flag or ``default_timeout``) waits for ever. This is the precedence AgenticAssure
    documents (command line, then suite config, then defaults).
    """
    config = suite.config
    seconds = timeout if timeout is not None else config.default_timeout
    if seconds is None:
        seconds = DEFAULT_TIMEOUT
    if retries is None:
        retries = config.retries or 0
    return RunOptions(
        timeout=seconds or None,
        retries=retries,
        retry_delay=retry_delay,
        fail_fast=config.fail_fast,
    )


def pinned_timer() -> float:
    """The timer used under SOURCE_DATE_EPOCH: every duration is 0."""
    return 0.0


def new_run_id(suite: Suite) -> str:
    """A random UUID4; derived from the suite when SOURCE_DATE_EPOCH pins the clock.

    The derived id keeps the UUID4 form (version and variant bits set) so consumers that
    validate it still accept it, and it changes whenever the suite does.
    """
    epoch = clock.source_date_epoch()
    if epoch is None:
        return str(uuid.uuid4())
    material = canonical_bytes(
        {
            "epoch": epoch,
            "suite": suite.name,
            "scenarios": [s.model_dump(mode="json") for s in suite.scenarios],
        }
    )
    return str(uuid.UUID(bytes=hashlib.sha256(material).digest()[:16], version=4))


def run_suite(
    suite: Suite,
    adapter: Adapter,
    options: RunOptions,
    *,
    timer: Timer = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_result: Callable[[ScenarioRunResult], None] | None = None,
) -> RunResult:
    """Run every scenario of ``suite``; ``on_result`` sees each result as soon as it exists."""
    started_at = clock.now()
    run_id = new_run_id(suite)
    start = timer()
    results: list[ScenarioRunResult] = []
    for scenario in suite.scenarios:
        result = run_scenario(scenario, adapter, options, timer=timer, sleep=sleep)
        results.append(result)
        if on_result is not None:
            on_result(result)
        if options.fail_fast and not result.passed:
            break
    total = len(results)
    return RunResult(
        run_id=run_id,
        timestamp=started_at.isoformat(timespec="seconds"),
        suite_name=suite.name,
        scenario_results=results,
        aggregate_score=round(sum(r.score for r in results) / total, 4) if total else 0.0,
        pass_rate=round(sum(r.passed for r in results) / total, 4) if total else 0.0,
        total_duration_ms=_ms(timer() - start),
        model_info=adapter.model_info,
    )


def run_scenario(
    scenario: Scenario,
    adapter: Adapter,
    options: RunOptions,
    *,
    timer: Timer = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> ScenarioRunResult:
    """Attempt the scenario up to ``1 + retries`` times, then score the result."""
    start = timer()

    def attempt() -> Any:
        # A fresh copy each time: an agent that edits its context must not change the
        # scenario recorded in the report, nor the next attempt's input.
        context: dict[str, Any] = copy.deepcopy(scenario.context or {})
        return adapter.new_agent()(scenario.input, context)

    timeout = scenario.timeout_seconds or options.timeout
    retries = 0
    outcome = call_with_timeout(attempt, timeout)
    while outcome.error is not None and retries < options.retries:
        retries += 1
        sleep(min(options.retry_delay * 2 ** (retries - 1), MAX_RETRY_DELAY))
        outcome = call_with_timeout(attempt, timeout)

    error = outcome.error
    agent_result = AgentResult()
    scores: list[ScoreResult] = []
    if error is None:
        agent_result, error = to_agent_result(outcome.value)
    if error is None:
        try:
            scores = [SCORERS[name].score(scenario, agent_result) for name in scenario.scorers]
        except ScorerError as exc:
            error = str(exc)
            scores = []
    if error is not None:
        return ScenarioRunResult(
            scenario=scenario,
            agent_result=agent_result,
            scores=[],
            passed=False,
            duration_ms=_ms(timer() - start),
            error=error,
            retry_count=retries,
        )
    return ScenarioRunResult(
        scenario=scenario,
        agent_result=agent_result,
        scores=scores,
        # No scorer, no verdict to pass on: AgenticAssure fails such a scenario, and so do we.
        passed=bool(scores) and all(s.passed for s in scores),
        duration_ms=_ms(timer() - start),
        error=None,
        retry_count=retries,
    )


def to_agent_result(value: Any) -> tuple[AgentResult, str | None]:
    """Validate what the adapter returned: an AgentResult-like object, a dict, or a string."""
    if isinstance(value, AgentResult):
        return value, None
    if isinstance(value, str):
        return AgentResult(output=value), None
    if value is None:
        return AgentResult(), "adapter returned None instead of an AgentResult"
    try:
        if isinstance(value, BaseModel):  # another library's AgentResult: read its fields
            value = value.model_dump()
        return AgentResult.model_validate(value, from_attributes=True), None
    except ValidationError as exc:
        return AgentResult(), bounded(f"adapter returned an invalid AgentResult: {describe(exc)}")
    except Exception as exc:  # a property of the agent's object raised while being read
        return AgentResult(), bounded(
            f"adapter returned an unreadable AgentResult: {describe_exception(exc)}"
        )


def _ms(seconds: float) -> float:
    return round(max(seconds, 0.0) * 1000, 3)
