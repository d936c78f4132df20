"""Scorers: how a scenario's AgentResult is judged. :data:`SCORERS` lists every one.

Each scorer is one small class behind the :class:`Scorer` protocol, with a stable name (the key
a suite file uses, and the anchor in ``docs/scenarios.md``). ``passfail``, ``exact``, ``regex``
and ``similarity`` are AgenticAssure 0.4's scorers with its semantics (the same suite and the
same agent give the same verdict in both tools); ``tools`` is probegate's own.

AgenticAssure judges a scenario whose expectations are missing or malformed at run time (a
``regex`` scenario without ``metadata.regex_pattern`` fails). probegate gives the same verdict
and, through :meth:`Scorer.problems`, also says so before anything runs, as a warning naming
the field, so the user hears about it at load time instead of at the end of a long run.

``similarity`` is the one scorer probegate cannot reproduce offline: AgenticAssure compares
sentence embeddings from a model it downloads. probegate uses a documented token-overlap
fallback and says so in every result it gives (docs/scenarios.md#similarity).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Protocol

from probegate.models.patterns import PatternError, check, compile_pattern
from probegate.scenarios.models import AgentResult, Scenario, ScoreResult

DEFAULT_SIMILARITY_THRESHOLD = 0.7
SIMILARITY_THRESHOLD_KEY = "similarity_threshold"
REGEX_PATTERN_KEY = "regex_pattern"
EXACT_NORMALIZE_KEY = "exact_normalize"
SIMILARITY_FALLBACK = "token_overlap"
EMBEDDING_MODEL = "all-MiniLM-L6-v2"
FALLBACK_NOTE = (
    f"AgenticAssure compares sentence embeddings ({EMBEDDING_MODEL}), which cannot be loaded "
    "offline; probegate used its token-overlap fallback (docs/scenarios.md#similarity)"
)
QUOTE_MAX = 80
_WORD = re.compile(r"\w+")


class ScorerError(Exception):
    """The scenario cannot be scored at all (AgenticAssure raises here: the scenario errors)."""


class Refused(Exception):
    """The scenario asks for what probegate will not run: the suite is refused (exit 2)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class Scorer(Protocol):
    """Judges one aspect of an agent's result for one scenario."""

    name: str
    summary: str

    def problems(self, scenario: Scenario) -> list[tuple[str, str]]:
        """``(field, message)`` for each reason this scenario can never pass this scorer;
        :class:`Refused` for what probegate will not run at all."""
        ...

    def score(self, scenario: Scenario, result: AgentResult) -> ScoreResult:
        """Score ``result``; raise :class:`ScorerError` when the scenario cannot be scored."""
        ...


def _quote(value: Any) -> str:
    text = " ".join(str(value).split())
    if len(text) > QUOTE_MAX:
        text = text[: QUOTE_MAX - 1] + "…"
    return f"'{text}'"


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


def _no_expected_output(scenario: Scenario, name: str) -> list[tuple[str, str]]:
    if scenario.expected_output is None:
        return [("expected_output", f"the {name} scorer fails without expected_output")]
    return []


def _tool_args_problems(scenario: Scenario) -> list[tuple[str, str]]:
    return [
        (f"expected_tool_args.{tool}", f"must map argument names to values, got {args!r}")
        for tool, args in (scenario.expected_tool_args or {}).items()
        if not isinstance(args, dict)
    ]


