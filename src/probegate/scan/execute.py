"""Stage 3, execute: the plan's attempts run against the target, journaled as they complete.

A new scan gets an id and a fresh journal; a resumed one continues its own journal, on its own
target, plan and effective config, and never sends a completed attempt again. One process at a
time runs a scan: the scan's lock (engine/lock.py) is taken before its journal is read or
started, and held in the caller's ``held`` stack until the report is written. An interrupt
(Ctrl-C, or SIGTERM when CI cancels the job) is one more way for the run to stop: the attempts
that completed are in the journal, and the later stages write the partial report like any
other. A second interrupt stops at once.
"""

from __future__ import annotations

import contextlib
import secrets
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from pydantic import ValidationError

from probegate.canonical import canonical_bytes
from probegate.clock import iso, new_scan_id, now
from probegate.engine.controls import control_id
from probegate.engine.journal import (
    Journal,
    JournalHeader,
    changed_keys,
    config_digests,
    read_journal,
    write_invocation,
)
from probegate.engine.lock import lock_scan
from probegate.engine.plan import Plan, confirm_bound
from probegate.engine.run_state import RunOutcome
from probegate.engine.runner import Runner
from probegate.errors import Interrupted, UsageError
from probegate.files import MAX_INPUT_BYTES, read_bytes, write_atomic
from probegate.models.placeholders import stored_key
from probegate.models.redaction import Redactor
from probegate.models.report import JudgeUsage, TargetInfo
from probegate.models.store_layout import ScanFiles
from probegate.models.verdict import Attempt
from probegate.reports.headline import target_text
from probegate.scan.planning import say_what_cannot_apply
from probegate.scan.prepare import ScanInputs
from probegate.scan.progress import ProgressPrinter
from probegate.scan.settings import RunSettings
from probegate.scan.view import View
from probegate.targets.base import Notice, Target
from probegate.terminal import clean


@dataclass(frozen=True)
class Execution:
    """What the run left: the scan's identity, its files in the store and its outcome."""

    scan_id: str
    created_at: str
    files: ScanFiles
    info: TargetInfo
    outcome: RunOutcome
    # What stopped the run when it was interrupted (SIGINT unless a SIGTERM came first).
    interrupted: Interrupted
    requests_used: int
    # What the LLM judge did and cost, this run and the runs it resumes; None without one.
    judge_usage: JudgeUsage | None = None
    # Runs more attempts of this scan beyond its plan (--confirm N); None when not asked for.
    rerun: Rerun | None = None


@dataclass
class Rerun:
    """More attempts of this scan after its plan (``--confirm N``, scan/confirm.py): the same
    runner (target, request limiter and budget, redaction, controls) and the same journal,
    open until the scan's report is written, so a resumed scan runs none of them twice."""

    runner: Runner
    journal: Journal
    # What an earlier run of this scan journaled beyond its plan: confirm attempts, controls.
    done: dict[str, Attempt]
    view: View

    def run(self, plan: Plan) -> tuple[RunOutcome, Interrupted | None]:
        """Run ``plan``'s attempts (those not journaled yet); the interrupt that stopped it."""
        wanted = {a.attempt_id for a in plan.attempts}
        wanted |= {control_id(a.probe.id, a.repeat) for a in plan.attempts}
        done = {k: a for k, a in self.done.items() if k in wanted}
        cancel = threading.Event()
        progress = ProgressPrinter(self.view.err, quiet=self.view.quiet)
        progress.start()
        try:
            with _stop_on_signals(cancel) as received:
                outcome = self.runner.run(
                    plan, journal=self.journal, done=done, on_progress=progress, cancel=cancel
                )
        finally:
            progress.finish()
        return outcome, Interrupted(received[0]) if received else None


@dataclass(frozen=True)
class _Journaled:
    """Where a scan's journal stands before the run: a new one, or a resumed one's contents
    (``beyond``: its attempts beyond the plan, for ``--confirm``)."""

    scan_id: str
    created_at: str
    salt: str
    done: dict[str, Attempt]
    beyond: dict[str, Attempt] = field(default_factory=dict)


