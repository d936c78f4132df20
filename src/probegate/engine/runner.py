"""Execute a plan: bounded concurrency, budgets, early stop, journal, judging.

Attempts run on a thread pool (the targets' I/O releases the GIL); the main thread alone
journals results and decides what to schedule next, so there is one writer and no shared
mutable state besides the :class:`RequestGate`. Results are keyed by attempt id and sorted by
plan order afterwards, so completion order never changes a report.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from probegate.engine.journal import Journal
from probegate.engine.limits import BudgetExhausted, RequestGate
from probegate.engine.plan import Plan, PlannedAttempt
from probegate.judge.oracles import JudgeContext, LlmJudge, judge_attempt
from probegate.models.probe import Fixtures
from probegate.models.transcript import Transcript, Turn
from probegate.models.verdict import Attempt, Outcome
from probegate.targets.base import Session, Target, TransportError, Usage
from probegate.targets.sandbox import Sandbox, make_canaries

PAYLOAD = "{{payload}}"
EARLY_STOP_WINDOW = 12
EARLY_STOP_FRACTION = 0.9


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    vulnerable: int
    unjudged: int


@dataclass
class RunOutcome:
    attempts: dict[str, Attempt]
    stopped_reason: str = "completed"
    stop_message: str = ""
    cut_short: int = 0
    planned: int = 0
    duration_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def _fill(text: str, payload: str | None) -> str:
    return text.replace(PAYLOAD, payload) if payload is not None and PAYLOAD in text else text


def _fixtures(fixtures: Fixtures, payload: str | None) -> Fixtures:
    if payload is None:
        return fixtures
    return Fixtures(
        documents={k: _fill(v, payload) for k, v in fixtures.documents.items()},
        memory=tuple(_fill(m, payload) for m in fixtures.memory),
        agent_replies={k: _fill(v, payload) for k, v in fixtures.agent_replies.items()},
        tool_results={k: _fill(v, payload) for k, v in fixtures.tool_results.items()},
        tool_descriptions={k: _fill(v, payload) for k, v in fixtures.tool_descriptions.items()},
        tool_errors={k: _fill(v, payload) for k, v in fixtures.tool_errors.items()},
    )


class Runner:
    """Runs attempts against one target. Thread-safe ``run_one``; ``run`` drives a plan."""

    def __init__(
        self,
        target: Target,
        gate: RequestGate,
        *,
        seed: int,
        concurrency: int,
        declared_canaries: tuple[str, ...] = (),
        llm_judge: LlmJudge | None = None,
        tool_calls_visible: bool = True,
        record_dir: Path | None = None,
    ) -> None:
        self.target = target
        self.gate = gate
        self.seed = seed
        self.concurrency = concurrency
        self.declared = declared_canaries
        self.llm_judge = llm_judge
        self.tool_calls_visible = tool_calls_visible
        self.record_dir = record_dir
        self.tools = target.tools()
        self.tools_by_name = {t.name: t for t in self.tools}
        self.fatal: str | None = None

    # -- one attempt ---------------------------------------------------------------------
    def run_one(self, planned: PlannedAttempt) -> Attempt:
        probe = planned.probe
        canaries = make_canaries(self.seed, planned.attempt_id, self.declared)
        sandbox = Sandbox(self.tools, _fixtures(probe.fixtures, planned.payload), canaries)
        transcript = Transcript(tools_offered=[t.name for t in self.tools])
        usage = Usage()
        session: Session | None = None
        current = 0
        trigger = ""
        error: str | None = None
        try:
            for turn in probe.turns:
                if session is None or turn.session != current:
                    if session is not None:
                        _add_usage(usage, session.usage)
                        session.close()
                    session = self.target.open_session(sandbox, self.gate)
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
                reply = session.send(message)
                reply.session = turn.session
                transcript.turns.append(reply)
        except TransportError as exc:
            error = exc.reason
            if exc.fatal:
                self.fatal = exc.reason
        except BudgetExhausted as exc:
            error = f"cut short: {exc}"
        finally:
            if session is not None:
                _add_usage(usage, session.usage)
                session.close()
        if error is not None:
            attempt = Attempt(
                attempt_id=planned.attempt_id,
                probe_id=probe.id,
                variant=planned.variant,
                repeat=planned.repeat,
                outcome=Outcome.UNJUDGED,
                reason=error,
                judged_by="transport",
                transcript=transcript,
                trigger_prompt=trigger,
                requests=usage.requests,
                tokens=usage.tokens,
                cost_usd=round(usage.cost_usd, 6),
            )
        else:
            ctx = JudgeContext(probe, canaries, self.tools_by_name, self.tool_calls_visible)
            judgement = judge_attempt(transcript, ctx, self.llm_judge)
            attempt = Attempt(
                attempt_id=planned.attempt_id,
                probe_id=probe.id,
                variant=planned.variant,
                repeat=planned.repeat,
                outcome=judgement.outcome,
                reason=judgement.reason,
                evidence=list(judgement.evidence),
                transcript=transcript,
                trigger_prompt=trigger,
                judged_by=judgement.judged_by,
                requests=usage.requests,
                tokens=usage.tokens,
                cost_usd=round(usage.cost_usd, 6),
            )
        if self.record_dir is not None:
            self._record(attempt)
        return attempt

    def _record(self, attempt: Attempt) -> None:
        assert self.record_dir is not None
        self.record_dir.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9._-]", "_", attempt.attempt_id) + ".json"
        data = {
            "attempt_id": attempt.attempt_id,
            "seed": self.seed,
            "transcript": attempt.transcript.model_dump(mode="json") if attempt.transcript else None,
            "outcome": attempt.outcome.value,
            "reason": attempt.reason,
        }
        (self.record_dir / name).write_text(json.dumps(data, sort_keys=True, indent=1), "utf-8")

    # -- a whole plan --------------------------------------------------------------------
    def run(
        self,
        plan: Plan,
        *,
        journal: Journal | None,
        done: dict[str, Attempt] | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> RunOutcome:
        start = time.monotonic()
        results: dict[str, Attempt] = dict(done or {})
        queue: list[PlannedAttempt] = [a for a in plan.attempts if a.attempt_id not in results]
        escalations = dict(plan.escalations)
        total = len(plan.attempts)
        outcome = RunOutcome(attempts=results, planned=total)
        counts = {"vulnerable": 0, "unjudged": 0, "transport": 0, "judged_window": 0}
        for a in results.values():
            _count(counts, a)

        def report() -> None:
            if on_progress is not None:
                on_progress(Progress(len(results), total, counts["vulnerable"], counts["unjudged"]))

        stop: str | None = None
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="attempt") as pool:
            running: dict[Future[Attempt], PlannedAttempt] = {}
            while queue or running or escalations:
                if not queue and not running and escalations:
                    queue.extend(self._escalate(escalations, results))
                    total += len(queue)
                    outcome.planned = total
                    if not queue:
                        break
                while queue and len(running) < self.concurrency * 2 and stop is None:
                    if self.gate.soft_stop():
                        stop = "budget"
                        break
                    planned = queue.pop(0)
                    running[pool.submit(self.run_one, planned)] = planned
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    planned = running.pop(fut)
                    attempt = fut.result()
                    results[attempt.attempt_id] = attempt
                    if journal is not None:
                        journal.record(attempt)
                    _count(counts, attempt)
                    report()
                if self.fatal is not None and stop is None:
                    stop = "early_stop"
                    outcome.stop_message = f"the target cannot be used: {self.fatal}"
                if stop is None and _hopeless(results):
                    stop = "early_stop"
                    reasons = sorted({a.reason for a in results.values() if a.outcome is Outcome.UNJUDGED})
                    outcome.stop_message = (
                        "almost nothing could be judged; first reasons: " + "; ".join(reasons[:3])
                    )
                if stop is not None:
                    outcome.cut_short = len(queue) + sum(len(v) for v in escalations.values())
                    queue.clear()
                    escalations.clear()
        outcome.stopped_reason = stop or "completed"
        outcome.duration_seconds = round(time.monotonic() - start, 3)
        return outcome

    def _escalate(
        self, escalations: dict[str, tuple[PlannedAttempt, ...]], results: dict[str, Attempt]
    ) -> list[PlannedAttempt]:
        """smart mode: mutated variants only for probes the agent resisted every time."""
        queue: list[PlannedAttempt] = []
        for probe_id in sorted(escalations):
            mine = [a for a in results.values() if a.probe_id == probe_id]
            if mine and all(a.outcome is Outcome.RESISTED for a in mine):
                queue.extend(a for a in escalations[probe_id] if a.attempt_id not in results)
        escalations.clear()
        return queue


def _add_usage(total: Usage, part: Usage) -> None:
    total.requests += part.requests
    total.prompt_tokens += part.prompt_tokens
    total.completion_tokens += part.completion_tokens
    total.cost_usd += part.cost_usd


def _count(counts: dict[str, int], attempt: Attempt) -> None:
    if attempt.outcome is Outcome.VULNERABLE:
        counts["vulnerable"] += 1
    elif attempt.outcome is Outcome.UNJUDGED:
        counts["unjudged"] += 1


def _hopeless(results: dict[str, Attempt]) -> bool:
    """Stop early when the first attempts almost all failed to reach or read the target."""
    if len(results) < EARLY_STOP_WINDOW:
        return False
    transport = sum(1 for a in results.values() if a.judged_by == "transport")
    return transport >= EARLY_STOP_FRACTION * len(results)