class PassFailScorer:
    """The agent answered, called every expected tool, with the expected arguments."""

    name = "passfail"
    summary = (
        "the output is not blank; every expected_tools name was called; for each tool in "
        "expected_tool_args, its first call has each expected argument with an equal value; "
        "expected_output, if set, is a case-insensitive substring of the output. Score 1 or 0."
    )

    def problems(self, scenario: Scenario) -> list[tuple[str, str]]:
        return _tool_args_problems(scenario)

    def score(self, scenario: Scenario, result: AgentResult) -> ScoreResult:
        checks: list[tuple[bool, str]] = []
        answered = bool(result.output.strip())
        checks.append((answered, "the agent answered" if answered else "the output is empty"))
        called = {call.name for call in result.tool_calls}
        if scenario.expected_tools is not None:
            missing = sorted(set(scenario.expected_tools) - called)
            if missing:
                checks.append((False, f"tools not called: {', '.join(missing)}"))
            else:
                checks.append((True, "every expected tool was called"))
        for tool, expected in (scenario.expected_tool_args or {}).items():
            checks += _argument_checks(tool, expected, result)
        if scenario.expected_output is not None:
            found = scenario.expected_output.lower() in result.output.lower()
            verb = "contains" if found else "does not contain"
            checks.append((found, f"output {verb} {_quote(scenario.expected_output)}"))
        passed = all(ok for ok, _ in checks)
        # A failure names only what failed (details.checks keeps every check).
        shown = checks if passed else [check for check in checks if not check[0]]
        return _result(
            scenario,
            self.name,
            1.0 if passed else 0.0,
            passed,
            "; ".join(text for _, text in shown),
            {"checks": [{"check": text, "passed": ok} for ok, text in checks]},
        )


def _argument_checks(tool: str, expected: Any, result: AgentResult) -> list[tuple[bool, str]]:
    """The checks of one tool's expected arguments against its first call."""
    first = next((call for call in result.tool_calls if call.name == tool), None)
    if first is None:
        return [(False, f"tool '{tool}' not called (arguments expected)")]
    if not isinstance(expected, dict):  # AgenticAssure raises here too
        raise ScorerError(f"passfail: expected_tool_args.{tool} must map argument names to values")
    checks: list[tuple[bool, str]] = []
    for key, value in expected.items():
        if key not in first.arguments:
            checks.append((False, f"tool '{tool}' called without argument '{key}'"))
        elif first.arguments[key] != value:
            got = first.arguments[key]
            checks.append(
                (False, f"tool '{tool}' {key}: expected {_quote(value)}, got {_quote(got)}")
            )
        else:
            checks.append((True, f"tool '{tool}' {key} as expected"))
    return checks


class ExactScorer:
    """The output is the expected output: case and surrounding space ignored by default."""

    name = "exact"
    summary = (
        "the output equals expected_output, both stripped of surrounding whitespace and "
        "lower-cased; with metadata.exact_normalize: false, character for character. "
        "Score 1 or 0."
    )

    def problems(self, scenario: Scenario) -> list[tuple[str, str]]:
        return _no_expected_output(scenario, self.name)

    def score(self, scenario: Scenario, result: AgentResult) -> ScoreResult:
        if scenario.expected_output is None:
            return _result(scenario, self.name, 0.0, False, "no expected_output to compare with")
        normalize = bool(scenario.metadata.get(EXACT_NORMALIZE_KEY, True))
        expected, actual = scenario.expected_output, result.output
        if normalize:
            expected, actual = expected.strip().lower(), actual.strip().lower()
        how = " (ignoring case and surrounding space)" if normalize else ""
        if actual == expected:
            return _result(
                scenario, self.name, 1.0, True, f"output equals the expected output{how}"
            )
        return _result(
            scenario,
            self.name,
            0.0,
            False,
            f"output differs from the expected output{how}: got {_quote(result.output)}",
        )


def _pattern(scenario: Scenario) -> Any:
    return scenario.metadata.get(REGEX_PATTERN_KEY)


