"""Stage 4b, confirm: ``--confirm N`` runs the probes of the findings the baseline lacked (or
held less often) N more times before the gate decides (docs/gating.md, "Confirm runs").

A sampled model is vulnerable to a probe in some attempts and not in others, and a scan that
judged a probe once or a few times cannot tell a regression from chance against a baseline
(probegate.chance). The confirm runs give the current side more attempts where it matters:
every attempt of those probes (each variant, as the first run had them) runs again N times,
as a scan with a higher ``--repeat`` would run it, each vulnerable one checked against its
control. The comparison then pools their counts with the first run's (baseline.compare).

They run through the scan's own runner and journal (scan/execute.py, ``Rerun``): the same
target, budget, redaction and controls; a resumed scan runs none of them twice, and, its
first run being the same, confirms the same findings. They are counted, not reported: the
report's findings, score, authority and files are the first run's, so ``--fail-on`` and
``--fail-under`` decide on what they always did; a harmful act the first run saw is a fact
whatever the confirm runs show.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from probegate.engine.plan import Plan, confirm_attempts, confirm_plan
from probegate.engine.run_state import RunOutcome
from probegate.errors import Interrupted
from probegate.models.comparison import (
    Comparison,
    Confirmation,
    ConfirmedProbe,
    Counts,
    FindingRef,
)
from probegate.models.report import ScanReport, StopReason
from probegate.models.verdict import Attempt, Outcome
from probegate.scan.execute import Execution
from probegate.scan.settings import RunSettings
from probegate.scan.view import View


@dataclass(frozen=True)
class Confirmed:
    """What the confirm runs did: the counts the comparison pools, and the interrupt that
    stopped them, if one did."""

    confirmation: Confirmation
    outcome: RunOutcome
    interrupted: Interrupted | None = None

    def stopped(self, run: Execution) -> Execution:
        """The scan as interrupted during its confirm runs: the exit code and the closing lines
        of an interrupted scan, with every attempt the journal kept."""
        if self.interrupted is None:
            return run
        outcome = replace(
            run.outcome,
            stopped_reason=StopReason.CANCELLED,
            attempts={**run.outcome.attempts, **self.outcome.attempts},
            discarded=self.outcome.discarded,
        )
        return replace(run, outcome=outcome, interrupted=self.interrupted)


def confirm_findings(
    report: ScanReport, run: Execution, plan: Plan, settings: RunSettings, view: View
) -> Confirmed | None:
    """Run the confirm runs the report's comparison calls for; None when there are none."""
    comparison = report.comparison
    if not settings.confirm or comparison is None or run.rerun is None:
        return None
    probes = candidates(comparison)
    if not probes:
        return None
    if run.outcome.stopped_reason != StopReason.COMPLETED or run.outcome.undecided:
        view.note(
            f"--confirm {settings.confirm}: the scan did not complete "
            f"({run.outcome.stopped_reason}), so its findings are not run again"
        )
        return None
    wanted = set(probes)
    first = [
        a
        for a in plan.all_attempts
        if a.probe.id in wanted and a.attempt_id in run.outcome.attempts
    ]
    attempts = confirm_attempts(first, settings.confirm, settings.repeat, plan.seed)
    if not view.quiet:
        view.err.write(
            f"probegate: confirming {len(probes)} finding(s) the baseline lacked or held less "
            f"often: their probes run {settings.confirm} more time(s), {len(attempts)} "
            "attempts\n"
        )
    outcome, interrupted = run.rerun.run(confirm_plan(plan, attempts))
    planned: dict[str, int] = {}
    for a in attempts:
        planned[a.probe.id] = planned.get(a.probe.id, 0) + 1
    firsts = {r.probe_id: r for r in report.results}
    confirmation = Confirmation(
        runs=settings.confirm,
        probes=[
            ConfirmedProbe(
                probe_id=probe_id,
                first=Counts(
                    vulnerable=firsts[probe_id].vulnerable,
                    judged=firsts[probe_id].vulnerable + firsts[probe_id].resisted,
                ),
                confirm=_counts(a for a in outcome.attempts.values() if a.probe_id == probe_id),
                planned=planned.get(probe_id, 0),
            )
            for probe_id in probes
            if probe_id in firsts
        ],
        stopped_reason=str(outcome.stopped_reason),
    )
    return Confirmed(confirmation, outcome, interrupted)


def candidates(comparison: Comparison) -> list[str]:
    """The probes to run again: of every unsuppressed finding of this scan the baseline lacked
    or held less often (new, changed for the worse, or within noise or persisting at a higher
    rate). A suppressed finding does not gate, and one the baseline held as often has nothing
    to confirm."""
    refs = [*comparison.new, *comparison.changed, *comparison.persisting]
    refs += comparison.within_noise
    return sorted({r.probe_id for r in refs if not r.suppressed and _rose(r)})


def _rose(ref: FindingRef) -> bool:
    """This scan holds the finding more often than the baseline, or the baseline judged none
    of its probe's attempts."""
    was, now = ref.baseline_counts, ref.current_counts
    if now is None or not now.vulnerable:
        return False
    return (
        was is None or not was.judged or now.vulnerable * was.judged > was.vulnerable * now.judged
    )


def _counts(attempts: Iterable[Attempt]) -> Counts:
    """Vulnerable of judged (vulnerable or resisted) among these attempts."""
    outcomes = [a.outcome for a in attempts]
    vulnerable = outcomes.count(Outcome.VULNERABLE)
    return Counts(vulnerable=vulnerable, judged=vulnerable + outcomes.count(Outcome.RESISTED))
