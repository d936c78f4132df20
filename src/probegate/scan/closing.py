"""Stage 6, closing: what the scan says when it ends, and the exit code the gates decide.

The closing lines list the findings (severity, probe, the evidence in one line), why the scan
stopped, whether its score is authoritative, and its unjudged attempts grouped by cause with
the fix for each; ``--json`` says the same as one object on stdout. Gates are evaluated only
after every report file is written, so a failing build still leaves its evidence behind.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from probegate.config import DEFAULT_STORE
from probegate.engine.run_state import RunOutcome
from probegate.errors import ExitCode, TargetError
from probegate.gate import evaluate_gates
from probegate.models.report import JudgeUsage, ScanReport, StopReason, most_severe_first
from probegate.reports import FormatName
from probegate.reports.agreement_text import (
    DIFFERENCES,
    HEADERS,
    agreement_heading,
    agreement_rows,
    difference_counts,
)
from probegate.reports.diff_sections import CONFIRM_HEADERS, confirm_heading, confirm_rows
from probegate.reports.digest import (
    authority_reasons,
    authority_text,
    evidence_text,
    stop_text,
    unjudged_groups,
)
from probegate.reports.headline import (
    category_states,
    category_text,
    controls_text,
    coverage_text,
    out_of_100,
    surface_text,
)
from probegate.scan.execute import Execution
from probegate.scan.settings import GateSettings, ReproSettings
from probegate.scan.view import View, shown
from probegate.terminal import Style, clean, json_text, one_line

# Findings listed one per line before "and N more" (``-v`` lists every one).
LISTED_FINDINGS = 15
LISTED_CAUSES = 5


@dataclass
class Closing:
    """Everything the closing lines say, gathered before they are printed."""

    report: ScanReport
    written: dict[FormatName, Path]
    outcome: RunOutcome
    scan_id: str
    exit_code: int = 0
    gates: list[str] = field(default_factory=list)
    resume: str | None = None


def conclude(
    report: ScanReport,
    written: dict[FormatName, Path],
    run: Execution,
    gates: GateSettings,
    repro: ReproSettings,
    view: View,
) -> int:
    """Print the closing lines and return the exit code: an interrupt's, an undecided scan's
    (raised as a :class:`TargetError`), or the gates'."""
    outcome = run.outcome
    report_path = written.get(FormatName.JSON, run.files.report)
    closing = Closing(report, written, outcome, run.scan_id)
    if outcome.stopped_reason == StopReason.CANCELLED:
        closing.resume = resume_command(run.scan_id, repro)
        closing.exit_code = run.interrupted.exit_code
        print_closing(closing, view)
        view.err.write(
            f"{Style(view.err)('interrupted', 'bold', 'yellow')} by {run.interrupted.what}: scan "
            f"{run.scan_id} kept {len(outcome.attempts)} completed attempts in its journal"
            + (f" ({outcome.discarded} in flight will run again)" if outcome.discarded else "")
            + f"; partial report: {shown(report_path)}\n"
            f"resume with: {closing.resume}\n"
        )
        return run.interrupted.exit_code
    if outcome.stopped_reason == StopReason.EARLY_STOP or outcome.undecided:
        closing.exit_code = ExitCode.UNDECIDED
        print_closing(closing, view)
        if outcome.stopped_reason == StopReason.EARLY_STOP:
            raise TargetError(
                f"scan stopped early: {outcome.stop_message}. Nothing was gated: the target "
                f"could not be judged. Partial report: {shown(report_path)}"
            )
        raise TargetError(
            f"the target could not be judged: {outcome.undecided}. Nothing was gated. "
            f"Report: {shown(report_path)}"
        )
    result = evaluate_gates(
        report, fail_under=gates.fail_under, fail_on=gates.fail_on, comparison=report.comparison
    )
    closing.exit_code = result.exit_code
    closing.gates = list(result.reasons)
    print_closing(closing, view)
    for line in result.reasons:
        view.err.write(f"gate {clean(line)}\n")
    return result.exit_code


def resume_command(scan_id: str, repro: ReproSettings) -> str:
    """The exact command that resumes ``scan_id`` from where the user stands."""
    argv = ["probegate", "scan", "--resume", scan_id]
    default_store = (Path.cwd() / DEFAULT_STORE).resolve()
    if repro.store.resolve() != default_store:
        argv += ["--store", shown(repro.store)]
    if not repro.invocation_stored:  # started without a stored command line: repeat the target
        argv[2:2] = repro.target_args
    return shlex.join(argv)


def print_closing(closing: Closing, view: View) -> None:
    if view.as_json:
        data = _closing_json(closing, view)
        text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
        view.out.write(json_text(text) + "\n")
        view.out.flush()
        return
    if view.quiet:
        return
    lines = [
        *_headline(closing, Style(view.out)),
        *_finding_lines(closing, view),
        *_confirm_lines(closing.report, view),
        *_unjudged_lines(closing.report, view),
        *_category_lines(closing.report, Style(view.out)),
        *_agreement_lines(closing.report, view),
        *(f"wrote {name}: {shown(path)}" for name, path in closing.written.items()),
    ]
    view.out.write("".join(line + "\n" for line in lines))
    view.out.flush()


