"""One scan, end to end: the single call the CLI (and the Action) makes.

config -> library selection -> target -> plan -> run (journal) -> report -> redact ->
suppressions -> sign -> store and emit -> baseline -> gates. Gates are evaluated only after
every report file is written, so a failing build still leaves its evidence behind.

An interrupt (Ctrl-C, or SIGTERM when CI cancels the job) is one more way for the run to
stop: the attempts that completed are in the journal, the partial report is written like any
other, and the closing lines say the scan id and the exact command that resumes it; the scan's
command line is stored with it, so ``probegate scan --resume SCAN_ID`` needs nothing else.
A second interrupt stops at once.

Everything that can make a scan fail for the user's reasons is checked before the first
request: the output directory, the store and the recording directory can be written, the
baseline can be compared with this scan, a dollar budget can be counted. Every secret the scan
knows of (the target's, the signing secret, the judge's key) is redacted from every file it
writes: attempts are stored redacted once judged (docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shlex
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from probegate.baseline import check_comparable, compare
from probegate.clock import iso, new_scan_id, now
from probegate.config import DEFAULT_STORE, ScanConfig
from probegate.engine.assemble import ScanMeta, assemble
from probegate.engine.journal import Journal, read_journal, scan_dir, write_invocation
from probegate.engine.plan import JUDGE_FLAG, Plan, build_plan
from probegate.engine.runner import Progress, Runner, RunOutcome, fill_fixtures
from probegate.errors import ExitCode, Interrupted, ReportError, TargetError, UsageError
from probegate.files import check_writable_dir, write_atomic
from probegate.gate import evaluate_gates
from probegate.judge.attempt import LlmJudge
from probegate.judge.llm import ENV_API_KEY, ENV_FALLBACK_API_KEY, OpenAIJudge, build_judge
from probegate.library.loader import Library, extend_library, load_library
from probegate.library.probe import Probe
from probegate.models.canaries import make_canaries
from probegate.models.redaction import Redactor, stored_key
from probegate.models.report import Budget, Engine, Finding, ScanReport
from probegate.models.stored import load_report
from probegate.models.taxonomy import ASI_IDS, SEVERITY_RANK, Severity
from probegate.models.verdict import Attempt
from probegate.reports import FORMATS, parse_formats, write_outputs
from probegate.reports.digest import authority_text, evidence_text, group_unjudged, stop_text
from probegate.reports.headline import asi_score_text, controls_text, out_of_100
from probegate.reports.redact import redact_report
from probegate.reports.signing import SECRET_ENV, sign_report, signing_material
from probegate.suppressions import SuppressionEntry, apply_suppressions, load_suppressions
from probegate.targets.base import ReplayInput, Target, capabilities_of
from probegate.targets.registry import build_target, spec_of
from probegate.targets.sandbox import Sandbox
from probegate.terminal import Style, clean, json_text, one_line
from probegate.transport.limiter import RequestLimiter
from probegate.transport.pricing import cost_usd, price_table
from probegate.workspace import anchor, repository_root


class ProgressPrinter:
    """Progress on stderr: a live line on a terminal, a line every few seconds otherwise, and
    the final count once the run is over (:meth:`finish`): controls may still run after the
    last attempt, and each of them reports progress too."""

    def __init__(self, err: TextIO, *, quiet: bool) -> None:
        self.err = err
        self.quiet = quiet
        self.tty = err.isatty()
        self._last = 0.0
        self._interval = 0.1 if self.tty else 5.0
        self._latest: Progress | None = None
        self._printed: Progress | None = None

    def __call__(self, p: Progress) -> None:
        if self.quiet:
            return
        self._latest = p
        t = time.monotonic()
        if t - self._last < self._interval:
            return
        self._last = t
        self._write(p)

    def finish(self) -> None:
        if self.quiet or self._latest is None:
            return
        if self._latest != self._printed:
            self._write(self._latest)
        if self.tty:
            self.err.write("\n")
            self.err.flush()

    def _write(self, p: Progress) -> None:
        self._printed = p
        counter = f"{p.phase} {p.phase_done}/{p.phase_total}" if p.phase else f"{p.done}/{p.total}"
        line = f"[{counter}] vulnerable {p.vulnerable} unjudged {p.unjudged}"
        if p.controls:
            line += f" controls {p.controls}"
        self.err.write(("\r\x1b[2K" + line) if self.tty else (line + "\n"))
        self.err.flush()


ESTIMATE_PROMPT_TOKENS = 1000
ESTIMATE_COMPLETION_TOKENS = 300


def with_extra_probes(library: Library, config: ScanConfig) -> Library:
    """The bundled library plus the user's own probe directories (``--probe-dir``)."""
    return extend_library(
        library, (d if d.is_absolute() else config.base_dir / d for d in config.probe_dirs)
    )


