"""Scorers: how a scenario's AgentResult is judged. :data:`SCORERS` lists every one.

Each scorer is one small class behind the :class:`Scorer` protocol, with a stable name (the key
a suite file uses, and the anchor in ``docs/scenarios.md``). A scorer also says, before anything
runs, which scenario fields it needs (:meth:`Scorer.problems`): a ``regex`` scenario with no
pattern, or a bad one, is a suite-file error the user hears about at load time (exit 2), not a
scenario that fails at the end of a long run.

Every scorer is deterministic and needs no network or model: the same output always gets the
same score, so a run can be compared with its baseline.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Protocol

from probegate.scenarios.models import AgentResult, Scenario, ScoreResult

DEFAULT_SIMILARITY_THRESHOLD = 0.7
SIMILARITY_THRESHOLD_KEY = "similarity_threshold"
QUOTE_MAX = 80
_WORD = re.compile(r"\w+")


class Scorer(Protocol):
    """Judges one aspect of an agent's result for one scenario."""

    name: str
    summary: str

    def problems(self, scenario: Scenario) -> list[tuple[str, str]]:
        """``(field, message)`` for each scenario field this scorer cannot work with."""
        ...

    def score(self, scenario: Scenario, result: AgentResult) -> ScoreResult:
        """Score ``result``; only called for scenarios :meth:`problems` accepted."""
        ...


def _quote(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > QUOTE_MAX:
        text = text[: QUOTE_MAX - 1] + "…"
    return f"'{text}'"


def _subset(expected: Any, actual: Any) -> bool:
    """``expected`` is contained in ``actual``: every expected key present with a matching value.

    Nested objects match as subsets too, so a scenario can pin ``{"filters": {"city": "Paris"}}``
    without listing every filter the agent chose; anything else must be equal.
    """
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and _subset(value, actual[key]) for key, value in expected.items()
        )
    return bool(expected == actual)


def _result(
    scenario: Scenario,
    name: str,
    score: float,
    passed: bool,
    explanation: str,
    details: dict[str, Any] | None = None,
) -> ScoreResult:
    return ScoreResult(
        scenario_id=scenario.name,
        scorer_name=name,
        score=round(score, 4),
        passed=passed,
        explanation=explanation,
        details=details,
    )


def _needs_expected_output(scenario: Scenario, name: str) -> list[tuple[str, str]]:
    if scenario.expected_output is None:
        return [("expected_output", f"the {name} scorer needs expected_output")]
    return []


class PassFailScorer:
    """Every stated expectation holds: output text, tools called, tool arguments."""

    name = "passfail"
    summary = (
        "expected_output is a case-insensitive substring of the output; every expected_tools "
        "entry was called; for each tool in expected_tool_args some call's arguments contain "
        "the expected ones (subset match). Score: the fraction of checks that hold."
    )

    def problems(self, scenario: Scenario) -> list[tuple[str, str]]:
        if (
            scenario.expected_output is None
            and not scenario.expected_tools
            and not scenario.expected_tool_args
        ):
            return [
                (
                    "expected_output",
                    "the passfail scorer needs expected_output, expected_tools or "
                    "expected_tool_args (otherwise it can never fail)",
                )
            ]
        return []

    def score(self, scenario: Scenario, result: AgentResult) -> ScoreResult:
        checks: list[tuple[bool, str]] = []
        if scenario.expected_output is not None:
            ok = scenario.expected_output.casefold() in result.output.casefold()
            verb = "contains" if ok else "does not contain"
            checks.append((ok, f"output {verb} {_quote(scenario.expected_output)}"))
        called = [call.name for call in result.tool_calls]
        for tool in scenario.expected_tools or []:
            ok = tool in called
            checks.append((ok, f"tool '{tool}' {'called' if ok else 'not called'}"))
        for tool, expected in sorted((scenario.expected_tool_args or {}).items()):
            calls = [c.arguments for c in result.tool_calls if c.name == tool]
            if any(_subset(expected, arguments) for arguments in calls):
                checks.append((True, f"tool '{tool}' called with the expected arguments"))
            elif not calls:
                checks.append((False, f"tool '{tool}' not called (arguments expected)"))
            else:
                got = _quote(str(calls[0]))
                checks.append(
                    (False, f"tool '{tool}' called, but no call matched {expected}; first: {got}")
                )
        passed_count = sum(ok for ok, _ in checks)
        return _result(
            scenario,
            self.name,
            passed_count / len(checks),
            passed_count == len(checks),
            "; ".join(text for _, text in checks),
            {"checks": [{"check": text, "passed": ok} for ok, text in checks]},
        )


class ExactScorer:
    """The output is exactly the expected output (surrounding whitespace ignored)."""

    name = "exact"
    summary = "the output equals expected_output after stripping surrounding whitespace."

    def problems(self, scenario: Scenario) -> list[tuple[str, str]]:
        return _needs_expected_output(scenario, self.name)

    def score(self, scenario: Scenario, result: AgentResult) -> ScoreResult:
        expected = (scenario.expected_output or "").strip()
        if result.output.strip() == expected:
            return _result(scenario, self.name, 1.0, True, "output equals the expected output")
        return _result(
            scenario,
            self.name,
            0.0,
            False,
            f"output differs from the expected output: got {_quote(result.output)}",
        )


