"""The judge's calibration: before a scan uses a judge, it judges cases whose verdicts are known.

A judge that cannot tell a careful warning from a relayed phishing link, or that obeys a
transcript asking it to answer "resisted", would decide the scan's hardest attempts wrong and
look authoritative doing it. So before a scan uses a judge it passes two stages, through the
same prompt, schema, redaction and checks as a scan's attempts (docs/judge.md, "Calibration"):

1. ``data/calibration.yaml``: ten transcripts with their rubrics, half vulnerable; each must get
   its verdict (a vulnerable one with a quote that is really in the agent's words).
2. ``data/readings.yaml``: the replies of the tests' corpora a judge reads (judge/readings.py),
   each put as a scan puts it (:func:`~probegate.judge.attempt.judge_attempt`). No careful
   reply may become a finding, and at most 1 twin in 10 may be missed. A weak model, a local
   one above all, is refused here rather than trusted with the scan.

Any case not judged (a timeout, an answer that never validates) counts as judged wrong. The
second stage runs only after the first passed, and stops as soon as the judge has failed it. A
judge that fails is refused: the scan stops before any request to the target (exit 2) and
names what it got wrong. A pass is kept in the judge's cache directory (judge/cache.py), per
judge identity (API, endpoint, model, prompt), with what it cost; each judge is calibrated
once, and again only when a set, the prompt or the schema changes.
"""

from __future__ import annotations

import hashlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from probegate.canonical import canonical_bytes
from probegate.errors import ProbeLibraryError, UsageError
from probegate.files import read_bytes, read_yaml
from probegate.judge.llm import ModelJudge
from probegate.judge.prompt import RUBRIC_PROMPT, prompt_version, verdict_result
from probegate.judge.question import question_of
from probegate.judge.readings import (
    READINGS_FILE,
    MissBudget,
    Reading,
    Wrong,
    check_reading,
    readings,
)
from probegate.judge.verdict import JudgeFailure, JudgeNotAsked, verdict_schema
from probegate.library.oracles.base import JudgeContext, OracleResult
from probegate.library.oracles.judge import JudgeOracle
from probegate.library.probe import Probe
from probegate.models.canaries import make_canaries
from probegate.models.causes import Cause
from probegate.models.probe import PAYLOAD
from probegate.models.transcript import Transcript
from probegate.validation import describe

CALIBRATION_FILE = Path(__file__).parent / "data" / "calibration.yaml"
# The taxonomy a calibration case's stand-in probe carries; only its id, name, description and
# category reach the judge.
_STAND_IN = {
    "owasp_llm": ["LLM01"],
    "mitre_atlas": ["AML.T0051"],
    "csa_category": "agent-goal-and-instruction-manipulation",
    "severity": "high",
    "channel": "user",
    "turns": [{"content": PAYLOAD}],
    "remediation": "(calibration case)",
}


class _CaseFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
    verdict: str = Field(pattern=r"^(vulnerable|resisted)$")
    category: str
    attack: str
    rubric: str
    quote: str = ""
    turns: list[dict[str, Any]] = Field(min_length=2)


@dataclass(frozen=True)
class CalibrationCase:
    """One transcript with a known verdict, ready to be judged as a scan's attempt is."""

    id: str
    verdict: str
    quote: str
    oracle: JudgeOracle
    transcript: Transcript
    context: JudgeContext


@lru_cache(maxsize=1)
def calibration_set() -> tuple[CalibrationCase, ...]:
    """The bundled cases of the first stage, read and checked once."""
    raw = read_yaml(CALIBRATION_FILE, what="judge calibration set", error=ProbeLibraryError)
    cases: list[CalibrationCase] = []
    try:
        for item in raw["cases"]:
            case = _CaseFile.model_validate(item)
            probe = Probe.model_validate(
                {
                    **_STAND_IN,
                    "id": f"{case.category.lower()}.calibration-{case.id}.v1",
                    "name": f"calibration: {case.id}",
                    "description": case.attack,
                    "asi": case.category,
                    "oracles": [{"kind": "judge", "rubric": case.rubric}],
                }
            )
            oracle = probe.oracles[0]
            assert isinstance(oracle, JudgeOracle)
            cases.append(
                CalibrationCase(
                    id=case.id,
                    verdict=case.verdict,
                    quote=case.quote,
                    oracle=oracle,
                    transcript=Transcript.model_validate({"turns": case.turns}),
                    context=JudgeContext(probe, make_canaries(0, probe.id), {}),
                )
            )
    except (KeyError, TypeError) as exc:
        raise ProbeLibraryError(f"{CALIBRATION_FILE}: malformed ({exc})") from None
    except ValidationError as exc:
        raise ProbeLibraryError(f"{CALIBRATION_FILE}: {describe(exc, top='case')}") from None
    return tuple(cases)


def calibration_digest() -> str:
    """What a pass is a pass of: both sets, the judge's prompt and the verdict schema."""
    parts = {
        "set": hashlib.sha256(read_bytes(CALIBRATION_FILE)).hexdigest(),
        "readings": hashlib.sha256(read_bytes(READINGS_FILE)).hexdigest(),
        "prompt": [RUBRIC_PROMPT, prompt_version()],
        "schema": verdict_schema(),
    }
    return hashlib.sha256(canonical_bytes(parts)).hexdigest()[:32]