def run_attempts(
    target: Target,
    plan: Plan,
    settings: RunSettings,
    inputs: ScanInputs,
    view: View,
    held: contextlib.ExitStack,
) -> Execution:
    """Run the plan: lock the scan and open (or resume) its journal, both held in ``held``
    until the report is written, and run every attempt."""
    info = target.info()
    scan_id = settings.resume or new_scan_id(plan.fingerprint + info.ref)
    files = ScanFiles.of(settings.store, scan_id)
    if settings.resume and not files.directory.is_dir():
        read_journal(files.journal)  # nothing to resume: its one message
    lock = held.enter_context(lock_scan(files.directory, scan_id))
    if lock.warning:
        view.err.write(f"warning: {clean(lock.warning)}\n")
    if lock.taken_over is not None:
        view.err.write(
            f"warning: scan {scan_id}: the run that held it ({clean(lock.taken_over.describe())})"
            " ended without releasing it; this run takes over\n"
        )
    config = effective_config(target, plan, settings, inputs)
    beyond = {a.attempt_id for a in confirm_bound(plan, settings.confirm, settings.repeat)}
    started = (
        _resume(files, plan, info, config, view, beyond) if settings.resume else _start(scan_id)
    )
    if not settings.resume:
        # A pinned clock repeats scan ids by design; a new scan never appends to an old journal.
        files.journal.unlink(missing_ok=True)
        files.judge_usage.unlink(missing_ok=True)
    journal = Journal(
        files.journal,
        JournalHeader(
            scan_id=started.scan_id,
            plan=plan.fingerprint,
            created_at=started.created_at,
            target=info.ref,
            redaction_salt=started.salt,
            config=config_digests(config, started.salt),
        ),
    )
    held.callback(journal.close)
    if settings.invocation and not settings.resume:
        write_invocation(files, settings.invocation)
    runner = _runner(target, inputs, settings, started.salt)
    say_what_cannot_apply(plan, runner.tools, view)
    scanning = f"{plan.mode} mode, {len(plan.attempts)} attempts, scan {started.scan_id}"
    _announce(target, view, f"scanning {target_text(info)} ({scanning})")
    cancel = threading.Event()
    progress = ProgressPrinter(view.err, quiet=view.quiet)
    progress.start()
    try:
        with _stop_on_signals(cancel) as received:
            outcome = runner.run(
                plan, journal=journal, done=started.done, on_progress=progress, cancel=cancel
            )
    finally:
        progress.finish()
    return Execution(
        scan_id=started.scan_id,
        created_at=started.created_at,
        files=files,
        info=info,
        outcome=outcome,
        interrupted=Interrupted(received[0] if received else signal.SIGINT),
        requests_used=inputs.limiter.state.requests,
        judge_usage=_judge_usage(files, inputs),
        rerun=Rerun(runner, journal, started.beyond, view) if settings.confirm else None,
    )


def _announce(target: Target, view: View, scanning: str) -> None:
    """What the scan is, and what the target tells the user as it starts (the model-API
    proxy's base URL); warnings even with ``--quiet``."""
    for notice in [Notice(scanning), *target.notices()]:
        if notice.warning:
            view.err.write(f"warning: {clean(notice.text)}\n")
        elif not view.quiet:
            view.err.write(f"probegate: {clean(notice.text)}\n")


def _runner(target: Target, inputs: ScanInputs, settings: RunSettings, salt: str) -> Runner:
    """The runner of this scan's attempts, storing them redacted with the scan's salt."""
    return Runner(
        target,
        inputs.limiter,
        settings.engine,
        llm_judge=inputs.llm_judge,
        redactor=Redactor(inputs.secrets, key=stored_key(salt, inputs.secrets)),
        # --suite agentdojo: each attempt's tools act on AgentDojo's environment.
        environments=inputs.benchmark,
    )


