"""The judge's calibration: a short bundled set of transcripts whose verdicts are known.

A judge that cannot tell a careful warning from a relayed phishing link, or that obeys a
transcript asking it to answer "resisted", would decide the scan's hardest attempts wrong and
look authoritative doing it. So before a scan uses a judge, the judge answers every case of
``data/calibration.yaml`` through the same prompt, schema and checks as a scan's attempts; it
must give each its verdict (and, for a vulnerable one, a quote that is really in the agent's
replies or tool calls). A judge that fails is refused: the scan stops before any request to
the target (exit 2) and names each case it got wrong (docs/judge.md, "Calibration").

A pass is kept in the judge cache for this set, prompt and schema, so each judge model is
calibrated once, not once per scan.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from probegate.canonical import canonical_bytes
from probegate.errors import ProbeLibraryError, UsageError
from probegate.files import read_bytes, read_yaml
from probegate.judge.llm import (
    RUBRIC_PROMPT,
    JudgeFailure,
    ModelJudge,
    judge_messages,
    verdict_result,
    verdict_schema,
)
from probegate.library.oracles.base import JudgeContext
from probegate.library.oracles.judge import JudgeOracle
from probegate.library.probe import Probe
from probegate.models.canaries import make_canaries
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
    """The bundled cases, read and checked once."""
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
    """What a pass is a pass of: this set, the judge's prompt and the verdict schema."""
    parts = {
        "set": hashlib.sha256(read_bytes(CALIBRATION_FILE)).hexdigest(),
        "prompt": RUBRIC_PROMPT,
        "schema": verdict_schema(),
    }
    return hashlib.sha256(canonical_bytes(parts)).hexdigest()[:32]


def _check(judge: ModelJudge, case: CalibrationCase) -> str:
    """ "" when the judge gave the case its verdict, else what it did instead."""
    messages = judge_messages(case.oracle, case.transcript, case.context)
    try:
        verdict = judge.verdict(messages, calibration=True)
    except JudgeFailure as exc:
        return f"{case.id}: expected {case.verdict}, no verdict ({exc})"
    result = verdict_result(
        verdict, case.transcript, case.context, detector="judge", judged_by="judge"
    )
    if not result.decided:
        return f"{case.id}: expected {case.verdict}, no verdict ({result.reason})"
    got = "vulnerable" if result.evidence else "resisted"
    return "" if got == case.verdict else f"{case.id}: expected {case.verdict}, answered {got}"


def calibrate(judge: ModelJudge, *, concurrency: int = 4) -> list[str]:
    """Judge every case; what the judge got wrong, one line per case (empty: it passed)."""
    cases = calibration_set()
    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(cases)))) as pool:
        outcomes = list(pool.map(lambda case: _check(judge, case), cases))
    return [line for line in outcomes if line]


def require_calibrated(judge: ModelJudge, *, concurrency: int = 4) -> None:
    """Use ``judge`` only once it passed the calibration set; a :class:`UsageError` (exit 2)
    naming every case it got wrong otherwise. A pass is kept in the judge's cache."""
    digest = calibration_digest()
    if judge.cache is not None and judge.cache.calibrated(digest):
        return
    failures = calibrate(judge, concurrency=concurrency)
    if failures:
        total = len(calibration_set())
        raise UsageError(
            f"--judge {judge.spec} failed its calibration: {len(failures)} of {total} known "
            'cases judged wrong, so it is not used (docs/judge.md, "Calibration"):\n  '
            + "\n  ".join(failures)
        )
    if judge.cache is not None:
        judge.cache.mark_calibrated(digest, len(calibration_set()))
