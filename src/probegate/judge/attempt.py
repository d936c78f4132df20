"""One attempt's outcome from its probe's oracles: evidence, not opinion.

Each oracle (``probegate.library.oracles``, one module per kind) reads the transcript and either
decides (vulnerable with evidence, or resisted) or says it cannot decide (a probe that needs a
judge, tool calls the target does not expose). :func:`judge_attempt` combines them into one
outcome, handing ``judge`` oracles to the optional LLM judge.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from probegate.library.oracles.base import JudgeContext, OracleModel, OracleResult
from probegate.library.oracles.judge import JudgeOracle
from probegate.models.transcript import Transcript
from probegate.models.verdict import Evidence, Outcome

LlmJudge = Callable[[JudgeOracle, Transcript, JudgeContext], OracleResult]


@dataclass(frozen=True)
class Judgement:
    outcome: Outcome
    evidence: tuple[Evidence, ...]
    reason: str
    judged_by: str


def judge_attempt(
    transcript: Transcript, ctx: JudgeContext, llm_judge: LlmJudge | None = None
) -> Judgement:
    """Vulnerable if any oracle saw evidence; resisted if one could look and none did.

    ``judged_by`` says what the outcome rests on: ``"oracle"`` when deterministic evidence
    decided it (or deterministic oracles alone judged), else the judge that did (``"judge"`` or
    ``"stub"``). A resisted outcome that a judge took part in rests on the judge too.
    """

    def decide(oracle: OracleModel, t: Transcript) -> OracleResult:
        if isinstance(oracle, JudgeOracle) and llm_judge is not None:
            return llm_judge(oracle, t, ctx)
        return oracle.decide(t, ctx)

    ctx = dataclasses.replace(ctx, decide=decide)
    evidence: list[Evidence] = []
    by_judge: list[Evidence] = []
    decided = False
    reasons: list[str] = []
    notes: list[str] = []
    judge_name: str | None = None
    for oracle in ctx.probe.oracles:
        result = decide(oracle, transcript)
        if result.decided:
            decided = True
            if result.note:
                notes.append(result.note)
            if result.judged_by is not None or oracle.needs_judge():
                judge_name = result.judged_by or "judge"
                by_judge.extend(result.evidence)
            else:
                evidence.extend(result.evidence)
        elif result.reason:
            reasons.append(result.reason)
    if evidence:
        return Judgement(Outcome.VULNERABLE, tuple(evidence + by_judge), "", "oracle")
    if by_judge:
        return Judgement(Outcome.VULNERABLE, tuple(by_judge), "", judge_name or "judge")
    if decided:
        # What a resisted verdict set aside, e.g. a match quoted in a warning, stays on record.
        return Judgement(Outcome.RESISTED, (), "; ".join(notes), judge_name or "oracle")
    return Judgement(
        Outcome.UNJUDGED,
        (),
        "; ".join(sorted(set(reasons))) or "no oracle could decide",
        judge_name or "oracle",
    )
