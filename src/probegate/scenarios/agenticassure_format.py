"""``--output agenticassure``: the results file exactly as AgenticAssure 0.4 writes it.

probegate's own ``json`` results (docs/scenarios.md) have AgenticAssure's fields plus what
probegate knows (a scenario's ``context``, ``null`` for a timeout nobody set). AgenticAssure's
reader is its pydantic ``RunResult``, which is stricter in a few places; this renderer maps a
probegate RunResult onto that shape so the file round-trips through AgenticAssure's own models
unchanged (``tests/scenarios/test_agenticassure.py`` checks exactly that):

- every scenario gets the ``id`` AgenticAssure gives it (a UUID4), and every score's
  ``scenario_id`` is that id, not the scenario's name;
- ``timeout_seconds`` is the scenario's own, or AgenticAssure's default of 30 when the suite
  file set none (the field describes the suite file, not the timeout probegate applied);
- ``context``, probegate's addition, is left out: AgenticAssure's scenarios have none;
- ``reasoning_trace`` entries are strings; ``timestamp`` is written the way AgenticAssure's
  pydantic models write a UTC time (``...Z``).

Pure: ids derive from the run id, so under SOURCE_DATE_EPOCH the bytes are the same each run.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime
from typing import Any

from probegate.scenarios.models import AgentResult, RunResult, Scenario, ScenarioRunResult

AGENTICASSURE_DEFAULT_TIMEOUT = 30.0


def scenario_id(run_id: str, index: int, name: str) -> str:
    """A UUID4-form id for one scenario of one run, stable for the same run id."""
    material = f"{run_id}\0{index}\0{name}".encode()
    return str(uuid.UUID(bytes=hashlib.sha256(material).digest()[:16], version=4))


def to_agenticassure(run: RunResult) -> dict[str, Any]:
    """The RunResult as AgenticAssure's ``RunResult.model_dump(mode="json")`` would be."""
    return {
        "run_id": run.run_id,
        "timestamp": _timestamp(run.timestamp),
        "suite_name": run.suite_name,
        "scenario_results": [
            _scenario_result(scenario_id(run.run_id, index, result.scenario.name), result)
            for index, result in enumerate(run.scenario_results)
        ],
        "aggregate_score": run.aggregate_score,
        "pass_rate": run.pass_rate,
        "total_duration_ms": run.total_duration_ms,
        "model_info": run.model_info,
    }


def _timestamp(text: str) -> str:
    moment = datetime.fromisoformat(text).astimezone(UTC)
    return moment.isoformat().replace("+00:00", "Z")


def _scenario_result(sid: str, result: ScenarioRunResult) -> dict[str, Any]:
    return {
        "scenario": _scenario(sid, result.scenario),
        "agent_result": _agent_result(result.agent_result),
        "scores": [
            {**score.model_dump(mode="json"), "scenario_id": sid} for score in result.scores
        ],
        "passed": result.passed,
        "duration_ms": result.duration_ms,
        "error": result.error,
        "retry_count": result.retry_count,
    }


def _scenario(sid: str, scenario: Scenario) -> dict[str, Any]:
    timeout = scenario.timeout_seconds
    return {
        "id": sid,
        "name": scenario.name,
        "description": scenario.description,
        "input": scenario.input,
        "expected_output": scenario.expected_output,
        "expected_tools": scenario.expected_tools,
        "expected_tool_args": scenario.expected_tool_args,
        "tags": scenario.tags,
        "metadata": scenario.metadata,
        "scorers": scenario.scorers,
        "timeout_seconds": float(AGENTICASSURE_DEFAULT_TIMEOUT if timeout is None else timeout),
    }


def _agent_result(result: AgentResult) -> dict[str, Any]:
    data = result.model_dump(mode="json")
    if result.reasoning_trace is not None:
        data["reasoning_trace"] = [
            step if isinstance(step, str) else json.dumps(step, sort_keys=True)
            for step in data["reasoning_trace"]
        ]
    return data
