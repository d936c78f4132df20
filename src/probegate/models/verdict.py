"""Attempts and their evidence, located the way a runtime guard's findings are (docs/guard.md)."""

from __future__ import annotations

import functools
import operator
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from probegate.models.bounds import valid_unicode
from probegate.models.causes import Cause
from probegate.models.taxonomy import Severity
from probegate.models.transcript import Transcript

SUBJECT_MAX = 200
ELLIPSIS = "…"


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters, marking the cut with an ellipsis."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    return text[: limit - 1] + ELLIPSIS


class Outcome(StrEnum):
    """Exactly one per attempt. Unjudged is never counted as resisted."""

    VULNERABLE = "vulnerable"
    RESISTED = "resisted"
    UNJUDGED = "unjudged"


class Evidence(BaseModel):
    """What an oracle saw, where: a guard-protocol-shaped finding pointing into the transcript.

    ``subject`` is the one bounded value the finding fired on (redacted before it is stored);
    ``start``/``end`` are offsets into the string at ``path``.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)

    category: str
    severity: Severity
    path: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    score: float = Field(ge=0.0, le=1.0)
    fp: str
    subject: str = Field(max_length=SUBJECT_MAX)
    detector: str


class ReferenceCheck(BaseModel):
    """What an independent benchmark's own check said of one attempt (AgentDojo's ``security``
    and ``utility``, run on its environment after the conversation): a second opinion the
    report sets beside probegate's verdict, which it never changes (docs/agentdojo.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    benchmark: Literal["agentdojo"] = "agentdojo"
    suite: str
    user_task: str
    injection_task: str
    # The injection task's goal was reached (AgentDojo's ``security`` is True); None when the
    # check could not run (``error`` says why) or the attempt was a control.
    attack_succeeded: bool | None
    # The user's task was done (AgentDojo's ``utility``); None when it could not be checked.
    utility: bool | None = None
    # The attack reached the agent: a tool result it read carried the payload. None for a
    # control, which carries none.
    delivered: bool | None = None
    error: str = ""

    @field_validator("error")
    @classmethod
    def _valid_error(cls, value: str) -> str:
        return valid_unicode(value)


# An attempt that no benchmark checked carries no ``reference`` key at all, so journals and
# recordings of every other scan stay byte-identical.
_OMIT_REFERENCE = functools.partial(operator.is_, None)


class Attempt(BaseModel):
    """One probe variant run once, and its outcome."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    attempt_id: str
    probe_id: str
    variant: str = "seed"
    repeat: int = 0
    outcome: Outcome
    reason: str = ""
    # Why it is unjudged (models/causes.py): set exactly when the outcome is, where the reason
    # is written, so nothing downstream reads a cause back from the reason's words.
    cause: Cause | None = None
    # Whether the attack reached the agent (docs/scoring.md, "Delivery"): False for an
    # attempt whose payload it never read or that failed before it could; None for a
    # control, which carries no attack.
    delivered: bool | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    transcript: Transcript | None = None
    trigger_prompt: str = ""
    judged_by: str = "oracle"
    # The control this verdict was checked against (docs/scoring.md, "Controls"), if any.
    control: str = ""
    requests: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    # An independent benchmark's own verdict on this attempt (AgentDojo), beside probegate's.
    reference: ReferenceCheck | None = Field(default=None, exclude_if=_OMIT_REFERENCE)

    @field_validator("reason", "trigger_prompt")
    @classmethod
    def _valid_text(cls, value: str) -> str:
        # A reason can quote what an agent raised or sent: keep it storable (models/bounds.py).
        return valid_unicode(value)

    @model_validator(mode="after")
    def _cause_with_unjudged(self) -> Attempt:
        # A journal line written before causes existed fails here and its attempt runs again
        # (engine/journal.py trusts no line), so no verdict is ever grouped by its words.
        if (self.cause is None) == (self.outcome is Outcome.UNJUDGED):
            raise ValueError("an unjudged attempt has a cause, and only an unjudged one")
        return self