def _dry_run(plan: Plan, config: ScanConfig, out: TextIO) -> int:
    attempts = plan.all_attempts
    controls = plan.control_bound
    agent = config.target.agent_under_test()
    requests = sum(a.requests_upper_bound for a in attempts + controls) * agent.max_turns
    checked = (
        f" + up to {len(controls)} controls" if plan.controls else ", controls off (--no-controls)"
    )
    out.write(
        f"plan {plan.fingerprint}: mode {plan.mode}, {len(plan.probes)} probes, "
        f"{len(attempts)} attempts{checked} (at most {requests} requests)\n"
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
    if plan.not_run:
        out.write(f"  {_not_run_line(sorted(plan.not_run))}\n")
    out.write(f"  estimated cost: {_cost_estimate(config, requests)}\n")
    return 0


def _not_run_line(probe_ids: list[str]) -> str:
    """The one line that says which probes were left out for want of a judge."""
    return (
        f"not run: {len(probe_ids)} probe(s) only an LLM judge can decide "
        f"({', '.join(probe_ids)}); enable them with {JUDGE_FLAG} (docs/judge.md)"
    )


def _cost_estimate(config: ScanConfig, requests: int) -> str:
    """What the dry run can say about money, and why when it cannot say a number."""
    agent = config.target.agent_under_test()
    spec = spec_of(agent)
    if spec.positional or not spec.live:
        return "$0.00 (the agent runs inside probegate or is a recording: no paid API is called)"
    if not spec.endpoint:
        return "not estimated: this agent calls its models itself, out of probegate's sight"
    if price_table(agent.prices, agent.model) is None:
        model = f"model {agent.model!r}" if agent.model else "the model"
        return f"unknown: no price for {model} in target.prices (docs/targets.md)"
    # An estimate, not a bound: real prompts grow with the conversation and the tools.
    per_request = cost_usd(
        agent.prices, agent.model, ESTIMATE_PROMPT_TOKENS, ESTIMATE_COMPLETION_TOKENS
    )
    return (
        f"about ${requests * per_request:.2f} at most (assuming ~{ESTIMATE_PROMPT_TOKENS} "
        f"prompt and ~{ESTIMATE_COMPLETION_TOKENS} completion tokens per request; cap it "
        "with --budget-usd)"
    )


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
    formats = parse_formats(config.output)
    if not config.dry_run:
        # Where the results go is checked first: a scan that cannot keep them spends nothing.
        check_writable_dir(config.output_dir, what="output directory (--output-dir)")
        check_writable_dir(config.store, what="scan store (--store)")
        if config.record is not None:
            check_writable_dir(config.record, what="recording directory (--record)")
    library = with_extra_probes(load_library(), config)
    probes = library.select(asi=config.asi, patterns=config.probes)
    if not probes:
        raise UsageError("no probe matches --asi/--probes (see 'probegate probes list')")
    # Inputs that can be wrong are read before the scan spends a single request.
    baseline = load_report(config.baseline) if config.baseline is not None else None
    if baseline is not None:
        check_comparable(
            baseline,
            library_version=library.version,
            mode=config.mode,
            allow_mismatch=config.allow_mismatch,
        )
    suppressions = load_suppressions(
        _relative(config, config.suppressions), explicit=config.suppressions is not None
    )
    limiter = RequestLimiter(
        rps=config.rps,
        max_requests=config.max_requests,
        budget_usd=config.budget_usd,
        deadline=config.deadline,
        max_wait=config.max_wait,
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
    try:
        if config.budget_usd is not None and not config.allow_unpriced:
            _refuse_unpriced(config, llm_judge)
        signing = (None, None) if config.dry_run else _signing_material(config)
        # A dry run only plans: it must work before the secrets are set up.
        target_config = config.target.without_secrets() if config.dry_run else config.target
        target = build_target(target_config, config.target_settings())
    except BaseException:
        if llm_judge is not None:
            llm_judge.close()
        raise
    inputs = _Inputs(
        library.version,
        probes,
        formats,
        baseline,
        suppressions,
        llm_judge,
        limiter,
        {} if config.dry_run else scan_secrets(config),
        signing,
    )
    view = _View(out, err, quiet=config.quiet, verbose=verbose, as_json=as_json)
    try:
        return _execute(config, target, inputs, view)
    finally:
        target.close()
        if llm_judge is not None:
            llm_judge.close()


def _signing_material(config: ScanConfig) -> tuple[bytes | None, bytes | None]:
    """The secret and key the report will be signed with, checked before the scan runs: a key
    that cannot be read must not cost a whole scan and then its report."""
    secret, key_pem = signing_material(
        config.sign, str(config.signing_key) if config.signing_key else None
    )
    if secret is None and key_pem is None:
        return None, None
    sign_report({}, secret=secret, private_key_pem=key_pem)  # a short secret is refused here
    return secret, key_pem


def scan_secrets(config: ScanConfig) -> dict[str, str]:
    """Every secret this scan holds, by placeholder name: what no file it writes may contain.

    The target kind declares its own (``TargetConfig.real_secrets``); the scan adds the signing
    secret and the LLM judge's keys, set or not a judge is used: an agent should never see
    them, but one handed its environment (a system prompt read from /proc) would repeat them.
    """
    out = dict(config.target.real_secrets())
    for name, variable in (
        ("SIGNING_SECRET", SECRET_ENV),
        ("JUDGE_API_KEY", ENV_API_KEY),
        ("OPENAI_API_KEY", ENV_FALLBACK_API_KEY),
    ):
        value = os.environ.get(variable)
        if value and value not in out.values():
            out[name] = value
    return out


def _refuse_unpriced(config: ScanConfig, judge: LlmJudge | None) -> None:
    """``--budget-usd`` counts dollars only for priced models: refuse one it cannot count."""
    agent = config.target.agent_under_test()
    unpriced: list[str] = []
    if spec_of(agent).endpoint and price_table(agent.prices, agent.model) is None:
        unpriced.append(f"the target's model {agent.model or '(none)'!r}")
    if isinstance(judge, OpenAIJudge) and price_table(judge.prices, judge.model) is None:
        unpriced.append(f"the judge's model {judge.model!r}")
    if unpriced:
        raise UsageError(
            f"--budget-usd {config.budget_usd:g} cannot be enforced: no price for "
            f"{' or '.join(unpriced)} in target.prices (docs/targets.md). Add its prices, or "
            "pass --allow-unpriced to scan without a dollar cap for it (--max-requests still "
            "caps the requests)"
        )


@dataclass(frozen=True)
class _Inputs:
    library_version: str
    probes: list[Probe]
    formats: list[str]
    baseline: ScanReport | None
    suppressions: tuple[SuppressionEntry, ...]
    llm_judge: LlmJudge | None
    limiter: RequestLimiter
    # What no file may contain, by placeholder name (scan_secrets).
    secrets: dict[str, str]
    # The HMAC secret and the Ed25519 key (PEM) the report is signed with, if any.
    signing: tuple[bytes | None, bytes | None]


@dataclass
class _View:
    """Where and how much the scan says: text for people, or one JSON object for machines."""

    out: TextIO
    err: TextIO
    quiet: bool = False
    verbose: bool = False
    as_json: bool = False
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        """A line before the scan starts (what it cannot do, and why), on stderr."""
        self.notes.append(text)
        if not self.quiet:
            self.err.write(f"{Style(self.err)('note:', 'yellow')} {text}\n")


def _relative(config: ScanConfig, path: Path | None) -> Path | None:
    """Paths from the config file are relative to it; flag paths are already resolved."""
    if path is None or path.is_absolute():
        return path
    return config.base_dir / path


@contextlib.contextmanager
def _stop_on_signals(cancel: threading.Event) -> Iterator[list[int]]:
    """The first Ctrl-C or SIGTERM asks the runner to stop cleanly; a second one stops now."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if received:
            raise Interrupted(signum)
        received.append(signum)
        cancel.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)


def _execute(config: ScanConfig, target: Target, inputs: _Inputs, view: _View) -> int:
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
        variant=config.variant,
        controls=config.controls,
        judge=inputs.llm_judge is not None,
    )
    if config.dry_run:
        return _dry_run(plan, config, view.out)
    if not plan.attempts and not plan.escalations:
        raise UsageError(_nothing_to_run(plan, config))

    info = target.info()
    store = config.store
    done: dict[str, Attempt] = {}
    salt = secrets.token_hex(16)
    if config.resume:
        scan_id = config.resume
        journal_path = scan_dir(store, scan_id) / "journal.jsonl"
        contents = read_journal(journal_path)
        header, done = contents.header, contents.attempts
        if header.get("target") not in (None, info.ref):
            raise UsageError(
                f"scan {scan_id} scanned {header.get('target')}, not {info.ref}: a resumed "
                f"scan continues on its own target; run 'probegate scan --resume {scan_id}' "
                "alone, or start a new scan"
            )
        if header.get("plan") != plan.fingerprint:
            raise UsageError(
                f"scan {scan_id} was started with different settings (plan {header.get('plan')}, "
                f"now {plan.fingerprint}); rerun with the same target, mode, seed and selection, "
                f"or 'probegate scan --resume {scan_id}' alone"
            )
        # The plan's attempts and the controls they may need (journaled beside them).
        planned = {a.attempt_id for a in [*plan.all_attempts, *plan.control_bound]}
        foreign = sorted(set(done) - planned)
        for attempt_id in foreign:
            del done[attempt_id]
        warning = contents.warning()
        if foreign:
            warning += ("; " if warning else f"journal {journal_path}: ") + (
                f"ignored {len(foreign)} attempt(s) that are not in this scan's plan"
            )
        if warning:
            view.err.write(f"warning: {clean(warning)}\n")
        created_at = str(header.get("created_at"))
        salt = str(header.get("redaction_salt") or salt)
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
            "redaction_salt": salt,
        },
    )
    if config.invocation and not config.resume:
        write_invocation(directory, config.invocation)
    limiter = inputs.limiter
    runner = Runner(
        target,
        limiter,
        seed=config.seed,
        concurrency=config.concurrency,
        declared_canaries=config.target.declared_canaries(),
        record_dir=config.record,
        llm_judge=inputs.llm_judge,
        redactor=Redactor(inputs.secrets, key=stored_key(salt, inputs.secrets)),
        controls=config.controls,
    )
    _say_what_cannot_apply(plan, runner, tools, view)
    if not view.quiet:
        view.err.write(
            f"probegate: scanning {clean(info.ref)} ({config.mode} mode, "
            f"{len(plan.attempts)} attempts, scan {scan_id})\n"
        )
    cancel = threading.Event()
    progress = ProgressPrinter(view.err, quiet=view.quiet)
    try:
        with _stop_on_signals(cancel) as received:
            outcome = runner.run(
                plan, journal=journal, done=done, on_progress=progress, cancel=cancel
            )
    finally:
        journal.close()
        progress.finish()
    interrupted = Interrupted(received[0] if received else signal.SIGINT)

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
        store_dir=_shown(store),
        controls=config.controls,
    )
    report = assemble(
        list(plan.probes),
        outcome.attempts,
        plan.not_applicable,
        meta,
        outcome.controls,
        plan.not_run,
    )
    section = target.report_section()
    if section is not None:  # what the kind adds: e.g. what a guard evaluated, blocked, missed
        report = report.model_copy(update={section.REPORT_FIELD: section})
    report = _finalise(report, config, inputs)
    write_atomic(
        directory / "scan.json", FORMATS["json"].render(report), error=ReportError, private=True
    )
    _write_povs(report, directory, config, inputs.secrets)
    _write_replays(report, directory, config, plan, target, inputs.secrets)
    written = write_outputs(report, formats, config.output_dir)
    _remove_stale_outputs(config.output_dir, written)
    report_path = written.get("json", directory / "scan.json")
    closing = _Closing(report, written, outcome, scan_id)
    if outcome.stopped_reason == "cancelled":
        closing.resume = resume_command(scan_id, config)
        closing.exit_code = interrupted.exit_code
        _print_closing(closing, view)
        view.err.write(
            f"{Style(view.err)('interrupted', 'bold', 'yellow')} by {interrupted.what}: scan "
            f"{scan_id} kept {len(outcome.attempts)} completed attempts in its journal"
            + (f" ({outcome.discarded} in flight will run again)" if outcome.discarded else "")
            + f"; partial report: {_shown(report_path)}\n"
            f"resume with: {closing.resume}\n"
        )
        return interrupted.exit_code
    if outcome.stopped_reason == "early_stop":
        closing.exit_code = ExitCode.UNDECIDED
        _print_closing(closing, view)
        raise TargetError(
            f"scan stopped early: {outcome.stop_message}. Nothing was gated: the target could "
            f"not be judged. Partial report: {_shown(report_path)}"
        )
    if outcome.undecided:
        closing.exit_code = ExitCode.UNDECIDED
        _print_closing(closing, view)
        raise TargetError(
            f"the target could not be judged: {outcome.undecided}. Nothing was gated. "
            f"Report: {_shown(report_path)}"
        )
    result = evaluate_gates(
        report,
        fail_under=config.fail_under,
        fail_on=Severity(config.fail_on) if config.fail_on else None,
        comparison=report.comparison,
    )
    closing.exit_code = result.exit_code
    closing.gates = list(result.reasons)
    _print_closing(closing, view)
    for line in result.reasons:
        view.err.write(f"gate {clean(line)}\n")
    return result.exit_code


def _nothing_to_run(plan: Plan, config: ScanConfig) -> str:
    if plan.not_run and len(plan.not_run) + len(plan.not_applicable) == len(plan.probes):
        return (
            f"every selected probe that applies needs an LLM judge: "
            f"{_not_run_line(sorted(plan.not_run))}"
        )
    if plan.not_applicable and len(plan.not_applicable) == len(plan.probes):
        return (
            f"none of the {len(plan.probes)} selected probes can apply to this target: "
            + _applicability_summary(plan.not_applicable)
        )
    if config.variant is not None:
        return (
            f"no selected probe has a {config.variant!r} variant (only probes with a payload "
            "have mutated variants; see 'probegate probes show ID')"
        )
    return "nothing to run: the selection (--asi/--probes/--shard) leaves no attempt"


def _applicability_summary(not_applicable: dict[str, str]) -> str:
    """Why probes cannot apply, by missing capability, largest first."""
    by_reason: dict[str, int] = {}
    for reason in not_applicable.values():
        by_reason[reason] = by_reason.get(reason, 0) + 1
    ranked = sorted(by_reason.items(), key=lambda kv: -kv[1])
    parts = [f"{reason} ({count})" for reason, count in ranked]
    more = f"; and {len(parts) - 4} more reasons" if len(parts) > 4 else ""
    return "; ".join(parts[:4]) + more


# A scan that can apply fewer than this share of its selected probes says why before it starts.
FEW_PROBES_FRACTION = 0.5


def _say_what_cannot_apply(plan: Plan, runner: Runner, tools: list[Any], view: _View) -> None:
    """Before the first request: which probes this target cannot be tested on, and the fix."""
    selected = len(plan.probes)
    if not selected:
        return
    if plan.not_run:  # said once, before the first request
        view.note(_not_run_line(sorted(plan.not_run)))
    skipped = len(plan.not_applicable)
    planned = {a.probe.id: a.probe for a in plan.attempts}
    blind: dict[str, int] = {}
    for probe in planned.values():
        why = runner.undeliverable(probe)
        if why is not None:
            key = why.split(":")[0]
            blind[key] = blind.get(key, 0) + 1
    unusable = skipped + sum(blind.values())
    if skipped and not tools:
        view.note(
            f"{skipped} of {selected} probes cannot apply: the target declares no tools. "
            "Declare the agent's tools with their capabilities under target.tools "
            "(docs/targets.md) so the probes that attack through tools can run."
        )
    elif skipped and skipped >= FEW_PROBES_FRACTION * selected:
        view.note(
            f"{skipped} of {selected} probes cannot apply to this target: "
            + _applicability_summary(plan.not_applicable)
            + ". Declare the missing capabilities on the agent's tools (docs/targets.md)."
        )
    for key, count in sorted(blind.items()):
        fix = (
            "the attack arrives through probegate's tool sandbox, which this target does not "
            "use (docs/targets.md)"
            if key == "not delivered"
            else "declare the agent's real secrets under target.canaries"
        )
        view.note(f"{count} planned probes will end unjudged ({key}): {fix}.")
    if unusable and unusable >= FEW_PROBES_FRACTION * selected and not view.quiet:
        view.note(
            f"only {selected - unusable} of {selected} selected probes can judge this target; "
            "its score will say little until the notes above are addressed."
        )


def resume_command(scan_id: str, config: ScanConfig) -> str:
    """The exact command that resumes ``scan_id`` from where the user stands."""
    argv = ["probegate", "scan", "--resume", scan_id]
    default_store = (Path.cwd() / DEFAULT_STORE).resolve()
    if config.store.resolve() != default_store:
        argv += ["--store", _shown(config.store)]
    if not config.invocation:  # started without a stored command line: repeat the target
        argv[2:2] = config.target_args
    return shlex.join(argv)


def _shown(path: Path) -> str:
    """A path as the user would type it from here: relative when it is below the cwd."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (OSError, ValueError):
        return str(path)


def _remove_stale_outputs(output_dir: Path, written: dict[str, Path]) -> None:
    """Report files of formats this scan did not write are an older scan's: remove them.

    Only probegate's own file names are touched, so the folder holds one scan's reports and a
    reader never mixes this scan's scan.json with an older run's report.html.
    """
    keep = {path.name for path in written.values()}
    for fmt in FORMATS.values():
        stale = output_dir / fmt.filename
        if fmt.filename in keep or not stale.is_file():
            continue
        with contextlib.suppress(OSError), stale.open("rb") as fh:
            ours = b"probegate" in fh.read(64 * 1024)
        if ours:  # a file of the same name that probegate did not write is the user's
            with contextlib.suppress(OSError):
                stale.unlink()


def _finalise(report: ScanReport, config: ScanConfig, inputs: _Inputs) -> ScanReport:
    """Redact, suppress, compare, sign: everything that happens before any bytes exist.

    The order matters: nothing secret may reach the comparison or the signed bytes, and an
    accepted (suppressed) finding is not a new regression.
    """
    report = redact_report(report, inputs.secrets)
    report = apply_suppressions(report, inputs.suppressions, now().date())
    if inputs.baseline is not None:
        comparison = compare(
            inputs.baseline,
            report,
            tolerance=config.tolerance,
            allow_mismatch=config.allow_mismatch,
        )
        report = report.model_copy(update={"comparison": comparison})
    secret, key_pem = inputs.signing
    if secret is None and key_pem is None:
        return report
    signed = sign_report(report.to_dict(), secret=secret, private_key_pem=key_pem)
    return report.model_copy(update={"signatures": signed.get("signatures")})


def _write_povs(
    report: ScanReport, directory: Path, config: ScanConfig, hidden: dict[str, str]
) -> None:
    """A reproducer per finding: the command that sends the attempt that found it again.

    Same mode, variant, repeat, seed and judge, so the same attempt id, mutated payload and
    planted canaries; paths relative to the repository root, which the script changes to, so
    it runs on another checkout too. A secret in the command line (a password in an endpoint
    URL) is never written: the script reads it from the variable its placeholder names and
    refuses to run without it. Every word is quoted for the shell (:func:`_shell_word`).
    """
    hide = Redactor(hidden, patterns=False)
    pov_dir = directory / "pov"
    root = repository_root().resolve()
    common = _repo_args(config.target_args, root)
    for extra in config.probe_dirs:
        common += ["--probe-dir", _repo_path((config.base_dir / extra).resolve(), root)]
    by_probe = {r.probe_id: r for r in report.results}
    for finding in report.findings:
        attempt = _reproduced_attempt(finding)
        argv = ["probegate", "scan", *common, "--probes", finding.probe_id, "--mode", report.mode]
        if attempt is not None:
            variant, repeat = attempt
            argv += ["--variant", variant, "--repeat", str(max(repeat + 1, 1))]
        if config.judge:
            argv += ["--judge", config.judge]
        argv += [
            "--seed",
            str(report.seed),
            "--no-sign",
            "--output",
            "json,html",
            "--output-dir",
            f"probegate-pov/{finding.probe_id}",
        ]
        if config.store.resolve() != (root / DEFAULT_STORE):
            argv += ["--store", _repo_path(config.store.resolve(), root)]
        back = os.path.relpath(root, pov_dir.resolve())
        outcome = by_probe.get(finding.probe_id)
        variables: list[str] = []
        command = " ".join(_shell_word(arg, hide, variables) for arg in argv)
        script = (
            "#!/bin/sh\n"
            f"# Reproduce finding {finding.id} ({finding.probe_id}): the attempt that found it,\n"
            f"# same mode ({report.mode}), variant, repeat, seed ({report.seed}) and judge.\n"
            + (
                f"# It was vulnerable in {outcome.vulnerable} of {outcome.attempts} attempts.\n"
                if outcome is not None
                else ""
            )
            + "# Paths are relative to the repository root, where this script runs.\n"
            + "".join(
                f': "${{{name}:?set {name} to the secret it stands for (never stored here)}}"\n'
                for name in dict.fromkeys(variables)
            )
            + f'cd "$(dirname "$0")"/{shlex.quote(back)} || exit 2\n'
            f"exec {command}\n"
        )
        write_atomic(
            pov_dir / f"{finding.probe_id}.sh",
            script,
            error=ReportError,
            private=True,
            executable=True,
        )


_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _shell_word(arg: str, hide: Redactor, variables: list[str]) -> str:
    """One argument as one shell word: its text single-quoted, each secret in it a
    ``"${NAME}"`` expansion of its placeholder's variable (appended to ``variables``).

    Redacting before quoting keeps a secret that holds a quote from surviving in its quoted
    spelling, and nothing but those expansions is ever read by the shell.
    """
    redacted, offsets = hide.text_with_map(arg)
    parts: list[str] = []
    cursor = 0
    for _start, _end, new_start, new_end in offsets.spans:
        name = redacted[new_start + 2 : new_end - 1]  # "${NAME}"
        if not _SHELL_NAME.fullmatch(name):
            continue  # quoted with the text around it, as the literal placeholder
        if new_start > cursor:
            parts.append(shlex.quote(redacted[cursor:new_start]))
        parts.append(f'"${{{name}}}"')
        variables.append(name)
        cursor = new_end
    if cursor < len(redacted) or not parts:
        parts.append(shlex.quote(redacted[cursor:]))
    return "".join(parts)


def _write_replays(
    report: ScanReport,
    directory: Path,
    config: ScanConfig,
    plan: Plan,
    target: Target,
    hidden: dict[str, str],
) -> None:
    """Beside each reproducer, a plain-Python script that sends the attempt's exact messages to
    the agent without probegate, for the agent's developers (a kind with an endpoint only).
    The scan's secrets in it (a declared canary the agent holds) are written as placeholders."""
    spec = spec_of(config.target)
    if spec.replay_script is None:
        return
    planned = {a.attempt_id: a for a in plan.all_attempts}
    tools = target.tools()
    declared = config.target.declared_canaries()
    for finding in report.findings:
        attempt_id = (finding.transcript_ref or "").partition("#")[2]
        attempt = planned.get(attempt_id)
        if attempt is None or finding.transcript is None:
            continue
        canaries = make_canaries(config.seed, attempt_id, declared)
        sandbox = Sandbox(
            tools,
            fill_fixtures(attempt.probe.fixtures, attempt.payload),
            canaries,
            attempt_id=attempt_id,
        )
        given = ReplayInput(
            title=f"Replay of finding {finding.id} ({finding.probe_id}), attempt {attempt_id}",
            transcript=finding.transcript,
            tool_descriptions={t.name: sandbox.tool_description(t) for t in tools},
            canaries=canaries,
            settings=config.target_settings(),
            evidence=evidence_text(finding),
            secrets=hidden,
        )
        write_atomic(
            directory / "pov" / f"{finding.probe_id}.replay.py",
            spec.replay_script(config.target, given),
            error=ReportError,
            private=True,
            executable=True,
        )


def _reproduced_attempt(finding: Finding) -> tuple[str, int] | None:
    """(variant, repeat) of the finding's first vulnerable attempt, from its transcript ref."""
    ref = finding.transcript_ref or ""
    parts = ref.rsplit("#", 2)
    if len(parts) == 3 and parts[2].isdigit():
        return parts[1], int(parts[2])
    return None


def _repo_path(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _repo_args(args: list[str], root: Path) -> list[str]:
    """The target arguments with every absolute path under the repository made relative."""
    return [_repo_path(Path(a), root) if os.path.isabs(a) else a for a in args]


@dataclass
class _Closing:
    """Everything the closing lines say, gathered before they are printed."""

    report: ScanReport
    written: dict[str, Path]
    outcome: RunOutcome
    scan_id: str
    exit_code: int = 0
    gates: list[str] = field(default_factory=list)
    resume: str | None = None


# Findings listed one per line before "and N more" (``-v`` lists every one).
LISTED_FINDINGS = 15
LISTED_CAUSES = 5


def _print_closing(closing: _Closing, view: _View) -> None:
    if view.as_json:
        data = _closing_json(closing, view)
        text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
        view.out.write(json_text(text) + "\n")
        view.out.flush()
        return
    if view.quiet:
        return
    view.out.write("".join(line + "\n" for line in _closing_lines(closing, view)))
    view.out.flush()


def _closing_lines(closing: _Closing, view: _View) -> list[str]:
    report, out = closing.report, view.out
    style = Style(out)
    auth = "authoritative" if report.authority.authoritative else "not authoritative"
    good = report.aivss is not None and report.aivss >= 80
    band = style(report.band, "bold", "green" if good else "red")
    lines = [
        f"score {out_of_100(report.aivss)}  band {band}  ({report.mode} mode, {auth})",
        f"  {style('stopped:', 'bold')} {clean(stop_text(report))}",
        f"  {style('authority:', 'bold')} {clean(authority_text(report))}",
    ]
    if closing.outcome.stop_message and report.stopped_reason == "early_stop":
        lines.append(f"  why it stopped: {one_line(closing.outcome.stop_message, 300)}")
    counts = report.findings_summary
    active = [f for f in report.findings if f.suppressed is None]
    suppressed = len(report.findings) - len(active)
    lines.append(
        f"{style('findings:', 'bold')} {len(report.findings)} (critical "
        f"{counts.get('critical', 0)}, high {counts.get('high', 0)}, medium "
        f"{counts.get('medium', 0)}, low {counts.get('low', 0)})"
        + (f", {suppressed} suppressed" if suppressed else "")
        + f"; unjudged attempts: {len(report.unjudged)}"
    )
    if report.controls is not None and (report.controls.run or not report.controls.enabled):
        lines.append(clean(controls_text(report)))
    ranked = sorted(report.findings, key=_finding_rank)
    shown = ranked if view.verbose else ranked[:LISTED_FINDINGS]
    width = max((len(f.probe_id) for f in shown), default=0)
    for finding in shown:
        sev = style.severity(f"{finding.severity.value:<8}", finding.severity.value)
        mark = " (suppressed)" if finding.suppressed is not None else ""
        lines.append(
            f"  {sev}  {finding.probe_id:<{width}}  {one_line(evidence_text(finding), 110)}{mark}"
        )
    if len(ranked) > len(shown):
        where = closing.written.get("html") or closing.written.get("md")
        lines.append(
            f"  … and {len(ranked) - len(shown)} more (-v lists them"
            + (f"; {_shown(where)} shows each with its transcript)" if where else ")")
        )
    groups = group_unjudged(report.unjudged)
    if groups:
        lines.append(
            f"{style('unjudged:', 'bold')} {len(report.unjudged)} attempts, not counted as "
            "resisted, by cause:"
        )
        listed = groups if view.verbose else groups[:LISTED_CAUSES]
        for group in listed:
            lines.append(f"  {group.count:>4}  {one_line(group.label, 160)}")
            if group.fix:
                lines.append(f"        fix: {group.fix}")
            lines.append(f"        probes: {one_line(group.probes_text(), 160)}")
        if len(groups) > len(listed):
            lines.append(f"  … and {len(groups) - len(listed)} more causes (-v lists them)")
    by_asi: dict[str, int] = {}
    for f in report.findings:
        by_asi[f.asi] = by_asi.get(f.asi, 0) + 1
    if report.asi_scores or report.undertested or by_asi:
        lines.append(f"{style('per ASI category', 'bold')} (score 0-100, higher is safer):")
    for asi in ASI_IDS:
        shown_score = asi_score_text(report, asi)
        if shown_score is not None or asi in by_asi:
            lines.append(f"  {asi} {shown_score or 'n/a':>5}  findings {by_asi.get(asi, 0)}")
    if report.undertested:
        lines.append(f"undertested: {', '.join(report.undertested)}")
    for name, path in closing.written.items():
        lines.append(f"wrote {name}: {_shown(path)}")
    return lines


def _finding_rank(finding: Finding) -> tuple[int, int, float, str]:
    return (
        finding.suppressed is not None,
        -SEVERITY_RANK[finding.severity],
        -finding.aivss_severity,
        finding.probe_id,
    )


def _closing_json(closing: _Closing, view: _View) -> dict[str, Any]:
    """The closing summary for machines (``--json``): the same facts as the text, as data."""
    report = closing.report
    return {
        "scan_id": closing.scan_id,
        "exit_code": closing.exit_code,
        "score": report.aivss,
        "band": report.band,
        "mode": report.mode,
        "stopped_reason": report.stopped_reason,
        "stopped": stop_text(report),
        "authoritative": report.authority.authoritative,
        "authority": authority_text(report),
        "authority_reasons": list(report.authority.reasons),
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
            for f in sorted(report.findings, key=_finding_rank)
        ],
        "unjudged": [
            {
                "cause": g.cause.key,
                "reason": g.label,
                "count": g.count,
                "fix": g.fix,
                "probes": g.probes,
            }
            for g in group_unjudged(report.unjudged)
        ],
        "undertested": list(report.undertested),
        "not_run": [n.probe_id for n in report.not_run],
        "controls": report.controls.model_dump() if report.controls is not None else None,
        "notes": list(view.notes),
        "gates": list(closing.gates),
        "files": {name: _shown(path) for name, path in closing.written.items()},
        "resume": closing.resume,
    }