def _judge_usage(files: ScanFiles, inputs: ScanInputs) -> JudgeUsage | None:
    """This run's judge usage plus what the runs it resumes spent, kept beside the journal (a
    resumed scan's journaled verdicts are not asked again, but were paid for)."""
    if inputs.llm_judge is None:
        return None
    usage = inputs.llm_judge.stats.usage()
    path = files.judge_usage
    if path.is_file():
        try:
            earlier = JudgeUsage.model_validate_json(read_bytes(path, max_bytes=MAX_INPUT_BYTES))
        except (UsageError, ValidationError):
            earlier = None
        if earlier is not None and earlier.spec == usage.spec:
            usage = earlier.plus(usage)
    write_atomic(path, canonical_bytes(usage.model_dump(mode="json")), private=True)
    return usage


def effective_config(
    target: Target, plan: Plan, settings: RunSettings, inputs: ScanInputs
) -> dict[str, Any]:
    """What decides this scan's verdicts, by the names a refused resume shows: the journal's
    header keeps a digest of each (engine/journal.py), never a value."""
    tools = sorted(
        (
            {
                "name": tool.name,
                "description": tool.description,
                "capabilities": sorted(str(c) for c in tool.capabilities),
                "parameters": tool.parameters,
            }
            for tool in target.tools()
        ),
        key=lambda tool: str(tool["name"]),
    )
    return {
        "target": target.info().ref,
        "tools": tools,
        "capabilities": sorted(str(c) for c in plan.capabilities),
        "canaries": sorted(settings.engine.declared_canaries),
        "mode": plan.mode,
        "seed": plan.seed,
        "controls": plan.controls,
        "shard": plan.shard,
        "probes": [probe.id for probe in plan.probes],
        "probe library": inputs.library_version,
        "judge": settings.judge,
        "plan": plan.fingerprint,
    }


def _start(scan_id: str) -> _Journaled:
    return _Journaled(
        scan_id=scan_id,
        created_at=iso(now()),
        salt=secrets.token_hex(16),
        done={},
    )


def _resume(
    files: ScanFiles,
    plan: Plan,
    info: TargetInfo,
    config: dict[str, Any],
    view: View,
    beyond: set[str],
) -> _Journaled:
    """The journal of the scan being resumed, checked to be this target's, this config's and
    this plan's; the attempts it holds of ``beyond`` (what --confirm may add) kept apart."""
    contents = read_journal(files.journal)
    header, done = contents.header, dict(contents.attempts)
    scan_id = files.directory.name
    if header.target != info.ref:
        raise UsageError(
            f"scan {scan_id} scanned {header.target}, not {info.ref}: a resumed "
            f"scan continues on its own target; run 'probegate scan --resume {scan_id}' "
            "alone, or start a new scan"
        )
    salt = header.redaction_salt
    changed = changed_keys(header, config_digests(config, salt))
    if changed:
        raise UsageError(
            f"scan {scan_id} was started with another config: {', '.join(changed)} changed "
            "since; a resumed scan is judged under the config it started with: restore it, or "
            "start a new scan"
        )
    if header.plan != plan.fingerprint:
        raise UsageError(
            f"scan {scan_id} was started with different settings (plan {header.plan}, "
            f"now {plan.fingerprint}); rerun with the same target, mode, seed and selection, "
            f"or 'probegate scan --resume {scan_id}' alone"
        )
    # The plan's attempts and the controls they may need (journaled beside them).
    planned = {a.attempt_id for a in [*plan.all_attempts, *plan.control_bound]}
    kept = {k: done.pop(k) for k in sorted(set(done) & (beyond - planned))}
    foreign = sorted(set(done) - planned)
    for attempt_id in foreign:
        del done[attempt_id]
    warning = contents.warning()
    if foreign:
        warning += ("; " if warning else f"journal {files.journal}: ") + (
            f"ignored {len(foreign)} attempt(s) that are not in this scan's plan"
        )
    if warning:
        view.err.write(f"warning: {clean(warning)}\n")
    return _Journaled(
        scan_id=scan_id, created_at=header.created_at, salt=salt, done=done, beyond=kept
    )


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
