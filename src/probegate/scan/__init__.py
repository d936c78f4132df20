"""One scan, end to end: the single call the CLI (and the Action) makes.

The pipeline is one module per stage, each taking typed inputs (``settings.py``), never the
whole config (docs/architecture.md, "A scan, stage by stage"):

1. ``prepare``: the config in; output and store writable, probes selected, baseline
   comparable, suppressions read, budget countable, signing material usable, target and judge
   built; every secret the scan holds gathered for redaction. Nothing is sent yet.
2. ``plan``: the attempts drawn (engine/plan.py); a dry run ends here; the notes on what the
   plan cannot cover.
3. ``execute``: the scan locked (until its report is written), the journal opened or resumed
   (a resume's config checked against the journal's), the attempts run (engine/runner.py)
   until done, stopped or interrupted (``progress`` prints as they complete).
4. ``finalise``: the report assembled, redacted, suppressed, compared with the baseline; then
   ``confirm`` (``--confirm N``) runs the probes of new findings again through the same runner
   and journal and the report is compared again on the pooled counts; then it is signed.
5. ``outputs`` and ``reproducers``: the stored report, every format asked for, a reproducer per
   finding.
6. ``closing``: the closing lines (or ``--json``), then the gates and the exit code.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TextIO

from probegate.config import ScanConfig
from probegate.errors import UsageError
from probegate.perf import collector_for_scan
from probegate.scan.closing import conclude
from probegate.scan.confirm import confirm_findings
from probegate.scan.execute import run_attempts
from probegate.scan.finalise import build_report, reconsider, report_files, sign
from probegate.scan.outputs import write_report_files
from probegate.scan.planning import draw_plan, dry_run, nothing_to_run, with_surface
from probegate.scan.prepare import prepare_scan
from probegate.scan.reproducers import write_reproducers
from probegate.scan.view import View

__all__ = ["execute_scan"]


def execute_scan(
    config: ScanConfig,
    *,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    verbose: bool = False,
    as_json: bool = False,
) -> int:
    """Run the scan the config describes and return the exit code.

    ``verbose`` lists every finding and unjudged cause; ``as_json`` prints the closing summary
    as one JSON object on ``out`` instead of text (progress and errors stay on ``err``).
    """
    with prepare_scan(config) as scan, contextlib.ExitStack() as held:
        settings, inputs, target = scan.settings, scan.inputs, scan.target
        plan = draw_plan(inputs.probes, target, settings.plan, judge=inputs.llm_judge is not None)
        if scan.dry_run:
            surface = with_surface(target.info(), plan.exposure)
            return dry_run(plan, scan.agent, out, surface, as_json=as_json, verbose=verbose)
        if not plan.attempts and not plan.escalations:
            raise UsageError(nothing_to_run(plan, plan.request.variant))
        view = View(out, err, quiet=config.quiet, verbose=verbose, as_json=as_json)
        for note in inputs.notes:
            view.note(note)
        held.enter_context(collector_for_scan())
        # The scan's lock, taken by run_attempts, is held in ``held`` until the report and the
        # reproducers are written: a second run of this scan is refused until then.
        run = run_attempts(target, plan, settings.run, inputs, view, held)
        report = build_report(
            run,
            plan,
            target,
            inputs,
            settings.report,
            report_files(settings.formats, settings.output_dir),
            settings.run.store,
        )
        confirmed = confirm_findings(report, run, plan, settings.run, view)
        if confirmed is not None:
            report = reconsider(report, inputs, settings.report, confirmed.confirmation)
            run = confirmed.stopped(run)
        report = sign(report, inputs)
        written = write_report_files(report, run.files, settings.formats, settings.output_dir)
        write_reproducers(report, run.files, settings.repro, plan, target, inputs.secrets)
        return conclude(report, written, run, settings.gates, settings.repro, view)
