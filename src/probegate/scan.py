"""One scan, end to end: the single call the CLI (and the Action) makes.

config -> library selection -> target -> plan -> run (journal) -> report -> redact ->
suppressions -> sign -> store and emit -> baseline -> gates. Gates are evaluated only after
every report file is written, so a failing build still leaves its evidence behind.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from probegate.baseline import compare
from probegate.clock import iso, new_scan_id, now
from probegate.config import ScanConfig
from probegate.engine.assemble import ScanMeta, assemble
from probegate.engine.journal import Journal, read_journal, scan_dir
from probegate.engine.plan import Plan, build_plan
from probegate.engine.runner import Progress, Runner
from probegate.errors import ReportError, TargetError, UsageError
from probegate.files import write_atomic
from probegate.gate import evaluate_gates
from probegate.judge.attempt import LlmJudge
from probegate.judge.llm import build_judge
from probegate.library.loader import Library, load_directory, load_library
from probegate.library.probe import Probe
from probegate.models.report import Budget, Engine, ScanReport
from probegate.models.stored import load_report
from probegate.models.taxonomy import ASI_IDS, Severity
from probegate.models.verdict import Attempt
from probegate.reports import FORMATS, parse_formats, write_outputs
from probegate.reports.redact import redact_report
from probegate.reports.signing import sign_report, signing_material_from_env
from probegate.suppressions import SuppressionEntry, apply_suppressions, load_suppressions
from probegate.targets.base import Target, capabilities_of
from probegate.targets.registry import build_target
from probegate.terminal import clean
from probegate.transport.limiter import RequestLimiter
from probegate.transport.pricing import cost_usd, price_table
from probegate.workspace import anchor, repository_root


class ProgressPrinter:
    """Progress on stderr: a live line on a terminal, a line every few seconds otherwise."""

    def __init__(self, err: TextIO, *, quiet: bool) -> None:
        self.err = err
        self.quiet = quiet
        self.tty = err.isatty()
        self._last = 0.0
        self._interval = 0.1 if self.tty else 5.0

    def __call__(self, p: Progress) -> None:
        if self.quiet:
            return
        t = time.monotonic()
        if t - self._last < self._interval and p.done < p.total:
            return
        self._last = t
        line = f"[{p.done}/{p.total}] vulnerable {p.vulnerable} unjudged {p.unjudged}"
        if self.tty:
            self.err.write("\r" + line + ("\n" if p.done >= p.total else ""))
        else:
            self.err.write(line + "\n")
        self.err.flush()


ESTIMATE_PROMPT_TOKENS = 1000
ESTIMATE_COMPLETION_TOKENS = 300


def with_extra_probes(library: Library, config: ScanConfig) -> Library:
    """The bundled library plus the user's own probe directories (``--probe-dir``)."""
    if not config.probe_dirs:
        return library
    probes = list(library.probes)
    versions = [library.version]
    known = {p.id for p in probes}
    for directory in config.probe_dirs:
        path = directory if directory.is_absolute() else config.base_dir / directory
        if not path.is_dir():
            raise UsageError(f"probe directory {path} does not exist")
        extra = load_directory(path)
        for probe in extra.probes:
            if probe.id in known:
                raise UsageError(f"probe id {probe.id} in {path} is already in the library")
            known.add(probe.id)
        probes.extend(extra.probes)
        versions.append("custom." + extra.version.split("+")[-1])
    return Library(tuple(sorted(probes, key=lambda p: p.id)), "+".join(versions))