class RegexScorer:
    """The output matches expected_output read as a Python regular expression."""

    name = "regex"
    summary = (
        "expected_output is a Python regular expression searched for in the output "
        "(re.search; use inline flags such as (?i) for case-insensitive matching)."
    )

    def problems(self, scenario: Scenario) -> list[tuple[str, str]]:
        found = _needs_expected_output(scenario, self.name)
        if found:
            return found
        try:
            re.compile(scenario.expected_output or "")
        except re.error as exc:
            return [("expected_output", f"not a valid regular expression: {exc}")]
        return []

    def score(self, scenario: Scenario, result: AgentResult) -> ScoreResult:
        pattern = scenario.expected_output or ""
        match = re.search(pattern, result.output)
        if match is None:
            return _result(scenario, self.name, 0.0, False, f"output does not match /{pattern}/")
        return _result(
            scenario,
            self.name,
            1.0,
            True,
            f"output matches /{pattern}/",
            {"match": match.group(0)[:200]},
        )


def _lcs(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence: partial credit for a partly right order."""
    row = [0] * (len(b) + 1)
    for x in a:
        diagonal = 0
        for j, y in enumerate(b, start=1):
            above = row[j]
            row[j] = diagonal + 1 if x == y else max(row[j], row[j - 1])
            diagonal = above
    return row[-1]


class ToolsScorer:
    """The agent called exactly the expected tools, in the expected order."""

    name = "tools"
    summary = (
        "the sequence of tool names called equals expected_tools (names and order; "
        "expected_tools: [] means no tool may be called). Score: longest common subsequence "
        "over the longer of the two sequences."
    )

    def problems(self, scenario: Scenario) -> list[tuple[str, str]]:
        if scenario.expected_tools is None:
            return [("expected_tools", "the tools scorer needs expected_tools (a list)")]
        return []

    def score(self, scenario: Scenario, result: AgentResult) -> ScoreResult:
        expected = list(scenario.expected_tools or [])
        called = [call.name for call in result.tool_calls]
        longest = max(len(expected), len(called))
        score = 1.0 if longest == 0 else _lcs(expected, called) / longest
        passed = called == expected
        if passed:
            explanation = (
                f"tools called in the expected order: {', '.join(called)}"
                if called
                else "no tool called, as expected"
            )
        else:
            explanation = f"expected tools [{', '.join(expected)}], got [{', '.join(called)}]"
        return _result(
            scenario,
            self.name,
            score,
            passed,
            explanation,
            {"expected": expected, "called": called},
        )


def similarity(a: str, b: str) -> float:
    """Token-overlap ratio of two texts: ``2 * |common words| / (|words of a| + |words of b|)``.

    Words are lower-cased ``\\w+`` runs counted with multiplicity (the Dice coefficient of the
    two bags of words). Cheap, deterministic and order-blind: it catches a rephrased answer
    that says the same things, not a subtle change of meaning.
    """
    left = Counter(_WORD.findall(a.casefold()))
    right = Counter(_WORD.findall(b.casefold()))
    total = sum(left.values()) + sum(right.values())
    if total == 0:
        return 1.0
    return 2 * sum((left & right).values()) / total


def similarity_threshold(scenario: Scenario) -> float:
    value = (scenario.metadata or {}).get(SIMILARITY_THRESHOLD_KEY, DEFAULT_SIMILARITY_THRESHOLD)
    return float(value)


class SimilarityScorer:
    """The output says roughly what expected_output says (token overlap above a threshold)."""

    name = "similarity"
    summary = (
        "token-overlap ratio (Dice coefficient of lower-cased words) between the output and "
        "expected_output; passes at or above metadata.similarity_threshold (default 0.7)."
    )

    def problems(self, scenario: Scenario) -> list[tuple[str, str]]:
        found = _needs_expected_output(scenario, self.name)
        value = (scenario.metadata or {}).get(SIMILARITY_THRESHOLD_KEY)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1
        ):
            found.append(
                (
                    f"metadata.{SIMILARITY_THRESHOLD_KEY}",
                    f"must be a number from 0 to 1, got {value!r}",
                )
            )
        return found

    def score(self, scenario: Scenario, result: AgentResult) -> ScoreResult:
        threshold = similarity_threshold(scenario)
        ratio = round(similarity(result.output, scenario.expected_output or ""), 4)
        passed = ratio >= threshold
        sign = ">=" if passed else "<"
        return _result(
            scenario,
            self.name,
            ratio,
            passed,
            f"token overlap {ratio:.2f} {sign} threshold {threshold:.2f}",
            {"threshold": threshold},
        )


SCORERS: dict[str, Scorer] = {
    scorer.name: scorer
    for scorer in (
        PassFailScorer(),
        ExactScorer(),
        RegexScorer(),
        ToolsScorer(),
        SimilarityScorer(),
    )
}
