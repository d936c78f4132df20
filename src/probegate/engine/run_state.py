"""The bookkeeping of one run of a plan (engine/runner.py): what the main thread counts, spends
and retries while attempts run, and what the run produced.

Only the runner's main thread touches a :class:`RunState`; the worker threads return attempts
through futures. Kept apart from the runner so the runner reads as the loop it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from queue import Empty, SimpleQueue

from probegate.engine.journal import Journal
from probegate.engine.plan import PlannedAttempt
from probegate.library.probe import Probe
from probegate.models.causes import CUT_SHORT
from probegate.models.verdict import Attempt, Outcome
from probegate.transport.limiter import RequestLimiter
from probegate.transport.usage import Usage

EARLY_STOP_WINDOW = 12
EARLY_STOP_FRACTION = 0.9
# At the end of a scan: more than this share of attempts never reached the target -> exit 3.
UNREACHABLE_FRACTION = 0.5
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


class OnThisThread:
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
class Phase:
    """The pass a run is in: smart mode's escalation is counted on its own."""

    name: str = ""
    start: int = 0
    total: int = 0


@dataclass
class ControlRetries:
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
class Spend:
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
class RunState:
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
    phase: Phase = field(default_factory=Phase)
    stop: str | None = None
    spend: Spend = field(default_factory=Spend)
    retries: ControlRetries = field(default_factory=ControlRetries)

    def count(self, attempt: Attempt) -> None:
        tally(self.counts, attempt)

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


def stop_text(reason: str) -> str:
    return f"scan stopped ({reason})"


def in_memory(attempt: Attempt) -> Attempt:
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


def add_usage(total: Usage, part: Usage) -> None:
    total.requests += part.requests
    total.prompt_tokens += part.prompt_tokens
    total.completion_tokens += part.completion_tokens
    total.cost_usd += part.cost_usd


def tally(counts: dict[str, int], attempt: Attempt) -> None:
    if attempt.judged_by == "transport":
        counts["transport"] += 1
    if attempt.outcome is Outcome.VULNERABLE:
        counts["vulnerable"] += 1
    elif attempt.outcome is Outcome.UNJUDGED:
        counts["unjudged"] += 1


def unjudged_reasons(results: dict[str, Attempt]) -> str:
    reasons = sorted({a.reason for a in results.values() if a.outcome is Outcome.UNJUDGED})
    return "; ".join(reasons[:3])


def hopeless(done: int, transport: int) -> bool:
    """Stop early when the first attempts almost all failed to reach or read the target.

    Counts are kept as attempts complete: re-counting every result on each completion made a
    4,000-attempt scan spend an eighth of its time here.
    """
    if done < EARLY_STOP_WINDOW:
        return False
    return transport >= EARLY_STOP_FRACTION * done


def undecided_reason(results: dict[str, Attempt]) -> str:
    """Why a finished scan cannot carry a gate, or "" when it can."""
    if not results:
        return ""
    judged = sum(1 for a in results.values() if a.outcome is not Outcome.UNJUDGED)
    transport = sum(1 for a in results.values() if a.judged_by == "transport")
    if judged == 0:
        reasons = unjudged_reasons(results)
        return f"none of the {len(results)} attempts could be judged; reasons: {reasons}"
    if transport > UNREACHABLE_FRACTION * len(results):
        return (
            f"{transport} of {len(results)} attempts could not reach or read the target; "
            f"reasons: {unjudged_reasons(results)}"
        )
    return ""