class RegexScorer:
    """The output matches the regular expression in metadata.regex_pattern."""

    name = "regex"
    summary = (
        "metadata.regex_pattern is a regular expression searched for anywhere in the output "
        "(RE2 syntax, linear in the output; inline flags such as (?i) for options). Score 1 or 0."
    )

    def problems(self, scenario: Scenario) -> list[tuple[str, str]]:
        pattern = _pattern(scenario)
        field = f"metadata.{REGEX_PATTERN_KEY}"
        if pattern is None:
            hint = (
                " (expected_output is not read as a pattern)"
                if scenario.expected_output is not None
                else ""
            )
            return [(field, f"the regex scorer fails without a pattern here{hint}")]
        if not isinstance(pattern, str):
            return [(field, f"must be a string, got {pattern!r}")]
        try:
            check(pattern)
        except PatternError as exc:
            try:
                re.compile(pattern)
            except re.error as invalid:
                # Invalid in Python too: AgenticAssure fails the scenario, and so do we.
                return [(field, f"not a valid regular expression: {invalid}")]
            # Valid in Python, but it needs backtracking, which could hang the run on what
            # the agent says (models/patterns.py): refused before anything runs.
            raise Refused(field, str(exc)) from None
        return []

    def score(self, scenario: Scenario, result: AgentResult) -> ScoreResult:
        pattern = _pattern(scenario)
        if pattern is None:
            return _result(
                scenario, self.name, 0.0, False, f"no metadata.{REGEX_PATTERN_KEY} to match"
            )
        if not isinstance(pattern, str):
            raise ScorerError(f"regex: metadata.{REGEX_PATTERN_KEY} must be a string")
        try:
            match = compile_pattern(pattern).search(result.output)
        except PatternError as exc:
            return _result(scenario, self.name, 0.0, False, str(exc))
        details = {"pattern": pattern, "match": None if match is None else match.group[:200]}
        if match is None:
            return _result(
                scenario, self.name, 0.0, False, f"output does not match /{pattern}/", details
            )
        return _result(scenario, self.name, 1.0, True, f"output matches /{pattern}/", details)


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
    """The agent called exactly the expected tools, in the expected order (probegate's own)."""

    name = "tools"
    summary = (
        "the sequence of tool names called equals expected_tools (names and order; "
        "expected_tools: [] means no tool may be called). Score: longest common subsequence "
        "over the longer of the two sequences."
    )

    def problems(self, scenario: Scenario) -> list[tuple[str, str]]:
        if scenario.expected_tools is None:
            return [("expected_tools", "the tools scorer fails without expected_tools (a list)")]
        return []

    def score(self, scenario: Scenario, result: AgentResult) -> ScoreResult:
        if scenario.expected_tools is None:
            return _result(scenario, self.name, 0.0, False, "no expected_tools to compare with")
        expected = list(scenario.expected_tools)
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


def _threshold(scenario: Scenario) -> Any:
    return scenario.metadata.get(SIMILARITY_THRESHOLD_KEY, DEFAULT_SIMILARITY_THRESHOLD)


def _threshold_problems(scenario: Scenario) -> list[tuple[str, str]]:
    value = _threshold(scenario)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return [(f"metadata.{SIMILARITY_THRESHOLD_KEY}", f"must be a number, got {value!r}")]
    return []


class SimilarityScorer:
    """The output says roughly what expected_output says (offline: token overlap)."""

    name = "similarity"
    summary = (
        "AgenticAssure: cosine similarity of sentence embeddings. Offline fallback used by "
        "probegate, and said so in each result: the token-overlap ratio (Dice coefficient of "
        "lower-cased words) between the output and expected_output; passes at or above "
        "metadata.similarity_threshold (default 0.7)."
    )

    def problems(self, scenario: Scenario) -> list[tuple[str, str]]:
        found = _no_expected_output(scenario, self.name) + _threshold_problems(scenario)
        value = _threshold(scenario)
        if not found and not 0 <= value <= 1:
            found.append(
                (f"metadata.{SIMILARITY_THRESHOLD_KEY}", f"is outside 0..1, got {value!r}")
            )
        return found

    def score(self, scenario: Scenario, result: AgentResult) -> ScoreResult:
        if scenario.expected_output is None:
            return _result(scenario, self.name, 0.0, False, "no expected_output to compare with")
        for field, problem in _threshold_problems(scenario):
            raise ScorerError(f"similarity: {field} {problem}")
        threshold = float(_threshold(scenario))
        ratio = round(similarity(result.output, scenario.expected_output), 4)
        passed = ratio >= threshold
        sign = ">=" if passed else "<"
        return _result(
            scenario,
            self.name,
            ratio,
            passed,
            f"token overlap {ratio:.2f} {sign} threshold {threshold:g} [{FALLBACK_NOTE}]",
            {"method": SIMILARITY_FALLBACK, "ratio": ratio, "threshold": threshold},
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


def uses_fallback(score: ScoreResult) -> bool:
    """Whether this score came from the offline similarity fallback, not embeddings."""
    return (
        score.scorer_name == SimilarityScorer.name
        and (score.details or {}).get("method") == SIMILARITY_FALLBACK
    )