def _headline(closing: Closing, style: Style) -> list[str]:
    """Score, why the scan stopped, its authority, and the counts."""
    report = closing.report
    auth = "authoritative" if report.authority.authoritative else "not authoritative"
    good = report.aivss is not None and report.aivss >= 80
    band = style(report.band, "bold", "green" if good else "red")
    lines = [
        f"score {out_of_100(report.aivss)}  band {band}  ({report.mode} mode, {auth})",
        f"  {style('covers:', 'bold')} {clean(coverage_text(report))}",
        f"  {style('surface:', 'bold')} {clean(surface_text(report.target))}",
        f"  {style('stopped:', 'bold')} {clean(stop_text(report))}",
        f"  {style('authority:', 'bold')} {clean(authority_text(report))}",
    ]
    if closing.outcome.stop_message and report.stopped_reason == StopReason.EARLY_STOP:
        lines.append(f"  why it stopped: {one_line(closing.outcome.stop_message, 300)}")
    counts = report.findings_summary
    suppressed = sum(1 for f in report.findings if f.suppressed is not None)
    lines.append(
        f"{style('findings:', 'bold')} {len(report.findings)} (critical "
        f"{counts.get('critical', 0)}, high {counts.get('high', 0)}, medium "
        f"{counts.get('medium', 0)}, low {counts.get('low', 0)})"
        + (f", {suppressed} suppressed" if suppressed else "")
        + f"; unjudged attempts: {len(report.unjudged)}"
    )
    undecided = sum(1 for r in report.results if r.outcome == "undecided")
    if undecided:
        lines.append(
            f"undecided probes: {undecided} (resisted where judged, but some attempts were "
            "not: never counted as resisted)"
        )
    delivery = report.delivery
    if delivery is not None and delivery.delivered < delivery.attempts:
        per = ", ".join(
            f"{name.replace('_', ' ')} {c.delivered}/{c.attempts}"
            for name, c in delivery.by_channel.items()
            if c.delivered < c.attempts
        )
        lines.append(
            f"{style('delivery:', 'bold')} the attack reached the agent in {delivery.delivered}"
            f" of {delivery.attempts} attempts (short: {per}); the rest are listed by cause"
        )
    if report.controls.run or not report.controls.enabled:
        lines.append(clean(controls_text(report)))
    if report.judge is not None:
        lines.append(clean(judge_text(report.judge)))
    return lines


def judge_text(usage: JudgeUsage) -> str:
    """What the LLM judge did and cost, in one line (docs/judge.md, "What it costs")."""
    reasons = usage.by_reason
    asked = ", ".join(
        f"{count} {name.replace('_', ' ')}" for name, count in reasons.model_dump().items() if count
    )
    return (
        f"judge {usage.spec}: {usage.calls} calls, {usage.cached} verdicts from its cache, "
        f"{usage.calibration_calls} calibration calls; {usage.tokens:,} tokens, "
        f"${usage.cost_usd:.4f}" + (f"; by reason: {asked}" if asked else "")
    )


def _finding_lines(closing: Closing, view: View) -> list[str]:
    """One line per finding, most severe first; ``-v`` lists every one."""
    style = Style(view.out)
    ranked = most_severe_first(closing.report.findings)
    shown_findings = ranked if view.verbose else ranked[:LISTED_FINDINGS]
    width = max((len(f.probe_id) for f in shown_findings), default=0)
    lines = []
    for finding in shown_findings:
        sev = style.severity(f"{finding.severity.value:<8}", finding.severity.value)
        mark = " (suppressed)" if finding.suppressed is not None else ""
        lines.append(
            f"  {sev}  {finding.probe_id:<{width}}  {one_line(evidence_text(finding), 110)}{mark}"
        )
    if len(ranked) > len(shown_findings):
        where = closing.written.get(FormatName.HTML) or closing.written.get(FormatName.MD)
        lines.append(
            f"  … and {len(ranked) - len(shown_findings)} more (-v lists them"
            + (f"; {shown(where)} shows each with its transcript)" if where else ")")
        )
    return lines