def _dry_run(plan: Plan, config: ScanConfig, out: TextIO) -> int:
    attempts = plan.all_attempts
    agent = config.target.agent_under_test()
    requests = sum(a.requests_upper_bound for a in attempts) * agent.max_turns
    out.write(
        f"plan {plan.fingerprint}: mode {plan.mode}, {len(plan.probes)} probes, "
        f"{len(attempts)} attempts (at most {requests} requests)\n"
    )
    if plan.escalations:
        out.write(
            f"  smart mode: up to {sum(len(v) for v in plan.escalations.values())} "
            "escalation attempts are included for probes the agent resists\n"
        )
    per_asi = {a: 0 for a in ASI_IDS}
    for a in attempts:
        per_asi[a.probe.asi] += 1
    for asi, count in per_asi.items():
        if count:
            out.write(f"  {asi}: {count} attempts\n")
    for probe_id, reason in sorted(plan.not_applicable.items()):
        out.write(f"  not applicable: {probe_id}: {reason}\n")
    table = price_table(agent.prices, agent.model)
    if table is not None:
        # An estimate, not a bound: real prompts grow with the conversation and the tools.
        per_request = cost_usd(
            agent.prices, agent.model, ESTIMATE_PROMPT_TOKENS, ESTIMATE_COMPLETION_TOKENS
        )
        out.write(
            f"  estimated cost: about ${requests * per_request:.2f} at most "
            f"(assuming ~{ESTIMATE_PROMPT_TOKENS} prompt and ~{ESTIMATE_COMPLETION_TOKENS} "
            "completion tokens per request; cap it with --budget-usd)\n"
        )
    else:
        out.write("  estimated cost: unknown (no price table for this model in target.prices)\n")
    return 0


