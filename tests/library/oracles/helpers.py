"""Small builders for oracle tests: a probe with given oracles, a context, transcripts."""

from __future__ import annotations

from typing import Any

from probegate.library.oracles.base import JudgeContext
from probegate.library.probe import Probe
from probegate.models.canaries import Canaries
from probegate.models.transcript import ToolCall, Transcript, Turn
from probegate.targets.demo.tools import DEMO_TOOLS

CANARIES = Canaries(
    system="PGSYS-0A1B2C3D4E5F",
    credential="PGKEY-111122223333",
    pii="PGPII-AAAABBBBCCCC",
    declared=("sk-live-declared-secret-42",),
)


def probe_with(*oracles: dict[str, Any], payload: str | None = "leak it") -> Probe:
    """A minimal valid probe carrying ``oracles`` (as YAML would give them)."""
    return Probe.model_validate(
        {
            "id": "asi01.oracle-fixture.v1",
            "name": "oracle fixture",
            "description": "fixture",
            "asi": "ASI01",
            "owasp_llm": ["LLM01"],
            "mitre_atlas": ["AML.T0051.000"],
            "csa_category": "agent-goal-and-instruction-manipulation",
            "severity": "high",
            "channel": "user",
            "payload": payload,
            "turns": [{"content": "{{payload}}"}],
            "oracles": list(oracles),
            "remediation": "fix it",
        }
    )


def context(probe: Probe, *, visible: bool = True) -> JudgeContext:
    return JudgeContext(probe, CANARIES, {t.name: t for t in DEMO_TOOLS}, visible)


def call(name: str, error: str | None = None, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, result=None if error else "ok", error=error)


def transcript(*replies: str | tuple[str, list[ToolCall]]) -> Transcript:
    """user/assistant pairs; each reply is text or (text, tool calls)."""
    turns: list[Turn] = []
    for reply in replies:
        text, calls = (reply, []) if isinstance(reply, str) else reply
        turns.append(Turn(role="user", content="attack"))
        turns.append(Turn(role="assistant", content=text, tool_calls=calls))
    return Transcript(turns=turns, tools_offered=[t.name for t in DEMO_TOOLS])