def _confirm_lines(report: ScanReport, view: View) -> list[str]:
    """What ``--confirm N`` ran again, and what each finding came to against the baseline."""
    comparison = report.comparison
    rows = [row.cells() for row in confirm_rows(comparison)] if comparison is not None else []
    if comparison is None or not rows:
        return []
    style = Style(view.out)
    table = [CONFIRM_HEADERS, *rows]
    widths = [max(len(clean(row[i])) for row in table) for i in range(len(CONFIRM_HEADERS))]
    heading = confirm_heading(comparison)
    lines = [f"{style('confirm:', 'bold')} {clean(heading[:1].lower() + heading[1:])}"]
    for row in table:
        cells = (clean(cell).ljust(w) for cell, w in zip(row, widths, strict=True))
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def _unjudged_lines(report: ScanReport, view: View) -> list[str]:
    """The unjudged attempts by cause, each with its fix and probes."""
    groups = unjudged_groups(report)
    if not groups:
        return []
    style = Style(view.out)
    lines = [
        f"{style('unjudged:', 'bold')} {len(report.unjudged)} attempts, not counted as "
        "resisted, by cause:"
    ]
    listed = groups if view.verbose else groups[:LISTED_CAUSES]
    for group in listed:
        lines.append(f"  {group.count:>4}  {one_line(group.label, 160)}")
        if group.fix:
            lines.append(f"        fix: {group.fix}")
        lines.append(f"        probes: {one_line(group.probes_text(), 160)}")
    if len(groups) > len(listed):
        lines.append(f"  … and {len(groups) - len(listed)} more causes (-v lists them)")
    return lines


def _category_lines(report: ScanReport, style: Style) -> list[str]:
    """All ten ASI categories, each with its state: the score (and unjudged attempts beside
    it), or n/a with why and what would change it."""
    lines = [f"{style('per ASI category', 'bold')} (score 0-100, higher is safer):"]
    for asi, state in category_states(report).items():
        line = f"  {asi} {category_text(state):<22} findings {state.findings}"
        if state.state == "undertested" and state.unjudged:
            line += f", {state.unjudged} unjudged"
        if state.reason and state.state != "tested":
            line += f" · {one_line(state.reason, 200)}"
        lines.append(line)
    return lines


def _agreement_lines(report: ScanReport, view: View) -> list[str]:
    """The agreement with AgentDojo's checks (--suite agentdojo): the table, then each kind of
    disagreement with how many and why; ``-v`` lists every disagreement."""
    agreement = report.agreement
    if agreement is None:
        return []
    style = Style(view.out)
    rows = [HEADERS, *agreement_rows(agreement)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    lines = [f"{style('agreement:', 'bold')} {clean(agreement_heading(agreement))}"]
    for row in rows:
        lines.append("  " + "  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)))
    kinds = difference_counts(agreement)
    if kinds:
        lines.append(f"  disagreements: {len(agreement.disagreements)}, by why:")
    for kind, count in kinds:
        lines.append(f"  {count:>5}  {kind}: {DIFFERENCES[kind]}")
    if view.verbose:
        for item in agreement.disagreements:
            said = "succeeded" if item.agentdojo else "failed"
            lines.append(
                f"    {clean(item.probe_id)}  probegate {item.probegate}, AgentDojo {said}  "
                f"({item.difference})"
            )
    return lines


def _closing_json(closing: Closing, view: View) -> dict[str, Any]:
    """The closing summary for machines (``--json``): the same facts as the text, as data."""
    report = closing.report
    return {
        "scan_id": closing.scan_id,
        "exit_code": closing.exit_code,
        "score": report.aivss,
        "band": report.band,
        "covers": coverage_text(report),
        "delivery": report.delivery.model_dump() if report.delivery is not None else None,
        "mode": report.mode,
        "stopped_reason": report.stopped_reason,
        "stopped": stop_text(report),
        "authoritative": report.authority.authoritative,
        "authority": authority_text(report),
        "authority_reasons": authority_reasons(report),
        "surface": surface_text(report.target),
        "findings": [
            {
                "severity": f.severity.value,
                "probe_id": f.probe_id,
                "name": f.name,
                "fp": f.fp,
                "evidence": evidence_text(f),
                "suppressed": f.suppressed is not None,
                "reproducer": f.pov_reference,
            }
            for f in most_severe_first(report.findings)
        ],
        "unjudged": [
            {
                "cause": g.cause.value,
                "reason": g.label,
                "count": g.count,
                "fix": g.fix,
                "probes": g.probes,
            }
            for g in unjudged_groups(report)
        ],
        "undertested": list(report.undertested),
        "categories": {
            asi: state.model_dump(mode="json") for asi, state in category_states(report).items()
        },
        "not_run": [n.probe_id for n in report.not_run],
        "controls": report.controls.model_dump(),
        "judge": report.judge.model_dump() if report.judge is not None else None,
        "agreement": _agreement_json(report),
        "confirm": [
            asdict(row) for row in (confirm_rows(report.comparison) if report.comparison else [])
        ],
        "notes": list(view.notes),
        "gates": list(closing.gates),
        "files": {name: shown(path) for name, path in closing.written.items()},
        "resume": closing.resume,
    }


def _agreement_json(report: ScanReport) -> dict[str, Any] | None:
    """The agreement's counts and rates (the disagreements themselves are in scan.json)."""
    agreement = report.agreement
    if agreement is None:
        return None
    data = agreement.model_dump(mode="json", exclude={"disagreements"})
    data["disagreements"] = len(agreement.disagreements)
    return data