class Calibrating:
    """The judge as calibration asks it: the scan's prompt, redaction and checks, counted as
    calibration, never cached."""

    def __init__(self, judge: ModelJudge) -> None:
        self.judge = judge

    def __call__(
        self, oracle: JudgeOracle, transcript: Transcript, ctx: JudgeContext
    ) -> OracleResult:
        asked = self.judge.ask(question_of(oracle), transcript, ctx)
        try:
            verdict = self.judge.verdict(asked.messages, calibration=True)
        except JudgeNotAsked:
            raise  # the budget, not the judge: require_calibrated says so
        except JudgeFailure as exc:
            return OracleResult(
                False,
                reason=f"LLM judge failed: {exc}",
                cause=Cause.JUDGE_FAILED,
                judged_by="judge",
            )
        return verdict_result(verdict, asked, ctx, detector="judge", judged_by="judge")


def _check(judge: ModelJudge, case: CalibrationCase) -> str:
    """ "" when the judge gave the case its verdict, else what it did instead."""
    result = Calibrating(judge)(case.oracle, case.transcript, case.context)
    if not result.decided:
        return f"{case.id}: expected {case.verdict}, no verdict ({result.reason})"
    got = "vulnerable" if result.evidence else "resisted"
    return "" if got == case.verdict else f"{case.id}: expected {case.verdict}, answered {got}"


def calibrate(judge: ModelJudge, *, concurrency: int = 4) -> list[str]:
    """The first stage: every case; what the judge got wrong, one line per case."""
    cases = calibration_set()
    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(cases)))) as pool:
        outcomes = list(pool.map(lambda case: _check(judge, case), cases))
    return [line for line in outcomes if line]


def calibrate_readings(judge: ModelJudge, *, concurrency: int = 4) -> list[str]:
    """The second stage: the corpus replies a judge reads, each put as a scan puts it. What the
    judge got wrong, one line per reply, once it has failed (empty: it passed). It stops asking
    as soon as the judge failed: a false finding, a reply not judged, or one miss too many."""
    items = readings()
    budget = MissBudget(sum(1 for item in items if not item.careful))
    failed = threading.Event()

    def one(item: Reading) -> Wrong | None:
        if failed.is_set():
            return None
        wrong = check_reading(item, Calibrating(judge))
        if wrong is not None and budget.fails(wrong):
            failed.set()
        return wrong

    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(items)))) as pool:
        outcomes = list(pool.map(one, items))
    return [w.line for w in outcomes if w is not None] if failed.is_set() else []


@dataclass(frozen=True)
class CalibrationCost:
    """What a calibration cost: requests, tokens, seconds; and how many cases it judged."""

    cases: int
    requests: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float

    def as_record(self) -> dict[str, float]:
        return {
            "cases": self.cases,
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 1),
        }

    def text(self, spec: str) -> str:
        tokens = self.prompt_tokens + self.completion_tokens
        return (
            f"--judge {spec} calibrated on {self.cases} known cases: {self.requests} requests, "
            f"{tokens:,} tokens, {self.seconds:.0f} s (once per judge: docs/judge.md)"
        )


def require_calibrated(judge: ModelJudge, *, concurrency: int = 4) -> CalibrationCost | None:
    """Use ``judge`` only once it passed both stages; a :class:`UsageError` (exit 2) naming
    what it got wrong otherwise. A pass is kept in the judge's cache with its cost, which is
    returned (None: the judge had passed before)."""
    digest = calibration_digest()
    if judge.cache is not None and judge.cache.calibrated(digest):
        return None
    before, started = judge.stats.usage(), time.monotonic()
    try:
        failures = calibrate(judge, concurrency=concurrency)
        _refuse(judge, "its calibration", len(calibration_set()), failures)
        failures = calibrate_readings(judge, concurrency=concurrency)
    except JudgeNotAsked as exc:
        raise UsageError(
            f"--judge {judge.spec} could not be calibrated within this scan's budget ({exc}): "
            f"a calibration takes up to {len(calibration_set()) + len(readings())} requests, "
            'once per judge (docs/judge.md, "Calibration"); raise --max-requests or '
            "--budget-usd for the scan that calibrates it"
        ) from None
    _refuse(judge, "its calibration on the replies it reads", len(readings()), failures)
    after = judge.stats.usage()
    cost = CalibrationCost(
        cases=len(calibration_set()) + len(readings()),
        requests=after.calibration_calls - before.calibration_calls,
        prompt_tokens=after.prompt_tokens - before.prompt_tokens,
        completion_tokens=after.completion_tokens - before.completion_tokens,
        seconds=time.monotonic() - started,
    )
    if judge.cache is not None:
        judge.cache.mark_calibrated(digest, cost.cases, cost.as_record())
    return cost


def _refuse(judge: ModelJudge, stage: str, total: int, failures: list[str]) -> None:
    if failures:
        raise UsageError(
            f"--judge {judge.spec} failed {stage}: {len(failures)} of {total} known cases "
            f'judged wrong, so it is not used (docs/judge.md, "Calibration"):\n  '
            + "\n  ".join(failures)
        )
