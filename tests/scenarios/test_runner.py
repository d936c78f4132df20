"""The runner against real adapters of every shape and every way an agent can fail."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from probegate.canonical import canonical_bytes
from probegate.errors import UsageError
from probegate.scenarios.adapter import load_adapter, split_spec
from probegate.scenarios.loader import Suite
from probegate.scenarios.models import AgentResult, Scenario
from probegate.scenarios.runner import RunOptions, new_run_id, run_scenario, run_suite
from tests.scenarios import agents
from tests.scenarios.helpers import AGENTS

FAST = RunOptions(timeout=5.0, retries=0, retry_delay=0.0)


def scenario(**fields: Any) -> Scenario:
    base = {"name": "s", "input": "where is my order?", "expected_output": "echo"}
    return Scenario.model_validate({**base, **fields})


def run(attr: str, options: RunOptions = FAST, **fields: Any) -> Any:
    return run_scenario(scenario(**fields), load_adapter(f"{AGENTS}:{attr}"), options)


@pytest.fixture
def release_hung() -> Iterator[None]:
    agents.RELEASE.clear()
    yield
    agents.RELEASE.set()


def test_a_function_returning_a_dict() -> None:
    result = run("echo_dict", expected_tools=["lookup_order"])
    assert result.passed and result.error is None and result.retry_count == 0
    assert result.agent_result.output == "echo: where is my order?"
    assert result.agent_result.tool_calls[0].arguments == {"order_id": "A1"}
    assert result.agent_result.token_usage is not None
    assert result.agent_result.token_usage.completion_tokens == 2


def test_a_class_gets_a_fresh_instance_and_a_private_copy_of_the_context() -> None:
    adapter = load_adapter(f"{AGENTS}:EchoAgent")
    s = scenario(context={"lang": "fr"})
    before = agents.EchoAgent.instances
    first = run_scenario(s, adapter, FAST)
    second = run_scenario(s, adapter, FAST)
    assert agents.EchoAgent.instances == before + 2
    # a shared instance would have seen two inputs by the second scenario
    assert first.agent_result.output == second.agent_result.output
    assert first.agent_result.output == "echo: where is my order? (seen 1) fr"
    assert s.context == {"lang": "fr"} and first.scenario.context == {"lang": "fr"}
    assert adapter.model_info == {"name": "echo", "temperature": 0}
    # arbitrary Python values in the result are made JSON-safe, never a crash when writing
    assert first.agent_result.raw_response == {"id": "r-1", "when": [1, 2]}
    canonical_bytes(first.model_dump(mode="json"))


def test_an_adapter_that_raises_is_the_scenarios_error_not_a_crash() -> None:
    result = run("raising", RunOptions(timeout=5.0, retries=2, retry_delay=0.0))
    assert not result.passed and result.scores == [] and result.score == 0.0
    assert result.retry_count == 2
    assert result.error is not None and result.error.startswith("ValueError: upstream said no x")
    assert len(result.error) <= 300 and "\n" not in result.error
    assert result.agent_result == AgentResult()  # empty, never null: seed consumers still work


def test_retries_recover_a_flaky_adapter_and_count() -> None:
    agents.CALLS.clear()
    sleeps: list[float] = []
    result = run_scenario(
        scenario(expected_output="recovered"),
        load_adapter(f"{AGENTS}:flaky"),
        RunOptions(timeout=5.0, retries=3, retry_delay=0.25),
        sleep=sleeps.append,
    )
    assert result.passed and result.error is None and result.retry_count == 2
    assert sleeps == [0.25, 0.5]  # doubling delay between attempts


def test_an_adapter_that_hangs_times_out(release_hung: None) -> None:
    result = run("hanging", RunOptions(timeout=0.2, retries=1, retry_delay=0.0))
    assert not result.passed
    assert result.error == "timed out after 0.2s" and result.retry_count == 1
    # the abandoned calls are still waiting, in daemon threads that cannot keep probegate alive
    hung = [t for t in threading.enumerate() if t.name == "probegate-user-code" and t.is_alive()]
    assert hung and all(t.daemon for t in hung)


@pytest.mark.parametrize(
    ("attr", "error"),
    [
        ("returns_none", "adapter returned None instead of an AgentResult"),
        (
            "bad_tool_calls",
            "adapter returned an invalid AgentResult: tool_calls[0].name: Field required",
        ),
        ("exits", "SystemExit: 3"),
    ],
)
def test_adapter_misbehaviour_becomes_an_error(attr: str, error: str) -> None:
    result = run(attr)
    assert (result.passed, result.error) == (False, error)


def test_a_plain_string_is_the_output() -> None:
    assert run("plain_string").agent_result.output == "echo: where is my order?"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nomodule_xyz:run", "--adapter: cannot import 'nomodule_xyz': ModuleNotFoundError"),
        (f"{AGENTS}:missing", f"--adapter: module '{AGENTS}' has no attribute 'missing'"),
        (f"{AGENTS}:one_argument", "the function must accept two arguments (input, context)"),
        (f"{AGENTS}:NeedsConfig", "the class must be constructible with no arguments"),
        (f"{AGENTS}:NoRun", "the class has no run(input, context) method"),
        (f"{AGENTS}:NOT_CALLABLE", "not a function (input, context) or a class"),
        (f"{AGENTS}:BadModelInfo", "model_info must be a dict, got str"),
        ("justaname", "--adapter takes MODULE:ATTR"),
    ],
)
def test_unusable_adapters_are_usage_errors(spec: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        load_adapter(spec)
    assert message in info.value.message


def test_the_seeds_dotted_form_is_accepted() -> None:
    assert split_spec("my_agent.MyAgent") == ("my_agent", "MyAgent")
    assert split_spec("pkg.mod:Agent") == ("pkg.mod", "Agent")


def test_suite_scores_are_means_and_rates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    suite = Suite(
        name="mixed",
        path=Path("mixed.yml"),
        scenarios=(
            scenario(
                name="full", scorers=["passfail", "regex"], metadata={"regex_pattern": "^echo"}
            ),  # 1.0, 1.0
            scenario(name="half", scorers=["passfail", "exact"]),  # 1.0, 0.0
            scenario(name="fails", expected_output="nope", scorers=["exact"]),  # 0.0
        ),
    )
    seen: list[str] = []
    run_result = run_suite(
        suite,
        load_adapter(f"{AGENTS}:echo_dict"),
        FAST,
        on_result=lambda r: seen.append(r.scenario.name),
    )
    assert seen == ["full", "half", "fails"]
    assert [r.score for r in run_result.scenario_results] == [1.0, 0.5, 0.0]
    assert run_result.aggregate_score == 0.5 and run_result.pass_rate == 0.3333
    assert run_result.suite_name == "mixed" and run_result.model_info is None


def test_run_id_is_random_unless_the_clock_is_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    suite = Suite(name="x", path=Path("x.yml"), scenarios=(scenario(),))
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    assert new_run_id(suite) != new_run_id(suite)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    pinned = new_run_id(suite)
    assert pinned == new_run_id(suite) and pinned[14] == "4"  # still a UUID4
    other = Suite(name="x", path=Path("x.yml"), scenarios=(scenario(input="changed"),))
    assert new_run_id(other) != pinned
