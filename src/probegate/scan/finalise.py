"""Stage 4, finalise: the run's verdicts become the report, redacted, suppressed and signed.

The order matters: nothing secret may reach the comparison or the signed bytes, and an
accepted (suppressed) finding is not a new regression. ``--confirm N`` runs between the
comparison and the signature (scan/confirm.py), and the report is compared again with their
counts (:func:`reconsider`). Everything here happens before any bytes exist; the next stage
writes them.
"""

from __future__ import annotations

from pathlib import Path

from probegate.baseline import compare
from probegate.benchmarks.agentdojo import BENCHMARK_VERSION
from probegate.benchmarks.agreement import agreement
from probegate.clock import now, pinned
from probegate.engine.assemble import ScanMeta, assemble
from probegate.engine.plan import Plan
from probegate.models.comparison import Confirmation
from probegate.models.report import Budget, Engine, Mode, ScanReport, StopReason, TargetInfo
from probegate.reports import FORMATS, FormatName
from probegate.reports.redact import redact_report
from probegate.reports.signing import report_signatures
from probegate.scan.execute import Execution
from probegate.scan.planning import with_surface
from probegate.scan.prepare import ScanInputs
from probegate.scan.settings import ReportSettings
from probegate.scan.view import shown
from probegate.suppressions import apply_suppressions
from probegate.targets.base import Target
from probegate.workspace import anchor, repository_root


def build_report(
    run: Execution,
    plan: Plan,
    target: Target,
    inputs: ScanInputs,
    settings: ReportSettings,
    written_first: list[Path],
    store: Path,
) -> ScanReport:
    """The report of the run, redacted, suppressed and compared with the baseline; ready to be
    written once signed (:func:`sign`), after the confirm runs when there are any.

    ``written_first`` are the report files this scan writes, which a finding points at when no
    file of the repository defines the target (the demo, a target of flags).
    """
    outcome = run.outcome
    meta = ScanMeta(
        scan_id=run.scan_id,
        created_at=run.created_at,
        mode=plan.mode,
        seed=plan.seed,
        duration_seconds=0.0 if pinned() else outcome.duration_seconds,
        stopped_reason=outcome.stopped_reason,
        planned=outcome.planned,
        cut_short=outcome.cut_short,
        planned_probes=frozenset(a.probe.id for a in plan.attempts),
        unstarted_probes=frozenset(outcome.cut_probes),
        not_started=dict(outcome.not_started),
        library_version=inputs.library_version,
        target=with_surface(_anchored(run.info, [run.files.report, *written_first]), plan.exposure),
        engine=Engine(
            commander="probegate",
            attacker="library+mutators" if plan.mode != Mode.FAST else "library",
            evaluator=settings.judge or "oracle",
        ),
        budget=Budget(
            cap_usd=settings.budget_usd,
            max_requests=settings.max_requests,
            requests_used=run.requests_used,
            finalise_truncated=outcome.stopped_reason == StopReason.BUDGET,
        ),
        selected_all=settings.selected_all,
        shard=plan.shard,
        store_dir=shown(store),
        controls=plan.controls,
        judge=run.judge_usage,
        control_reruns=outcome.control_reruns,
    )
    report = assemble(
        list(plan.probes),
        outcome.attempts,
        plan.not_applicable,
        meta,
        outcome.controls,
        plan.not_run,
    )
    # What the kind adds: e.g. what a guard evaluated, blocked, missed; what the MCP server,
    # the model proxy or the A2A peers saw.
    sections = {section.REPORT_FIELD: section for section in target.report_sections()}
    if sections:
        report = report.model_copy(update=sections)
    benchmark = inputs.benchmark
    if benchmark is not None:  # probegate's verdicts against AgentDojo's own checks
        found = agreement(
            outcome.attempts.values(),
            package_version=benchmark.package_version,
            benchmark_version=BENCHMARK_VERSION,
            attack=benchmark.attack_name,
            judge=settings.judge or "off",
        )
        report = report.model_copy(update={"agreement": found})
    return _seal(report, inputs, settings)


def report_files(formats: list[FormatName], output_dir: Path) -> list[Path]:
    """The report files a scan asked for these formats writes, in order."""
    return [output_dir / FORMATS[name].filename for name in formats]


def _anchored(info: TargetInfo, files: list[Path]) -> TargetInfo:
    """The target's info, with the file a finding points at when no file defines the target."""
    if info.definition is not None:
        return info
    return info.model_copy(update={"definition": anchor(files, repository_root())})


def _seal(report: ScanReport, inputs: ScanInputs, settings: ReportSettings) -> ScanReport:
    """Redact, suppress, compare: in that order (see the module doc); :func:`sign` last."""
    report = redact_report(report, inputs.secrets)
    report = apply_suppressions(report, inputs.suppressions, now().date())
    return reconsider(report, inputs, settings)


def reconsider(
    report: ScanReport,
    inputs: ScanInputs,
    settings: ReportSettings,
    confirmation: Confirmation | None = None,
) -> ScanReport:
    """The report compared with the baseline, its confirm runs' counts pooled with its own
    (scan/confirm.py); as it is without a baseline."""
    if inputs.baseline is None:
        return report
    comparison = compare(
        inputs.baseline,
        report,
        tolerance=settings.tolerance,
        allow_mismatch=settings.allow_mismatch,
        confirmation=confirmation,
    )
    return report.model_copy(update={"comparison": comparison})


def sign(report: ScanReport, inputs: ScanInputs) -> ScanReport:
    """The report signed with the scan's secret or key, when it has one: the last change."""
    secret, key_pem = inputs.signing
    if secret is None and key_pem is None:
        return report
    signed = report_signatures(report.to_fields(), secret=secret, private_key_pem=key_pem)
    return report.model_copy(update={"signatures": signed})