def execute_scan(config: ScanConfig, *, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Run the scan the config describes and return the exit code."""
    formats = parse_formats(config.output)
    library = with_extra_probes(load_library(), config)
    probes = library.select(asi=config.asi, patterns=config.probes)
    if not probes:
        raise UsageError("no probe matches --asi/--probes (see 'probegate probes list')")
    # Inputs that can be wrong are read before the scan spends a single request.
    baseline = load_report(config.baseline) if config.baseline is not None else None
    suppressions = load_suppressions(
        _relative(config, config.suppressions), explicit=config.suppressions is not None
    )
    limiter = RequestLimiter(
        rps=config.rps, max_requests=config.max_requests, budget_usd=config.budget_usd
    )
    llm_judge = (
        build_judge(
            config.judge,
            timeout=config.timeout,
            limiter=limiter,
            prices=config.target.agent_under_test().prices,
            pool_size=config.concurrency,
        )
        if config.judge
        else None
    )
    # A dry run only plans: it must work before the secrets are set up.
    target_config = config.target.without_secrets() if config.dry_run else config.target
    target = build_target(target_config, config.target_settings())
    inputs = _Inputs(library.version, probes, formats, baseline, suppressions, llm_judge, limiter)
    try:
        return _execute(config, target, inputs, out, err)
    finally:
        target.close()
        if llm_judge is not None:
            llm_judge.close()


@dataclass(frozen=True)
class _Inputs:
    library_version: str
    probes: list[Probe]
    formats: list[str]
    baseline: ScanReport | None
    suppressions: tuple[SuppressionEntry, ...]
    llm_judge: LlmJudge | None
    limiter: RequestLimiter


def _relative(config: ScanConfig, path: Path | None) -> Path | None:
    """Paths from the config file are relative to it; flag paths are already resolved."""
    if path is None or path.is_absolute():
        return path
    return config.base_dir / path


def _execute(
    config: ScanConfig,
    target: Target,
    inputs: _Inputs,
    out: TextIO,
    err: TextIO,
) -> int:
    probes, formats = inputs.probes, inputs.formats
    tools = target.tools()
    caps = capabilities_of(tools)
    plan = build_plan(
        probes,
        caps,
        mode=config.mode,
        seed=config.seed,
        repeat=config.effective_repeat,
        shard=config.shard,
    )
    if config.dry_run:
        return _dry_run(plan, config, out)

    info = target.info()
    store = config.store
    done: dict[str, Attempt] = {}
    if config.resume:
        scan_id = config.resume
        header, done = read_journal(scan_dir(store, scan_id) / "journal.jsonl")
        if header.get("plan") != plan.fingerprint:
            raise UsageError(
                f"scan {scan_id} was started with different settings (plan {header.get('plan')}, "
                f"now {plan.fingerprint}); rerun with the same target, mode, seed and selection"
            )
        created_at = str(header.get("created_at"))
    else:
        scan_id = new_scan_id(plan.fingerprint + info.ref)
        created_at = iso(now())
    directory = scan_dir(store, scan_id)
    if info.definition is None:  # the demo, a target of flags: no file of the repo defines it
        written_first = [config.output_dir / FORMATS[name].filename for name in formats]
        info = info.model_copy(
            update={
                "definition": anchor([directory / "scan.json", *written_first], repository_root())
            }
        )
    if not config.resume:
        # A pinned clock repeats scan ids by design; a new scan never appends to an old journal.
        (directory / "journal.jsonl").unlink(missing_ok=True)
    journal = Journal(
        directory / "journal.jsonl",
        {
            "scan_id": scan_id,
            "plan": plan.fingerprint,
            "created_at": created_at,
            "target": info.ref,
        },
    )
    limiter = inputs.limiter
    runner = Runner(
        target,
        limiter,
        seed=config.seed,
        concurrency=config.concurrency,
        declared_canaries=config.target.declared_canaries(),
        record_dir=config.record,
        llm_judge=inputs.llm_judge,
    )
    if not config.quiet:
        err.write(
            f"probegate: scanning {info.ref} ({config.mode} mode, "
            f"{len(plan.attempts)} attempts, scan {scan_id})\n"
        )
    try:
        outcome = runner.run(
            plan, journal=journal, done=done, on_progress=ProgressPrinter(err, quiet=config.quiet)
        )
    finally:
        journal.close()

    selected_all = not config.asi and not config.probes and config.shard is None
    budget = Budget(
        cap_usd=config.budget_usd,
        max_requests=config.max_requests,
        requests_used=limiter.state.requests,
        finalise_truncated=outcome.stopped_reason == "budget",
    )
    meta = ScanMeta(
        scan_id=scan_id,
        created_at=created_at,
        mode=config.mode,
        seed=config.seed,
        duration_seconds=0.0 if os.environ.get("SOURCE_DATE_EPOCH") else outcome.duration_seconds,
        stopped_reason=outcome.stopped_reason,
        planned=outcome.planned,
        cut_short=outcome.cut_short,
        planned_probes=frozenset(a.probe.id for a in plan.attempts),
        unstarted_probes=frozenset(outcome.cut_probes),
        library_version=inputs.library_version,
        target=info,
        engine=Engine(
            commander="probegate",
            attacker="library+mutators" if config.mode != "fast" else "library",
            evaluator=config.judge or "oracle",
        ),
        budget=budget,
        selected_all=selected_all,
        shard=config.shard,
        store_dir=store.as_posix(),
    )
    report = assemble(list(plan.probes), outcome.attempts, plan.not_applicable, meta)
    section = target.report_section()
    if section is not None:  # what the kind adds: e.g. what a guard evaluated, blocked, missed
        report = report.model_copy(update={section.REPORT_FIELD: section})
    report = _finalise(report, config, inputs)
    write_atomic(directory / "scan.json", FORMATS["json"].render(report), error=ReportError)
    _write_povs(report, directory, config)
    written = write_outputs(report, formats, config.output_dir)
    _print_summary(report, written, out, quiet=config.quiet)
    if outcome.stopped_reason == "early_stop":
        raise TargetError(
            f"scan stopped early: {outcome.stop_message}. Nothing was gated: the target could "
            f"not be judged. Partial report: {written.get('json', directory / 'scan.json')}"
        )
    if outcome.undecided:
        raise TargetError(
            f"the target could not be judged: {outcome.undecided}. Nothing was gated. "
            f"Report: {written.get('json', directory / 'scan.json')}"
        )
    result = evaluate_gates(
        report,
        fail_under=config.fail_under,
        fail_on=Severity(config.fail_on) if config.fail_on else None,
        comparison=report.comparison,
    )
    for line in result.reasons:
        err.write(f"gate {clean(line)}\n")
    return result.exit_code


def _finalise(report: ScanReport, config: ScanConfig, inputs: _Inputs) -> ScanReport:
    """Redact, suppress, compare, sign: everything that happens before any bytes exist.

    The order matters: nothing secret may reach the comparison or the signed bytes, and an
    accepted (suppressed) finding is not a new regression.
    """
    report = redact_report(report, config.target.real_secrets())
    report = apply_suppressions(report, inputs.suppressions, now().date())
    if inputs.baseline is not None:
        comparison = compare(
            inputs.baseline,
            report,
            tolerance=config.tolerance,
            allow_mismatch=config.allow_mismatch,
        )
        report = report.model_copy(update={"comparison": comparison})
    if config.sign is False:
        return report
    secret, key_pem = signing_material_from_env(
        str(config.signing_key) if config.signing_key else None
    )
    if secret is None and key_pem is None:
        if config.sign:
            raise UsageError(
                "--sign needs PROBEGATE_SIGNING_SECRET and/or a key (--signing-key or "
                "PROBEGATE_SIGNING_KEY); 'probegate keys generate' writes one"
            )
        return report
    signed = sign_report(report.to_dict(), secret=secret, private_key_pem=key_pem)
    return report.model_copy(update={"signatures": signed.get("signatures")})


def _write_povs(report: ScanReport, directory: Path, config: ScanConfig) -> None:
    """A reproducer per finding: the command that replays that one probe, same seed."""
    pov_dir = directory / "pov"
    common = list(config.target_args)
    for extra in config.probe_dirs:
        common += ["--probe-dir", str((config.base_dir / extra).resolve())]
    for finding in report.findings:
        pov_dir.mkdir(parents=True, exist_ok=True)
        argv = [
            "probegate",
            "scan",
            *common,
            "--probes",
            finding.probe_id,
            "--mode",
            "fast",
            "--seed",
            str(report.seed),
            "--no-sign",
            "--output",
            "json,html",
            "--output-dir",
            "probegate-pov",
        ]
        script = (
            "#!/bin/sh\n# Reproduce finding "
            f"{finding.id} ({finding.probe_id}) with the same seed and planted canaries.\n"
            f"exec {shlex.join(argv)}\n"
        )
        path = pov_dir / f"{finding.probe_id}.sh"
        path.write_text(script, encoding="utf-8")
        path.chmod(0o755)


def _print_summary(
    report: ScanReport, written: dict[str, Path], out: TextIO, *, quiet: bool
) -> None:
    if quiet:
        return
    auth = "authoritative" if report.authority.authoritative else "not authoritative"
    out.write(f"score {report.aivss}/100  band {report.band}  ({report.mode} mode, {auth})\n")
    if not report.authority.authoritative:
        for reason in report.authority.reasons:
            out.write(f"  - {clean(reason)}\n")
    counts = report.findings_summary
    out.write(
        f"findings: {len(report.findings)} (critical {counts.get('critical', 0)}, high "
        f"{counts.get('high', 0)}, medium {counts.get('medium', 0)}, low {counts.get('low', 0)})"
        f"; unjudged attempts: {len(report.unjudged)}\n"
    )
    by_asi: dict[str, int] = {}
    for f in report.findings:
        by_asi[f.asi] = by_asi.get(f.asi, 0) + 1
    for asi in ASI_IDS:
        if asi in report.asi_scores or asi in by_asi:
            score = report.asi_scores.get(asi)
            shown = f"{score:5.1f}" if score is not None else "  n/a"
            out.write(f"  {asi} {shown}  findings {by_asi.get(asi, 0)}\n")
    if report.undertested:
        out.write(f"undertested: {', '.join(report.undertested)}\n")
    for name, path in written.items():
        out.write(f"wrote {name}: {path}\n")
