"""What happened in one attempt, in the shape evidence paths point into.

A path such as ``turns.3.tool_calls.0.arguments.body`` names a location in
``Transcript.model_dump()``; :func:`resolve_path` reads it back. Tool calls carry their result
inline (the seed 002 AgentResult shape), so one assistant turn holds what the agent did and what
it was told.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

Role = Literal["user", "agent", "assistant"]
GuardStage = Literal["tools", "input", "tool_call", "tool_result", "output"]
# What probegate, standing where a deployment's enforcement point stands, did with a verdict:
# passed / modified (allow, spans applied), dropped (that call refused, the agent goes on),
# withheld (that result replaced by the notice, the agent goes on), answered (the refusal became
# the reply and the agent's turn ended), not_run (nothing asked: the turn had already ended).
GuardAction = Literal["passed", "modified", "dropped", "withheld", "answered", "not_run"]


class GuardFinding(BaseModel):
    """One finding of a runtime guard's Verdict (seed 004), kept as the guard sent it.

    ``path`` points into the GuardEvent probegate sent (``payload.messages.0.content``), not
    into this transcript; ``subject`` is bounded before it is stored.
    """

    model_config = ConfigDict(extra="forbid")

    category: str = ""
    severity: str | None = None
    path: str | None = None
    start: int | None = None
    end: int | None = None
    score: float | None = None
    fp: str | None = None
    whitelisted: bool = False
    subject: str | None = None
    detector: str | None = None


class GuardCheck(BaseModel):
    """One verdict of the guard in front of the agent, and what was done with it.

    ``decision`` is None only for ``not_run``: a call made after the agent's turn had already
    ended at a refusal is not executed and not sent to the guard.
    """

    model_config = ConfigDict(extra="forbid")

    stage: GuardStage
    decision: Literal["allow", "block"] | None
    action: GuardAction
    event_id: str = ""
    findings: list[GuardFinding] = Field(default_factory=list)
    spans_applied: int = 0
    spans_unresolved: int = 0
    unjudged: list[str] = Field(default_factory=list)
    notice: str | None = None
    latency_ms: float | None = None


def _omit_guard(data: dict[str, Any]) -> dict[str, Any]:
    # Transcripts of unguarded targets serialise exactly as before the guard existed: golden
    # files, journals and recordings made without a guard stay byte-identical.
    if data.get("guard") is None:
        data.pop("guard", None)
    return data


class ToolCall(BaseModel):
    """One tool call the agent made, with the sandbox's answer.

    ``guard`` holds the verdicts on the call and on its result when a guard stands in front of
    the agent (``kind: guard``); absent otherwise.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = ""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str | None = None
    error: str | None = None
    declared: bool = True
    guard: list[GuardCheck] | None = None

    @model_serializer(mode="wrap")
    def _serialise(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return _omit_guard(data)


class TurnGuard(BaseModel):
    """What the guard did around one reply turn.

    ``checks`` are the verdicts on the message the turn answers, on the tool definitions the
    agent read, and on the reply. ``refused_calls`` are calls the agent attempted that the
    guard refused: they were never executed, so they are kept apart from ``tool_calls`` (the
    agent's actions, which oracles judge) while staying in the evidence.
    """

    model_config = ConfigDict(extra="forbid")

    checks: list[GuardCheck] = Field(default_factory=list)
    refused_calls: list[ToolCall] = Field(default_factory=list)


class Turn(BaseModel):
    """One message: the attacker's input (user or peer agent) or the agent's reply."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    session: int = 1
    name: str | None = None
    guard: TurnGuard | None = None

    @model_serializer(mode="wrap")
    def _serialise(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return _omit_guard(data)


class Transcript(BaseModel):
    """The whole exchange of one attempt; what oracles judge and reports show."""

    model_config = ConfigDict(extra="forbid")

    turns: list[Turn] = Field(default_factory=list)
    tools_offered: list[str] = Field(default_factory=list)

    def assistant_turns(self) -> list[tuple[int, Turn]]:
        return [(i, t) for i, t in enumerate(self.turns) if t.role == "assistant"]

    def output_text(self) -> str:
        return "\n".join(t.content for _, t in self.assistant_turns())


def walk_strings(value: Any, path: str, *, scalars: bool = True) -> Iterator[tuple[str, str]]:
    """Every string inside a JSON value with its dotted path (the evidence path vocabulary).

    With ``scalars`` numbers and booleans are yielded too, as their JSON text, because an
    oracle may match ``amount: 2500``; a guard event registers only real strings.
    """
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key in sorted(value):
            yield from walk_strings(value[key], f"{path}.{key}", scalars=scalars)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from walk_strings(item, f"{path}.{i}", scalars=scalars)
    elif value is not None and scalars:
        yield path, json.dumps(value)


def resolve_path(data: Any, path: str) -> Any:
    """Follow a dotted evidence path (``turns.3.tool_calls.0.arguments.body``) into data."""
    node = data
    for part in path.split("."):
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node[part]
        else:
            raise KeyError(path)
    return node
