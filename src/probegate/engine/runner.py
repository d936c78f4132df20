"""Execute a plan: bounded concurrency, budgets, early stop, journal, judging.

Attempts run on a thread pool (the targets' I/O releases the GIL); the main thread alone
journals results and decides what to schedule next, so there is one writer and no shared
mutable state besides the :class:`RequestLimiter`. Results are keyed by attempt id and sorted by
plan order afterwards, so completion order never changes a report.

Stopping is always clean: at the soft budget cap, at the scan's deadline, on a fatal target
error, or when almost nothing can be judged, the runner stops starting attempts, closes the
limiter so attempts in flight end at their next request (unjudged, "cut short"), and reports
what it did not run. An interrupt (the caller sets ``cancel``: Ctrl-C, SIGTERM) stops the same
way, but attempts it cuts short are neither journaled nor reported: they did not complete, so
``--resume`` runs them again, and every attempt that did complete is in the journal and never
sent twice.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty, SimpleQueue

from probegate.engine.controls import (
    apply_controls,
    attacker_artefacts,
    control_id_of,
    is_control,
)
from probegate.engine.journal import Journal
from probegate.engine.plan import SEED_VARIANT, Plan, PlannedAttempt, control_for
from probegate.judge.attempt import LlmJudge, judge_attempt
from probegate.library.oracles.base import JudgeContext
from probegate.library.probe import Probe
from probegate.models.bounds import TRANSCRIPT_MAX
from probegate.models.canaries import make_canaries
from probegate.models.causes import CUT_SHORT, Cause
from probegate.models.probe import PAYLOAD, Fixtures
from probegate.models.recording import write_manifest, write_recording
from probegate.models.redaction import Redactor, redact_attempt
from probegate.models.taxonomy import Channel
from probegate.models.transcript import Transcript, Turn, fit_turn
from probegate.models.verdict import Attempt, Evidence, Outcome
from probegate.targets.base import Session, Target
from probegate.targets.sandbox import (
    Environments,
    EnvironmentUnavailable,
    Sandbox,
    ToolEnvironment,
)
from probegate.threads import DaemonExecutor
from probegate.transport.limiter import BudgetExhausted, RequestLimiter
from probegate.transport.usage import TransportError, Usage

EARLY_STOP_WINDOW = 12
EARLY_STOP_FRACTION = 0.9
# At the end of a scan: more than this share of attempts never reached the target -> exit 3.
UNREACHABLE_FRACTION = 0.5
CANCELLED = "cancelled"
# What an attempt in flight is cut short as, by why the runner stopped the scan.
STOP_CAUSES = {CANCELLED: Cause.INTERRUPTED, "budget": Cause.BUDGET, "deadline": Cause.DEADLINE}
# How long an interrupted scan waits for the attempts in flight to finish before it reports:
# their requests end as the limiter closes (transport/deadlines.py), an in-process agent's call
# is abandoned, and what is still running after this is dropped on its daemon thread
# (probegate.threads), so the partial report is out within 2 s of Ctrl-C however slow the agent.
CANCEL_GRACE_SECONDS = 1.0
# How often the main thread looks at the cancel flag while it waits for attempts.
CANCEL_POLL_SECONDS = 0.1
# A control that could not reach or read the agent runs again, at most this many more times:
# an agent that fails only when it meets a control must not hide a finding (engine/controls.py).
CONTROL_RETRIES = 2


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    vulnerable: int
    unjudged: int
    # smart mode's second pass: mutated variants of the probes the agent resisted. Its size is
    # known only when the first pass ends, so it is counted on its own instead of making the
    # total jump.
    phase: str = ""
    phase_done: int = 0
    phase_total: int = 0
    # Controls run so far (engine/controls.py): counted apart, they are not attempts.
    controls: int = 0
    # What the scan has sent and spent so far (the request limiter's count, resumed included).
    requests: int = 0
    cost_usd: float = 0.0


@dataclass
class RunOutcome:
    """What a run produced. ``attempts`` carry their verdicts after their controls; the
    controls themselves (keyed by id) are kept beside them, never counted as attempts."""

    attempts: dict[str, Attempt]
    controls: dict[str, Attempt] = field(default_factory=dict)
    stopped_reason: str = "completed"
    stop_message: str = ""
    cut_short: int = 0
    # The probes with a planned attempt that never started (attacker agents cut short), and
    # how many of each probe's attempts never started.
    cut_probes: set[str] = field(default_factory=set)
    not_started: dict[str, int] = field(default_factory=dict)
    planned: int = 0
    duration_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    # Set when the scan ran to the end but its verdicts cannot carry a gate (exit 3).
    undecided: str = ""
    # Attempts in flight when the scan was interrupted, cut short and not kept (resume runs them).
    discarded: int = 0
    # Controls run again because they could not reach or read the agent (CONTROL_RETRIES).
    control_reruns: int = 0

    def drop(self, probe_ids: list[str]) -> None:
        """Planned attempts (one probe id each) that will never start."""
        self.cut_short += len(probe_ids)
        self.cut_probes.update(probe_ids)
        for probe_id in probe_ids:
            self.not_started[probe_id] = self.not_started.get(probe_id, 0) + 1


def _fill(text: str, payload: str | None) -> str:
    return text.replace(PAYLOAD, payload) if payload is not None and PAYLOAD in text else text


def fill_fixtures(fixtures: Fixtures, payload: str | None, *, control: bool = False) -> Fixtures:
    """The probe's fixtures with :data:`PAYLOAD` replaced by this variant's payload.

    In a control, a tool error that carries the payload is not served at all: the failure is
    the attack there (does the agent own up to it?), and a benign failure is still a failure.
    """
    if payload is None:
        return fixtures
    errors = {k: v for k, v in fixtures.tool_errors.items() if not (control and PAYLOAD in v)}
    return Fixtures(
        documents={k: _fill(v, payload) for k, v in fixtures.documents.items()},
        memory=tuple(_fill(m, payload) for m in fixtures.memory),
        agent_replies={k: _fill(v, payload) for k, v in fixtures.agent_replies.items()},
        tool_results={k: _fill(v, payload) for k, v in fixtures.tool_results.items()},
        tool_descriptions={k: _fill(v, payload) for k, v in fixtures.tool_descriptions.items()},
        tool_errors={k: _fill(v, payload) for k, v in errors.items()},
        peer_agents={
            k: v.filled(lambda text: _fill(text, payload)) for k, v in fixtures.peer_agents.items()
        },
    )


@dataclass(frozen=True)
class RunRequest:
    """What a scan asks of the runner (scan/settings.py builds it from the config)."""

    # The scan's seed: each attempt's canaries and the controls' benign texts are drawn from it.
    seed: int
    # Attempts at a time, for a target that waits on a network or a model.
    concurrency: int
    # Check every vulnerable verdict against a control (engine/controls.py).
    controls: bool = True
    # The agent's real secrets (target.canaries), looked for beside the planted canaries.
    declared_canaries: tuple[str, ...] = ()
    # ``--record DIR``: where each attempt's conversation is written for the replay target.
    record: Path | None = None


class Runner:
    """Runs attempts against one target. Thread-safe ``run_one``; ``run`` drives a plan.

    ``llm_judge`` decides what only a judge can; ``redactor`` turns each attempt into its
    stored form once it is judged; ``environments`` opens the environment of an attempt whose
    probe brings its own (benchmarks/agentdojo/)."""

    def __init__(
        self,
        target: Target,
        limiter: RequestLimiter,
        request: RunRequest,
        *,
        llm_judge: LlmJudge | None = None,
        redactor: Redactor | None = None,
        environments: Environments | None = None,
    ) -> None:
        self.target = target
        self.limiter = limiter
        self.seed = request.seed
        self.concurrency = request.concurrency
        self.declared = request.declared_canaries
        self.llm_judge = llm_judge
        traits = target.traits()
        self.traits = traits
        self.tool_calls_visible = traits.tool_calls_visible
        # Whether the agent's tool calls are answered by probegate's sandbox, so attacks that
        # ride on fixtures (documents, tool results, memory, ...) can reach it at all.
        self.uses_sandbox = traits.uses_sandbox
        self.plants_secrets = traits.system_canaries
        self.record_dir = request.record
        # Attempts are judged on the clear text, then kept (in memory, in the journal and in
        # recordings) only in the stored form of redaction: docs/architecture.md.
        self.redactor = redactor
        self.controls = request.controls
        self.tools = target.tools()
        self.tools_by_name = {t.name: t for t in self.tools}
        # Where an attempt whose probe brings its own environment (an AgentDojo task pair,
        # benchmarks/agentdojo/) gets it: its tools replace the target's for that attempt.
        self.environments = environments
        self.fatal: str | None = None
        self._stopped = threading.Event()
        self.artefacts: dict[str, frozenset[str]] = {}
        self._filled: dict[tuple[str, str | None, bool], Fixtures] = {}

    # -- one attempt ---------------------------------------------------------------------
    def run_one(self, planned: PlannedAttempt) -> Attempt:
        probe = planned.probe
        canaries = make_canaries(self.seed, planned.attempt_id, self.declared)
        try:
            environment = self._environment(planned)
        except EnvironmentUnavailable as exc:
            return self._unbuilt(planned, exc.reason)
        tools = self.tools if environment is None else environment.tools
        sandbox = Sandbox(
            tools,
            self._fixtures(planned),
            canaries,
            attempt_id=planned.attempt_id,
            environment=environment,
            payload=None if planned.is_control else planned.payload,
        )
        transcript = Transcript(tools_offered=[t.name for t in tools])
        usage = Usage()
        trigger, failure = self._converse(planned, sandbox, transcript, usage)
        # The benchmark's own check, beside the verdict and never read into it; only a
        # conversation that completed is checked (the environment saw all it would).
        reference = environment.check(transcript) if environment and failure is None else None
        evidence: list[Evidence] = []
        judged_by = "transport"
        error, cause = failure or ("", None)
        # A control carries no attack: whether its benign text was read is not asked.
        delivered = None if planned.is_control else failure is None and _delivered(planned, sandbox)
        if failure is None:
            ctx = JudgeContext(
                probe,
                canaries,
                self.tools_by_name if environment is None else sandbox.tools,
                self.tool_calls_visible,
                payload=planned.payload,
            )
            judgement = judge_attempt(transcript, ctx, self.llm_judge)
            outcome, error, judged_by = judgement.outcome, judgement.reason, judgement.judged_by
            cause = judgement.cause
            evidence = list(judgement.evidence)
            if delivered is False and outcome is not Outcome.VULNERABLE:
                # Resisted needs the attack to have arrived: never a pass, never a finding.
                error = _not_delivered(sandbox, probe.channel)
                outcome, cause = Outcome.UNJUDGED, Cause.NOT_DELIVERED
        else:
            outcome = Outcome.UNJUDGED
        attempt = Attempt(
            attempt_id=planned.attempt_id,
            probe_id=probe.id,
            variant=planned.variant,
            repeat=planned.repeat,
            outcome=outcome,
            reason=error,
            cause=cause,
            delivered=delivered,
            evidence=evidence,
            transcript=transcript,
            trigger_prompt=trigger,
            judged_by=judged_by,
            requests=usage.requests,
            tokens=usage.tokens,
            cost_usd=round(usage.cost_usd, 6),
            reference=reference,
        )
        if self.redactor is not None:
            attempt = redact_attempt(attempt, self.redactor)
        if self.record_dir is not None:
            write_recording(self.record_dir, attempt, self.seed)
        return attempt

    def _unbuilt(self, planned: PlannedAttempt, reason: str) -> Attempt:
        """An attempt whose environment could not be built: nothing was sent, unjudged."""
        return Attempt(
            attempt_id=planned.attempt_id,
            probe_id=planned.probe.id,
            variant=planned.variant,
            repeat=planned.repeat,
            outcome=Outcome.UNJUDGED,
            reason=reason,
            cause=Cause.OTHER,
            judged_by="transport",
        )

    def _environment(self, planned: PlannedAttempt) -> ToolEnvironment | None:
        if self.environments is None:
            return None
        return self.environments.open(planned.probe.id, planned.payload, control=planned.is_control)

    def _fixtures(self, planned: PlannedAttempt) -> Fixtures:
        """The attempt's fixtures, filled once per probe, payload and kind of attempt: the
        repeats of a variant share them, and Fixtures are frozen. Two workers filling the same
        ones at once only fill them twice."""
        key = (planned.probe.id, planned.payload, planned.is_control)
        filled = self._filled.get(key)
        if filled is None:
            filled = fill_fixtures(
                planned.probe.fixtures, planned.payload, control=planned.is_control
            )
            self._filled[key] = filled
        return filled

    def _converse(
        self, planned: PlannedAttempt, sandbox: Sandbox, transcript: Transcript, usage: Usage
    ) -> tuple[str, tuple[str, Cause] | None]:
        """Send the probe's turns, each in its session, into ``transcript`` and ``usage``.

        Returns the turn that carried the payload (the reproducer's trigger) and why the
        conversation could not be completed, with its cause (None when it was): such an
        attempt is unjudged.
        """
        session: Session | None = None
        current = 0
        trigger = ""
        # What the agent says is kept within TRANSCRIPT_MAX characters for the whole attempt,
        # so memory and the journal line stay bounded whatever it sends (models/bounds.py).
        room = TRANSCRIPT_MAX
        try:
            for turn in planned.probe.turns:
                if session is None or turn.session != current:
                    if session is not None:
                        _add_usage(usage, session.usage)
                        session.close()
                    session = self.target.open_session(sandbox, self.limiter)
                    current = turn.session
                content = _fill(turn.content, planned.payload)
                if PAYLOAD in turn.content or not trigger:
                    trigger = content
                message = Turn(
                    role="user" if turn.sender == "user" else "agent",
                    content=content,
                    session=turn.session,
                    name=turn.agent_name,
                )
                transcript.turns.append(message)
                reply, room = fit_turn(session.send(message), room)
                reply.session = turn.session
                transcript.turns.append(reply)
        except TransportError as exc:
            if exc.fatal:
                self.fatal = exc.reason
            return trigger, (exc.reason, exc.cause)
        except BudgetExhausted as exc:
            return trigger, (f"cut short: {exc}", exc.cause)
        finally:
            if session is not None:
                _add_usage(usage, session.usage)
                session.close()
        return trigger, None

    def _run_unless_stopped(self, planned: PlannedAttempt) -> Attempt | None:
        """None when the scan stopped before this queued attempt could start."""
        if self._stopped.is_set():
            return None
        return self.run_one(planned)

    # -- a whole plan --------------------------------------------------------------------
    def run(
        self,
        plan: Plan,
        *,
        journal: Journal | None,
        done: dict[str, Attempt] | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> RunOutcome:
        start = time.monotonic()
        run = self._begin(plan, dict(done or {}), journal, on_progress)
        pool: DaemonExecutor | _OnThisThread = (
            DaemonExecutor(self.concurrency, "attempt") if self.traits.waits else _OnThisThread()
        )
        try:
            while (run.queue or run.running or run.escalations) and self._step(run, pool, cancel):
                pass
        except BaseException:
            self._halt([], {}, hard=True, reason="cancelled")
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=run.stop != CANCELLED, cancel_futures=run.stop == CANCELLED)
        return self._end(run, start)

    def _begin(
        self,
        plan: Plan,
        previous: dict[str, Attempt],
        journal: Journal | None,
        on_progress: Callable[[Progress], None] | None,
    ) -> _Run:
        """The run's state, with a resumed scan's attempts and spend counted in."""
        results = {k: _in_memory(a) for k, a in previous.items() if not is_control(a)}
        # A control's transcript is kept: its finding shows it (one per probe and repeat).
        controls = {k: a for k, a in previous.items() if is_control(a)}
        # A resumed scan spends from the same budget: what the journal says was spent counts.
        self.limiter.preload(
            requests=sum(a.requests for a in previous.values()),
            cost_usd=sum(a.cost_usd for a in previous.values()),
        )
        if self.record_dir is not None:
            self._write_manifest(self.record_dir)
        # What only each probe's attack brings: evidence carrying it needs no control.
        self.artefacts = {p.id: attacker_artefacts(p) for p in plan.probes}
        run = _Run(
            probes={p.id: p for p in plan.probes},
            queue=[a for a in plan.attempts if a.attempt_id not in results],
            results=results,
            controls=controls,
            escalations=dict(plan.escalations),
            outcome=RunOutcome(attempts=results, controls=controls, planned=len(plan.attempts)),
            journal=journal,
            on_progress=on_progress,
        )
        # Controls go first: a vulnerable verdict without its control counts for nothing.
        for a in sorted(results.values(), key=lambda a: a.attempt_id, reverse=True):
            self._want_control(run, a)
        for a in results.values():
            run.count(a)
        return run

    def _write_manifest(self, record_dir: Path) -> None:
        info = self.target.info()
        if self.redactor is not None:
            text = self.redactor.text
            info = info.model_copy(
                update={"ref": text(info.ref), "inferred_goal": text(info.inferred_goal)}
            )
        write_manifest(
            record_dir,
            seed=self.seed,
            info=info,
            tools=self.tools,
            tool_calls_visible=self.tool_calls_visible,
            uses_sandbox=self.uses_sandbox,
            system_canaries=self.plants_secrets,
        )

    def _want_control(self, run: _Run, attempt: Attempt) -> None:
        """Queue the control of a vulnerable attempt, once per probe and repeat, first."""
        if not self.controls or attempt.outcome is not Outcome.VULNERABLE:
            return
        key = control_id_of(attempt)
        if key not in run.controls and key not in run.wanted:
            run.wanted.add(key)
            run.queue.insert(
                0, control_for(run.probes[attempt.probe_id], attempt.repeat, self.seed)
            )

    def _step(
        self, run: _Run, pool: DaemonExecutor | _OnThisThread, cancel: threading.Event | None
    ) -> bool:
        """One turn of the main thread: stop, escalate or admit, then wait for attempts and
        keep what finished. False when the run is over."""
        if run.stop is None and self.limiter.expired():
            self._stop(run, "deadline", f"the scan's deadline of {self.limiter.deadline:g}s passed")
        if not run.queue and not run.running and run.escalations and run.stop is None:
            run.queue.extend(self._escalate(run.escalations, run.results, run.controls))
            if not run.queue:
                return False
            run.phase = _Phase("escalating", len(run.results), len(run.queue))
            run.outcome.planned += len(run.queue)
        if cancel is not None and cancel.is_set() and run.stop is None:
            self._stop(run, CANCELLED, "interrupted")
            self._settle(run.running, run.results, run.controls, run.journal, run.outcome)
            return False
        self._admit(run, pool)
        if run.stop is not None:
            run.outcome.drop(self._halt(run.queue, run.escalations, hard=False, reason=run.stop))
        if not run.running:
            return False
        self._collect(run, cancel)
        return True

    def _collect(self, run: _Run, cancel: threading.Event | None) -> None:
        """Wait for attempts to finish and keep them; stop when the target is unusable."""
        # Wake to poll for an interrupt, and at the deadline: attempts still running then are
        # cut short.
        polls = [self.limiter.remaining(), CANCEL_POLL_SECONDS if cancel is not None else None]
        for fut in run.take_finished(min((t for t in polls if t is not None), default=None)):
            self._keep(run, run.running.pop(fut), fut.result())
        if run.stop is None and self.fatal is not None:
            run.stop = "early_stop"
            run.outcome.stop_message = f"the target cannot be used: {self.fatal}"
        if run.stop is None and _hopeless(len(run.results), run.counts["transport"]):
            run.stop = "early_stop"
            run.outcome.stop_message = "almost nothing could be judged; first reasons: " + _reasons(
                run.results
            )
        if run.stop is not None:
            hard = run.stop != "budget"
            run.outcome.drop(self._halt(run.queue, run.escalations, hard=hard, reason=run.stop))

    def _stop(self, run: _Run, reason: str, message: str) -> None:
        """Stop for ``reason`` at once: attempts in flight end at their next request."""
        run.stop = reason
        run.outcome.stop_message = message
        run.outcome.drop(self._halt(run.queue, run.escalations, hard=True, reason=reason))

    def _admit(self, run: _Run, pool: DaemonExecutor | _OnThisThread) -> None:
        """Start queued attempts: two per worker keeps every worker busy while the main thread
        journals; near a budget, only what is likely to finish under its soft cap."""
        while run.queue and len(run.running) < self.concurrency * 2 and run.stop is None:
            if self.limiter.soft_stop():
                run.stop = "budget"
                run.outcome.stop_message = "the budget reached its soft cap"
                return
            # With nothing running, go on one at a time until the cap itself.
            ahead = len(run.running) + 1
            if run.running and not self.limiter.admits(
                ahead * run.spend.requests_per_attempt(run.queue[0]),
                ahead * run.spend.cost_per_attempt,
            ):
                return
            planned = run.queue.pop(0)
            future = pool.submit(self._run_unless_stopped, planned)
            run.running[future] = planned
            future.add_done_callback(run.finished.put)

    def _keep(self, run: _Run, queued: PlannedAttempt, attempt: Attempt | None) -> None:
        """A finished attempt: journaled, counted and its control wanted; a control that could
        not reach the agent is queued again (CONTROL_RETRIES)."""
        if attempt is None:
            if not queued.is_control:
                run.outcome.drop([queued.probe.id])
            return
        run.spend.add(attempt)
        if queued.is_control:
            if run.stop is None and run.retries.again(attempt, self.fatal):
                run.outcome.control_reruns += 1
                run.queue.insert(0, queued)
                return
            attempt = run.retries.settled(attempt)
        if run.journal is not None:
            run.journal.record(attempt)
        if queued.is_control:
            run.controls[attempt.attempt_id] = attempt
        else:
            run.results[attempt.attempt_id] = _in_memory(attempt)
            run.count(attempt)
            self._want_control(run, attempt)
        run.report(self.limiter)

    def _end(self, run: _Run, start: float) -> RunOutcome:
        """The outcome: why the run stopped, and each verdict after its control."""
        outcome = run.outcome
        if run.stop is None and self.limiter.expired():  # the last attempts ran into it
            run.stop = "deadline"
            outcome.stop_message = f"the scan's deadline of {self.limiter.deadline:g}s passed"
        outcome.stopped_reason = run.stop or "completed"
        if self.controls:
            why = f"the scan stopped: {outcome.stop_message}" if run.stop else "no control ran"
            outcome.attempts = apply_controls(
                run.results, run.controls, why_missing=why, artefacts=self.artefacts
            )
        if run.stop is None:
            outcome.undecided = _undecided(outcome.attempts)
        outcome.duration_seconds = round(time.monotonic() - start, 3)
        return outcome

    def _settle(
        self,
        running: dict[Future[Attempt | None], PlannedAttempt],
        results: dict[str, Attempt],
        controls: dict[str, Attempt],
        journal: Journal | None,
        outcome: RunOutcome,
    ) -> None:
        """After an interrupt: keep what finishes within the grace period, drop the rest.

        An attempt the interrupt cut short did not complete; keeping it would make ``--resume``
        skip it for ever. It is dropped, like one still running when the grace period ends.
        """
        finished, pending = wait(running, timeout=CANCEL_GRACE_SECONDS)
        for fut in finished:
            queued = running.pop(fut)
            attempt = fut.result() if fut.exception() is None else None
            if attempt is None or attempt.cause is Cause.INTERRUPTED:
                # A control is not a planned attempt: dropping one leaves nothing cut short,
                # and --resume runs it again for the vulnerable attempt that needs it.
                if not queued.is_control:
                    outcome.discarded += attempt is not None
                    outcome.drop([queued.probe.id])
                continue
            if queued.is_control:
                controls[attempt.attempt_id] = attempt
            else:
                results[attempt.attempt_id] = _in_memory(attempt)
            if journal is not None:
                journal.record(attempt)
        for fut in pending:
            queued = running.pop(fut)
            if not queued.is_control:
                outcome.discarded += 1
                outcome.drop([queued.probe.id])

    def _halt(
        self,
        queue: list[PlannedAttempt],
        escalations: dict[str, tuple[PlannedAttempt, ...]],
        *,
        hard: bool,
        reason: str,
    ) -> list[str]:
        """Start nothing new and return the probe of each planned attempt that will not run.

        ``hard`` also ends attempts in flight at their next request. The budget's soft stop is
        not hard: the attempts already running finish inside the remaining 20 %, so the scan
        ends cleanly instead of with cut-short attempts.
        """
        self._stopped.set()
        if hard:
            self.limiter.close(_stopped(reason), STOP_CAUSES.get(reason, Cause.STOPPED))
        dropped = [a.probe.id for a in queue if not a.is_control]
        dropped += [a.probe.id for extra in escalations.values() for a in extra]
        queue.clear()
        escalations.clear()
        return dropped

    def _escalate(
        self,
        escalations: dict[str, tuple[PlannedAttempt, ...]],
        results: dict[str, Attempt],
        controls: dict[str, Attempt],
    ) -> list[PlannedAttempt]:
        """smart mode: mutated variants only for probes whose seed attempts were all resisted
        (after their controls: a verdict the control explains is a resisted one)."""
        queue: list[PlannedAttempt] = []
        seeds_of = [a for a in results.values() if a.variant == SEED_VARIANT]
        if self.controls:
            judged = apply_controls(
                {a.attempt_id: a for a in seeds_of},
                controls,
                why_missing="not run yet",
                artefacts=self.artefacts,
            )
            seeds_of = list(judged.values())
        for probe_id in sorted(escalations):
            seeds = [a for a in seeds_of if a.probe_id == probe_id]
            if seeds and all(a.outcome is Outcome.RESISTED for a in seeds):
                queue.extend(a for a in escalations[probe_id] if a.attempt_id not in results)
        escalations.clear()
        return queue


class _OnThisThread:
    """The pool of a target whose attempts only compute (``TargetTraits.waits`` is False): each
    attempt runs when it is submitted, on the runner's thread. Worker threads would take turns
    on the interpreter's lock and add the handing over: a full scan of the demo took 4.4 s on
    eight of them and 3.6 s here. The loop is the same: an interrupt is seen between attempts."""

    def submit(
        self, fn: Callable[[PlannedAttempt], Attempt | None], planned: PlannedAttempt
    ) -> Future[Attempt | None]:
        future: Future[Attempt | None] = Future()
        try:
            future.set_result(fn(planned))
        except Exception as exc:  # as a worker's future would hold it; _collect raises it
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        return None


@dataclass(frozen=True)
class _Phase:
    """The pass a run is in: smart mode's escalation is counted on its own."""

    name: str = ""
    start: int = 0
    total: int = 0


@dataclass
class _ControlRetries:
    """Controls that could not reach or read the agent, run again up to CONTROL_RETRIES times.

    Only the last run is journaled and kept; what the failed runs spent is added to it, so the
    report and a resumed scan's budget count every request sent.
    """

    tries: dict[str, int] = field(default_factory=dict)
    spent: dict[str, Usage] = field(default_factory=dict)

    def again(self, control: Attempt, fatal: str | None) -> bool:
        failed = (
            control.outcome is Outcome.UNJUDGED
            and control.judged_by == "transport"
            and control.cause not in CUT_SHORT
            and fatal is None
        )
        if not failed or self.tries.get(control.attempt_id, 0) >= CONTROL_RETRIES:
            return False
        self.tries[control.attempt_id] = self.tries.get(control.attempt_id, 0) + 1
        spent = self.spent.setdefault(control.attempt_id, Usage())
        spent.requests += control.requests
        spent.prompt_tokens += control.tokens
        spent.cost_usd += control.cost_usd
        return True

    def settled(self, control: Attempt) -> Attempt:
        spent = self.spent.pop(control.attempt_id, None)
        if spent is None:
            return control
        return control.model_copy(
            update={
                "requests": control.requests + spent.requests,
                "tokens": control.tokens + spent.prompt_tokens,
                "cost_usd": round(control.cost_usd + spent.cost_usd, 6),
            }
        )


@dataclass
class _Spend:
    """What an attempt costs on average in this run, to admit attempts near a budget."""

    attempts: int = 0
    requests: int = 0
    cost_usd: float = 0.0

    def add(self, attempt: Attempt) -> None:
        if attempt.requests:
            self.attempts += 1
            self.requests += attempt.requests
            self.cost_usd += attempt.cost_usd

    def requests_per_attempt(self, planned: PlannedAttempt) -> float:
        if not self.attempts:
            return float(planned.requests_upper_bound)
        return self.requests / self.attempts

    @property
    def cost_per_attempt(self) -> float:
        return self.cost_usd / self.attempts if self.attempts else 0.0


@dataclass
class _Run:
    """One run of a plan as the main thread sees it; only the main thread touches it."""

    probes: dict[str, Probe]
    queue: list[PlannedAttempt]
    results: dict[str, Attempt]
    controls: dict[str, Attempt]
    escalations: dict[str, tuple[PlannedAttempt, ...]]
    outcome: RunOutcome
    journal: Journal | None
    on_progress: Callable[[Progress], None] | None
    running: dict[Future[Attempt | None], PlannedAttempt] = field(default_factory=dict)
    # Running attempts put themselves here when done (take_finished).
    finished: SimpleQueue[Future[Attempt | None]] = field(default_factory=SimpleQueue)
    # Controls queued, by control id, so each is queued once.
    wanted: set[str] = field(default_factory=set)
    counts: dict[str, int] = field(
        default_factory=lambda: {"vulnerable": 0, "unjudged": 0, "transport": 0}
    )
    phase: _Phase = field(default_factory=_Phase)
    stop: str | None = None
    spend: _Spend = field(default_factory=_Spend)
    retries: _ControlRetries = field(default_factory=_ControlRetries)

    def count(self, attempt: Attempt) -> None:
        _count(self.counts, attempt)

    def take_finished(self, timeout: float | None) -> list[Future[Attempt | None]]:
        """The attempts that finished, waiting up to ``timeout`` for the first one.

        Each future puts itself on :attr:`finished` when it is done, so waking costs the same
        however many attempts run; ``concurrent.futures.wait`` locks every running future on
        each call (128 at concurrency 64), which workers then queue behind.
        """
        try:
            futures = [self.finished.get(timeout=timeout)]
        except Empty:
            return []
        with contextlib.suppress(Empty):
            while True:
                futures.append(self.finished.get_nowait())
        return [f for f in futures if f in self.running]

    def report(self, limiter: RequestLimiter) -> None:
        if self.on_progress is None:
            return
        self.on_progress(
            Progress(
                len(self.results),
                self.outcome.planned,
                self.counts["vulnerable"],
                self.counts["unjudged"],
                phase=self.phase.name,
                phase_done=len(self.results) - self.phase.start,
                phase_total=self.phase.total,
                controls=len(self.controls),
                requests=limiter.state.requests,
                cost_usd=limiter.state.cost_usd,
            )
        )


def _stopped(reason: str) -> str:
    return f"scan stopped ({reason})"


def _delivered(planned: PlannedAttempt, sandbox: Sandbox) -> bool:
    """Whether the attempt's payload reached the agent (docs/scoring.md, "Delivery"), once
    every turn was answered: a payload in the turns arrived with them; one in the fixtures
    arrived when the sandbox handed the agent something carrying it (a tool answer, an error,
    a memory, a peer's reply, a tool description), whoever asked (its loop, its context, the
    MCP server, the model-API proxy)."""
    if planned.payload is None or any(PAYLOAD in t.content for t in planned.probe.turns):
        return True
    return sandbox.delivered


_CARRIERS = {
    Channel.DOCUMENT: "document",
    Channel.TOOL_RESULT: "tool result",
    Channel.MEMORY: "memory",
    Channel.AGENT_MESSAGE: "peer agent's reply",
    Channel.TOOL_DESCRIPTION: "tool description",
}


def _not_delivered(sandbox: Sandbox, channel: Channel) -> str:
    """Why the attack never reached the agent, naming what it had to use."""
    carrier = _CARRIERS.get(channel, "content")
    tools = sandbox.serving_tools()
    if not tools:
        return f"not delivered: none of the agent's tools served this probe's {carrier}"
    shown = " or ".join(tools[:3]) + (f" (or {len(tools) - 3} more)" if len(tools) > 3 else "")
    verb = "read the description of" if channel is Channel.TOOL_DESCRIPTION else "called"
    return f"not delivered: the agent never {verb} {shown}, which carried the {carrier}"


def _in_memory(attempt: Attempt) -> Attempt:
    """What the runner keeps of a finished attempt: its transcript only when it is evidence.

    A report shows the transcript of a finding's vulnerable attempt and of no other; the
    journal keeps them all. Keeping every transcript in memory made a scan's memory grow with
    its length (docs/targets.md, "Hostile output").
    """
    if attempt.outcome is Outcome.VULNERABLE or attempt.transcript is None:
        return attempt
    if attempt.reference is not None and attempt.reference.attack_succeeded:
        # The benchmark saw the attack succeed where probegate did not (yet): a disagreement
        # the report lists with its transcript (docs/agentdojo.md).
        return attempt
    return attempt.model_copy(update={"transcript": None})


def _add_usage(total: Usage, part: Usage) -> None:
    total.requests += part.requests
    total.prompt_tokens += part.prompt_tokens
    total.completion_tokens += part.completion_tokens
    total.cost_usd += part.cost_usd


def _count(counts: dict[str, int], attempt: Attempt) -> None:
    if attempt.judged_by == "transport":
        counts["transport"] += 1
    if attempt.outcome is Outcome.VULNERABLE:
        counts["vulnerable"] += 1
    elif attempt.outcome is Outcome.UNJUDGED:
        counts["unjudged"] += 1


def _reasons(results: dict[str, Attempt]) -> str:
    reasons = sorted({a.reason for a in results.values() if a.outcome is Outcome.UNJUDGED})
    return "; ".join(reasons[:3])


def _hopeless(done: int, transport: int) -> bool:
    """Stop early when the first attempts almost all failed to reach or read the target.

    Counts are kept as attempts complete: re-counting every result on each completion made a
    4,000-attempt scan spend an eighth of its time here.
    """
    if done < EARLY_STOP_WINDOW:
        return False
    return transport >= EARLY_STOP_FRACTION * done


def _undecided(results: dict[str, Attempt]) -> str:
    """Why a finished scan cannot carry a gate, or "" when it can."""
    if not results:
        return ""
    judged = sum(1 for a in results.values() if a.outcome is not Outcome.UNJUDGED)
    transport = sum(1 for a in results.values() if a.judged_by == "transport")
    if judged == 0:
        return f"none of the {len(results)} attempts could be judged; reasons: {_reasons(results)}"
    if transport > UNREACHABLE_FRACTION * len(results):
        return (
            f"{transport} of {len(results)} attempts could not reach or read the target; "
            f"reasons: {_reasons(results)}"
        )
    return ""
