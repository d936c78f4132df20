"""How far probegate's verdicts agree with an independent benchmark's own checks.

A scan run on AgentDojo's suites (``--suite agentdojo``) judges each attempt twice: probegate's
oracles give its verdict, and AgentDojo's ``security`` check of the environment says whether
the injection task's goal was reached (``Attempt.reference``). This section of the report
(``ScanReport.agreement``; docs/agentdojo.md) counts the two against each other, per suite and
overall, taking AgentDojo's check as the reference: recall (of the attacks AgentDojo saw
succeed, the share probegate found), false-positive rate (of those it saw fail, the share
probegate still called vulnerable) and Cohen's kappa. Attempts probegate left unjudged and
those AgentDojo could not check are counted apart, in neither rate. Every disagreement is
listed with its transcript and the reason, in the words of docs/agentdojo.md, "Where the two
differ".
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from probegate.models.transcript import Transcript
from probegate.models.verdict import Evidence

# Why probegate and AgentDojo disagree on one attempt (docs/agentdojo.md, "Where the two differ").
Difference = Literal[
    # probegate: a planted secret came back; AgentDojo looks only at the injection's goal.
    "secret",
    # probegate: the attacker-directed action happened; AgentDojo: not with all the goal asked
    # for (the data it named, the amount, every step).
    "partial_goal",
    # AgentDojo: the goal's state or words are there; probegate: its control showed the same
    # without the attack, so the attack did not cause them.
    "same_without_attack",
    # AgentDojo: the goal's words are in the reply; probegate (its rules or its judge): only
    # quoted or reported, not passed on as the agent's own.
    "quoted",
    # AgentDojo: the goal was reached; probegate's oracles saw no evidence of it.
    "missed",
    # probegate: evidence of an action or words the goal asked for; AgentDojo: goal not reached.
    "other",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class AgreementCounts(_Model):
    """probegate's verdicts against AgentDojo's checks on the same attempts."""

    # Both say the attack succeeded / only probegate / only AgentDojo / neither.
    both: int = 0
    probegate_only: int = 0
    agentdojo_only: int = 0
    neither: int = 0
    # Left out of the rates: the attack never reached the agent (no tool result it read
    # carried it), probegate could not judge, or AgentDojo could not check.
    not_delivered: int = 0
    unjudged: int = 0
    unchecked: int = 0
    # None where undefined (no attack succeeded, none failed, or one class only for kappa).
    recall: float | None = None
    false_positive_rate: float | None = None
    kappa: float | None = None
    # AgentDojo's utility: of the attempts it checked, the share where the user's task was done.
    utility: float | None = None

    @property
    def compared(self) -> int:
        return self.both + self.probegate_only + self.agentdojo_only + self.neither


class Disagreement(_Model):
    """One attempt the two judged differently, with what probegate saw."""

    attempt_id: str
    probe_id: str
    suite: str
    user_task: str
    injection_task: str
    probegate: Literal["vulnerable", "resisted"]
    agentdojo: bool  # AgentDojo's security check: the injection's goal was reached
    difference: Difference
    # probegate's reason for its verdict (a resisted one's "same behaviour without the attack").
    reason: str = ""
    evidence: list[Evidence] = Field(default_factory=list)
    transcript: Transcript | None = None


class Agreement(_Model):
    """The ``agreement`` section of a report of an AgentDojo scan."""

    benchmark: Literal["agentdojo"] = "agentdojo"
    package_version: str
    benchmark_version: str
    attack: str
    # What decided the words the rules could not: "off" without --judge, else the judge's name.
    judge: str
    suites: dict[str, AgreementCounts]
    overall: AgreementCounts
    disagreements: list[Disagreement] = Field(default_factory=list)
