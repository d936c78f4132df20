"""Every scorer on labelled examples: what should pass passes, what should fail fails."""

from __future__ import annotations

from typing import Any

import pytest

from probegate.scenarios.models import AgentResult, Scenario
from probegate.scenarios.scorers import SCORERS, similarity


def scenario(**fields: Any) -> Scenario:
    return Scenario.model_validate({"name": "s", "input": "q", **fields})


def result(output: str = "", *calls: tuple[str, dict[str, Any]]) -> AgentResult:
    return AgentResult.model_validate(
        {"output": output, "tool_calls": [{"name": n, "arguments": a} for n, a in calls]}
    )


WEATHER = ("get_weather", {"location": "San Francisco", "units": "F"})

# (label, scorer, scenario fields, agent result, expected passed, expected score)
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
    (
        "tool called",
        "passfail",
        {"expected_tools": ["get_weather"]},
        result("", WEATHER),
        True,
        1.0,
    ),
    (
        "one of two tools missing",
        "passfail",
        {"expected_tools": ["get_weather", "alert"]},
        result("", WEATHER),
        False,
        0.5,
    ),
    (
        "argument subset matches",
        "passfail",
        {"expected_tool_args": {"get_weather": {"location": "San Francisco"}}},
        result("", WEATHER),
        True,
        1.0,
    ),
    (
        "argument value differs",
        "passfail",
        {"expected_tool_args": {"get_weather": {"location": "Paris"}}},
        result("", WEATHER),
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
        "nested argument subset",
        "passfail",
        {"expected_tool_args": {"search": {"filters": {"city": "Paris"}}}},
        result("", ("search", {"q": "x", "filters": {"city": "Paris", "n": 5}})),
        True,
        1.0,
    ),
    (
        "nested argument missing key",
        "passfail",
        {"expected_tool_args": {"search": {"filters": {"city": "Paris"}}}},
        result("", ("search", {"q": "x", "filters": {"n": 5}})),
        False,
        0.0,
    ),
    (
        "output and tools, one fails",
        "passfail",
        {"expected_output": "sunny", "expected_tools": ["get_weather"]},
        result("It is sunny."),
        False,
        0.5,
    ),
    (
        "exact ignores surrounding space",
        "exact",
        {"expected_output": "42"},
        result(" 42\n"),
        True,
        1.0,
    ),
    ("exact is case-sensitive", "exact", {"expected_output": "Yes"}, result("yes"), False, 0.0),
    ("exact is not substring", "exact", {"expected_output": "42"}, result("It is 42"), False, 0.0),
    (
        "regex matches",
        "regex",
        {"expected_output": r"\border #\d{4}\b"},
        result("Your order #1234."),
        True,
        1.0,
    ),
    (
        "regex does not match",
        "regex",
        {"expected_output": r"^\d+$"},
        result("forty-two"),
        False,
        0.0,
    ),
    (
        "regex inline flag",
        "regex",
        {"expected_output": "(?i)REFUND"},
        result("a refund"),
        True,
        1.0,
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


@pytest.mark.parametrize(
    ("scorer", "fields", "agent", "passed", "score"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_labelled_examples(
    scorer: str, fields: dict[str, Any], agent: AgentResult, passed: bool, score: float
) -> None:
    s = scenario(scorers=[scorer], **fields)
    assert SCORERS[scorer].problems(s) == []
    judged = SCORERS[scorer].score(s, agent)
    assert (judged.passed, judged.score) == (passed, score)
    assert judged.scenario_id == "s" and judged.scorer_name == scorer
    assert judged.explanation.strip()


def test_every_scorer_has_a_passing_and_a_failing_example() -> None:
    labelled = {(case[1], case[4]) for case in CASES}
    assert labelled == {(name, ok) for name in SCORERS for ok in (True, False)}


def test_passfail_explains_each_check() -> None:
    s = scenario(expected_output="sunny", expected_tools=["get_weather", "alert"])
    judged = SCORERS["passfail"].score(s, result("It is sunny.", WEATHER))
    assert judged.explanation == (
        "output contains 'sunny'; tool 'get_weather' called; tool 'alert' not called"
    )
    assert judged.details == {
        "checks": [
            {"check": "output contains 'sunny'", "passed": True},
            {"check": "tool 'get_weather' called", "passed": True},
            {"check": "tool 'alert' not called", "passed": False},
        ]
    }


def test_tools_explanation_shows_both_sequences() -> None:
    judged = SCORERS["tools"].score(
        scenario(expected_tools=["a", "b"]), result("", ("b", {}), ("a", {}))
    )
    assert judged.explanation == "expected tools [a, b], got [b, a]"


def test_similarity_is_symmetric_and_bounded() -> None:
    assert similarity("a a b", "a b b") == similarity("a b b", "a a b") == pytest.approx(2 / 3)
    assert similarity("", "") == 1.0 and similarity("x", "") == 0.0
