"""What ``probegate run`` prints: one line per scenario as it finishes, then the totals.

Scenario names come from suite files and explanations may quote the agent, so every piece of
text is made terminal-safe with :func:`probegate.terminal.one_line` (no escape sequences that
could rewrite the screen or a CI log), folded onto one line and bounded.
"""

from __future__ import annotations

from probegate.scenarios.compare import Incomparable, Regression
from probegate.scenarios.loader import Suite
from probegate.scenarios.models import RunResult, ScenarioRunResult
from probegate.scenarios.scorers import FALLBACK_NOTE, uses_fallback
from probegate.terminal import one_line

DETAIL_MAX = 160


def safe(text: str, limit: int = DETAIL_MAX) -> str:
    """Untrusted text as one bounded, inert terminal line."""
    return one_line(text, limit)


def suite_header(suite: Suite) -> str:
    count = len(suite.scenarios)
    plural = "" if count == 1 else "s"
    return f"suite {safe(suite.name)} ({safe(str(suite.path))}): {count} scenario{plural}"


def warning_line(text: str) -> str:
    return f"warning: {safe(text, 400)}"


def dry_run_lines(suites: list[Suite]) -> list[str]:
    """The scenarios a run would execute, one per line, as AgenticAssure's --dry-run lists."""
    lines: list[str] = []
    for suite in suites:
        lines.append(suite_header(suite))
        for scenario in suite.scenarios:
            tags = ", ".join(scenario.tags) or "-"
            lines.append(
                f"  {safe(scenario.name, 80)}  scorers: {safe(', '.join(scenario.scorers)) or '-'}"
                f"  tags: {safe(tags)}  input: {safe(scenario.input, 80)}"
            )
    total = sum(len(suite.scenarios) for suite in suites)
    lines.append(f"probegate run --dry-run: {total} scenario(s) in {len(suites)} suite(s), not run")
    return lines


def fallback_note(runs: list[RunResult]) -> str | None:
    """One line when any verdict rests on the offline similarity fallback."""
    count = sum(
        any(uses_fallback(score) for score in result.scores)
        for run in runs
        for result in run.scenario_results
    )
    if not count:
        return None
    return f"note: similarity in {count} scenario(s): {FALLBACK_NOTE}"


def fail_fast_line(suite: Suite, run: RunResult) -> str | None:
    skipped = len(suite.scenarios) - len(run.scenario_results)
    if skipped <= 0:
        return None
    last = run.scenario_results[-1].scenario.name
    return (
        f"{safe(suite.name)}: fail_fast: stopped after {safe(last, 80)} failed; "
        f"{skipped} scenario(s) not run"
    )


def scenario_line(result: ScenarioRunResult) -> str:
    if result.error is not None:
        status, detail = "ERROR", result.error
    elif result.passed:
        status, detail = "PASS", ""
    else:
        status = "FAIL"
        detail = "; ".join(
            f"{s.scorer_name}: {s.explanation}" for s in result.scores if not s.passed
        )
    line = (
        f"  {status:<5} {safe(result.scenario.name, 80)}  score {result.score:.2f}"
        f"  {result.duration_ms:.0f} ms"
    )
    if result.retry_count:
        line += f"  retries {result.retry_count}"
    return f"{line}  {safe(detail)}" if detail else line


def suite_totals(run: RunResult) -> str:
    total = len(run.scenario_results)
    passed = sum(r.passed for r in run.scenario_results)
    errors = sum(r.error is not None for r in run.scenario_results)
    text = (
        f"{safe(run.suite_name)}: {passed}/{total} passed (pass rate {run.pass_rate:.1%}), "
        f"aggregate score {run.aggregate_score:.2f}"
    )
    return text + (f", {errors} error{'s' if errors != 1 else ''}" if errors else "")


def regression_line(regression: Regression) -> str:
    return (
        f"REGRESSION: {safe(regression.suite_name)}/{safe(regression.scenario)} "
        f"was passing, now failing (baseline {safe(str(regression.baseline))})"
    )


def incomparable_line(item: Incomparable) -> str:
    return (
        f"NOT COMPARED: {safe(item.suite_name)}/{safe(item.scenario)} passed in the baseline "
        f"and fails now, but {safe(item.reason)} (baseline {safe(str(item.baseline))})"
    )
