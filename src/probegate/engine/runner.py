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

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass
from pathlib import Path

from probegate.engine.controls import (
    apply_controls,
    attacker_artefacts,
    control_id_of,
    is_control,
)
from probegate.engine.delivery import attack_arrived, not_delivered_reason
from probegate.engine.journal import Journal
from probegate.engine.plan import SEED_VARIANT, Plan, PlannedAttempt, control_for
from probegate.engine.run_state import (
    OnThisThread,
    Phase,
    Progress,
    RunOutcome,
    RunState,
    add_usage,
    hopeless,
    in_memory,
    stop_text,
    undecided_reason,
    unjudged_reasons,
)
from probegate.judge.attempt import LlmJudge, judge_attempt
from probegate.library.oracles.base import JudgeContext
from probegate.models.bounds import TRANSCRIPT_MAX
from probegate.models.canaries import make_canaries
from probegate.models.causes import Cause
from probegate.models.probe import PAYLOAD, Fixtures
from probegate.models.recording import write_manifest, write_recording
from probegate.models.redaction import Redactor, redact_attempt
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
        delivered = (
            None if planned.is_control else failure is None and attack_arrived(planned, sandbox)
        )
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
                error = not_delivered_reason(sandbox, probe.channel)
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
                        add_usage(usage, session.usage)
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
                add_usage(usage, session.usage)
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
        pool: DaemonExecutor | OnThisThread = (
            DaemonExecutor(self.concurrency, "attempt") if self.traits.waits else OnThisThread()
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
    ) -> RunState:
        """The run's state, with a resumed scan's attempts and spend counted in."""
        results = {k: in_memory(a) for k, a in previous.items() if not is_control(a)}
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
        run = RunState(
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

    def _want_control(self, run: RunState, attempt: Attempt) -> None:
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
        self, run: RunState, pool: DaemonExecutor | OnThisThread, cancel: threading.Event | None
    ) -> bool:
        """One turn of the main thread: stop, escalate or admit, then wait for attempts and
        keep what finished. False when the run is over."""
        if run.stop is None and self.limiter.expired():
            self._stop(run, "deadline", f"the scan's deadline of {self.limiter.deadline:g}s passed")
        if not run.queue and not run.running and run.escalations and run.stop is None:
            run.queue.extend(self._escalate(run.escalations, run.results, run.controls))
            if not run.queue:
                return False
            run.phase = Phase("escalating", len(run.results), len(run.queue))
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

    def _collect(self, run: RunState, cancel: threading.Event | None) -> None:
        """Wait for attempts to finish and keep them; stop when the target is unusable."""
        # Wake to poll for an interrupt, and at the deadline: attempts still running then are
        # cut short.
        polls = [self.limiter.remaining(), CANCEL_POLL_SECONDS if cancel is not None else None]
        for fut in run.take_finished(min((t for t in polls if t is not None), default=None)):
            self._keep(run, run.running.pop(fut), fut.result())
        if run.stop is None and self.fatal is not None:
            run.stop = "early_stop"
            run.outcome.stop_message = f"the target cannot be used: {self.fatal}"
        if run.stop is None and hopeless(len(run.results), run.counts["transport"]):
            run.stop = "early_stop"
            run.outcome.stop_message = (
                "almost nothing could be judged; first reasons: " + unjudged_reasons(run.results)
            )
        if run.stop is not None:
            hard = run.stop != "budget"
            run.outcome.drop(self._halt(run.queue, run.escalations, hard=hard, reason=run.stop))

    def _stop(self, run: RunState, reason: str, message: str) -> None:
        """Stop for ``reason`` at once: attempts in flight end at their next request."""
        run.stop = reason
        run.outcome.stop_message = message
        run.outcome.drop(self._halt(run.queue, run.escalations, hard=True, reason=reason))

    def _admit(self, run: RunState, pool: DaemonExecutor | OnThisThread) -> None:
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

    def _keep(self, run: RunState, queued: PlannedAttempt, attempt: Attempt | None) -> None:
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
            run.results[attempt.attempt_id] = in_memory(attempt)
            run.count(attempt)
            self._want_control(run, attempt)
        run.report(self.limiter)

    def _end(self, run: RunState, start: float) -> RunOutcome:
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
            outcome.undecided = undecided_reason(outcome.attempts)
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
                results[attempt.attempt_id] = in_memory(attempt)
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
            self.limiter.close(stop_text(reason), STOP_CAUSES.get(reason, Cause.STOPPED))
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
