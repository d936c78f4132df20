"""Markdown summary of scenario runs (a PR comment or ``$GITHUB_STEP_SUMMARY``).

Pure: runs and regressions in, text out. Every piece of agent or suite text goes through
:func:`probegate.reports.escape.md_text`, so an agent's reply cannot open a table cell, a link
or a workflow command in the page it is shown in.
"""

from __future__ import annotations

from probegate.reports.escape import md_code, md_text
from probegate.scenarios.compare import Regression
from probegate.scenarios.models import RunResult, ScenarioRunResult

CELL_MAX = 200


def render(runs: list[RunResult], regressions: list[Regression]) -> bytes:
    lines = ["# probegate run", ""]
    lines += [
        "| suite | scenarios | passed | pass rate | aggregate score |",
        "|---|---:|---:|---:|---:|",
    ]
    for run in runs:
        passed = sum(r.passed for r in run.scenario_results)
        lines.append(
            f"| {md_text(run.suite_name, limit=CELL_MAX)} | {len(run.scenario_results)} "
            f"| {passed} | {run.pass_rate:.1%} | {run.aggregate_score:.2f} |"
        )
    if regressions:
        lines += ["", f"## Regressions ({len(regressions)})", ""]
        lines += [
            f"- {md_text(r.suite_name)} / {md_text(r.scenario)}: passed in "
            f"{md_code(str(r.baseline))}, fails now"
            for r in regressions
        ]
    for run in runs:
        lines += ["", f"## {md_text(run.suite_name, limit=CELL_MAX)}", ""]
        lines += [f"run_id {md_code(run.run_id)}", ""]
        lines += ["| | scenario | score | details |", "|---|---|---:|---|"]
        lines += [_row(result) for result in run.scenario_results]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _row(result: ScenarioRunResult) -> str:
    if result.error is not None:
        mark, detail = "ERROR", f"error: {result.error}"
    elif result.passed:
        mark, detail = "PASS", "; ".join(s.explanation for s in result.scores)
    else:
        mark = "FAIL"
        detail = "; ".join(
            f"{s.scorer_name}: {s.explanation}" for s in result.scores if not s.passed
        )
    name = md_text(result.scenario.name, limit=CELL_MAX)
    return f"| {mark} | {name} | {result.score:.2f} | {md_text(detail, limit=CELL_MAX)} |"
