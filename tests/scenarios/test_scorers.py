"""Every scorer on labelled examples: what should pass passes, what should fail fails."""

from __future__ import annotations

from typing import Any

import pytest

from probegate.scenarios.models import AgentResult, Scenario
from probegate.scenarios.scorers import SCORERS, ScorerError, similarity, uses_fallback


def scenario(**fields: Any) -> Scenario:
    return Scenario.model_validate({"name": "s", "input": "q", **fields})


def result(output: str = "", *calls: tuple[str, dict[str, Any]]) -> AgentResult:
    return AgentResult.model_validate(
        {"output": output, "tool_calls": [{"name": n, "arguments": a} for n, a in calls]}
    )


WEATHER = ("get_weather", {"location": "San Francisco", "units": "F"})

SEARCH_PARIS = ("search", {"q": "x", "filters": {"city": "Paris", "n": 5}})

# (label, scorer, scenario fields, agent result, expected passed, expected score)
# passfail, exact and regex follow AgenticAssure 0.4: test_agenticassure.py runs the same
# scenarios through AgenticAssure itself and checks both tools agree.
CASES: list[tuple[str, str, dict[str, Any], AgentResult, bool, float]] = [
    (
        "substring, any case",
        "passfail",
        {"expected_output": "SUNNY"},
        result("It is sunny."),
        True,
        1.0,
    ),
    (
        "substring missing",
        "passfail",
        {"expected_output": "rain"},
        result("It is sunny."),
        False,
        0.0,
    ),
    ("nothing expected, an answer", "passfail", {}, result("hello"), True, 1.0),
    ("nothing expected, a blank answer", "passfail", {}, result(" \n"), False, 0.0),
    (
        "tool called",
        "passfail",
        {"expected_tools": ["get_weather"]},
        result("Sunny.", WEATHER),
        True,
        1.0,
    ),
    (
        "tool called but no answer",
        "passfail",
        {"expected_tools": ["get_weather"]},
        result("", WEATHER),
        False,
        0.0,
    ),
    (
        "one of two tools missing: all or nothing",
        "passfail",
        {"expected_tools": ["get_weather", "alert"]},
        result("ok", WEATHER),
        False,
        0.0,
    ),
    (
        "expected arguments present, others ignored",
        "passfail",
        {"expected_tool_args": {"get_weather": {"location": "San Francisco"}}},
        result("ok", WEATHER),
        True,
        1.0,
    ),
    (
        "argument value differs",
        "passfail",
        {"expected_tool_args": {"get_weather": {"location": "Paris"}}},
        result("ok", WEATHER),
        False,
        0.0,
    ),
    (
        "arguments expected, tool never called",
        "passfail",
        {"expected_tool_args": {"get_weather": {"location": "Paris"}}},
        result("no tools"),
        False,
        0.0,
    ),
    (
        "only the first call of a tool is compared",
        "passfail",
        {"expected_tool_args": {"get_weather": {"location": "Paris"}}},
        result("ok", WEATHER, ("get_weather", {"location": "Paris"})),
        False,
        0.0,
    ),
    (
        "a nested value must be equal, not a subset",
        "passfail",
        {"expected_tool_args": {"search": {"filters": {"city": "Paris"}}}},
        result("ok", SEARCH_PARIS),
        False,
        0.0,
    ),
    (
        "a nested value equal",
        "passfail",
        {"expected_tool_args": {"search": {"filters": {"city": "Paris", "n": 5}}}},
        result("ok", SEARCH_PARIS),
        True,
        1.0,
    ),
    (
        "output and tools, one fails",
        "passfail",
        {"expected_output": "sunny", "expected_tools": ["get_weather"]},
        result("It is sunny."),
        False,
        0.0,
    ),
    (
        "exact ignores surrounding space",
        "exact",
        {"expected_output": "42"},
        result(" 42\n"),
        True,
        1.0,
    ),
    (
        "exact ignores case by default",
        "exact",
        {"expected_output": "Yes"},
        result("yes"),
        True,
        1.0,
    ),
    (
        "exact_normalize false: case counts",
        "exact",
        {"expected_output": "Yes", "metadata": {"exact_normalize": False}},
        result("yes"),
        False,
        0.0,
    ),
    (
        "exact_normalize false: space counts",
        "exact",
        {"expected_output": "42", "metadata": {"exact_normalize": False}},
        result("42\n"),
        False,
        0.0,
    ),
    ("exact is not substring", "exact", {"expected_output": "42"}, result("It is 42"), False, 0.0),
    ("exact with nothing expected", "exact", {}, result("42"), False, 0.0),
    (
        "regex matches",
        "regex",
        {"metadata": {"regex_pattern": r"\border #\d{4}\b"}},
        result("Your order #1234."),
        True,
        1.0,
    ),
    (
        "regex does not match",
        "regex",
        {"metadata": {"regex_pattern": r"^\d+$"}},
        result("forty-two"),
        False,
        0.0,
    ),
    (
        "regex inline flag",
        "regex",
        {"metadata": {"regex_pattern": "(?i)REFUND"}},
        result("a refund"),
        True,
        1.0,
    ),
    (
        "expected_output is not a pattern",
        "regex",
        {"expected_output": "refund"},
        result("a refund"),
        False,
        0.0,
    ),
    (
        "an invalid pattern fails",
        "regex",
        {"metadata": {"regex_pattern": "("}},
        result("("),
        False,
        0.0,
    ),
    (
        "tools in order",
        "tools",
        {"expected_tools": ["a", "b"]},
        result("", ("a", {}), ("b", {})),
        True,
        1.0,
    ),
    (
        "tools out of order",
        "tools",
        {"expected_tools": ["a", "b"]},
        result("", ("b", {}), ("a", {})),
        False,
        0.5,
    ),
    (
        "an extra tool call",
        "tools",
        {"expected_tools": ["a"]},
        result("", ("a", {}), ("c", {})),
        False,
        0.5,
    ),
    ("no tools expected, none called", "tools", {"expected_tools": []}, result("hi"), True, 1.0),
    (
        "no tools expected, one called",
        "tools",
        {"expected_tools": []},
        result("", ("a", {})),
        False,
        0.0,
    ),
    (
        "similar wording",
        "similarity",
        {"expected_output": "The order has shipped today"},
        result("the order has shipped today!"),
        True,
        1.0,
    ),
    (
        "different answer",
        "similarity",
        {"expected_output": "The order has shipped"},
        result("I cannot find that order"),
        False,
        0.2222,
    ),
    (
        "threshold from metadata",
        "similarity",
        {"expected_output": "a b c d", "metadata": {"similarity_threshold": 0.5}},
        result("a b x y"),
        True,
        0.5,
    ),
    (
        "default threshold 0.7",
        "similarity",
        {"expected_output": "a b c d"},
        result("a b x y"),
        False,
        0.5,
    ),
]

