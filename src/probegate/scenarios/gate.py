"""The exit code of ``probegate run`` (docs/scenarios.md), decided from the results alone.

Exit 1 when a gate fails, 0 otherwise; the output formats never change it. Without
``--fail-under-pass-rate`` every scenario must pass; with it, the pass rate over all scenarios of
all suites must reach the threshold (so a known-flaky scenario can be tolerated). A regression
against ``--compare`` fails the run either way: it is a scenario that used to pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from probegate.errors import ExitCode
from probegate.scenarios.compare import Regression
from probegate.scenarios.models import RunResult


@dataclass(frozen=True)
class GateDecision:
    exit_code: int
    pass_rate: float
    reasons: list[str] = field(default_factory=list)


def decide(
    runs: list[RunResult], regressions: list[Regression], fail_under_pass_rate: float | None
) -> GateDecision:
    results = [r for run in runs for r in run.scenario_results]
    passed = sum(r.passed for r in results)
    pass_rate = round(passed / len(results), 4) if results else 0.0
    reasons: list[str] = []
    if fail_under_pass_rate is None:
        failed = len(results) - passed
        if failed:
            reasons.append(f"{failed} of {len(results)} scenarios failed")
    elif pass_rate < fail_under_pass_rate:
        reasons.append(
            f"pass rate {pass_rate:.1%} is below --fail-under-pass-rate {fail_under_pass_rate:g}"
        )
    if regressions:
        reasons.append(f"{len(regressions)} regression(s) against the baseline")
    return GateDecision(ExitCode.GATE_FAILED if reasons else ExitCode.PASSED, pass_rate, reasons)
