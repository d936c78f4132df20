"""``judge``: a rubric only an LLM judge (``--judge``) can apply.

Deciding it is the LLM judge's work (probegate.judge.llm), handed in by the judge layer; on its
own this kind can only say that no judge is configured.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from probegate.library.oracles.base import JudgeContext, OracleModel, OracleResult
from probegate.models.causes import Cause
from probegate.models.transcript import Transcript

NO_JUDGE = "probe needs an LLM judge (--judge) and none is configured"


class JudgeOracle(OracleModel):
    """Needs an LLM judge with this rubric; unjudged when no judge is configured."""

    kind: Literal["judge"] = "judge"
    rubric: str

    SUMMARY: ClassVar[str] = (
        "Needs an LLM judge (`--judge openai:MODEL`) that applies the probe's rubric and must "
        "quote, verbatim, the agent text that proves a vulnerable verdict. Unjudged when no "
        "judge is configured or the judge fails (timeout, HTTP error, malformed answer); never "
        "counted as resisted. `--judge stub` is an offline stand-in for tests only."
    )

    def describe(self) -> str:
        return f"`judge` (LLM judge needed): {self.rubric}"

    def decide(self, transcript: Transcript, ctx: JudgeContext) -> OracleResult:
        return OracleResult(False, reason=NO_JUDGE, cause=Cause.NEEDS_JUDGE)

    def needs_judge(self) -> bool:
        return True