# Scenarios that load but can never pass: the scorer says why at load time.
NEVER_PASS = {
    "exact with nothing expected",
    "expected_output is not a pattern",
    "an invalid pattern fails",
}


@pytest.mark.parametrize(
    ("label", "scorer", "fields", "agent", "passed", "score"),
    CASES,
    ids=[case[0] for case in CASES],
)
def test_labelled_examples(
    label: str,
    scorer: str,
    fields: dict[str, Any],
    agent: AgentResult,
    passed: bool,
    score: float,
) -> None:
    s = scenario(scorers=[scorer], **fields)
    assert bool(SCORERS[scorer].problems(s)) == (label in NEVER_PASS)
    judged = SCORERS[scorer].score(s, agent)
    assert (judged.passed, judged.score) == (passed, score)
    assert judged.scenario_id == "s" and judged.scorer_name == scorer
    assert judged.explanation.strip()


def test_every_scorer_has_a_passing_and_a_failing_example() -> None:
    labelled = {(case[1], case[4]) for case in CASES}
    assert labelled == {(name, ok) for name in SCORERS for ok in (True, False)}


def test_passfail_explains_each_check_and_a_failure_names_what_failed() -> None:
    s = scenario(expected_output="sunny", expected_tools=["get_weather", "alert"])
    judged = SCORERS["passfail"].score(s, result("It is sunny.", WEATHER))
    assert judged.explanation == "tools not called: alert"
    assert judged.details == {
        "checks": [
            {"check": "the agent answered", "passed": True},
            {"check": "tools not called: alert", "passed": False},
            {"check": "output contains 'sunny'", "passed": True},
        ]
    }
    ok = SCORERS["passfail"].score(scenario(expected_tools=["get_weather"]), result("x", WEATHER))
    assert ok.explanation == "the agent answered; every expected tool was called"


def test_passfail_tool_arguments_that_are_not_a_mapping_error_once_the_tool_is_called() -> None:
    s = scenario(expected_tool_args={"get_weather": "San Francisco"})
    assert SCORERS["passfail"].problems(s) == [
        ("expected_tool_args.get_weather", "must map argument names to values, got 'San Francisco'")
    ]
    assert not SCORERS["passfail"].score(s, result("no call")).passed
    with pytest.raises(ScorerError, match=r"expected_tool_args\.get_weather must map"):
        SCORERS["passfail"].score(s, result("ok", WEATHER))


def test_the_similarity_fallback_says_so_in_every_result() -> None:
    judged = SCORERS["similarity"].score(scenario(expected_output="a b"), result("a b"))
    assert "sentence embeddings" in judged.explanation and "token-overlap" in judged.explanation
    assert judged.details == {"method": "token_overlap", "ratio": 1.0, "threshold": 0.7}
    assert uses_fallback(judged)


def test_tools_explanation_shows_both_sequences() -> None:
    judged = SCORERS["tools"].score(
        scenario(expected_tools=["a", "b"]), result("", ("b", {}), ("a", {}))
    )
    assert judged.explanation == "expected tools [a, b], got [b, a]"


def test_similarity_is_symmetric_and_bounded() -> None:
    assert similarity("a a b", "a b b") == similarity("a b b", "a a b") == pytest.approx(2 / 3)
    assert similarity("", "") == 1.0 and similarity("x", "") == 0.0
