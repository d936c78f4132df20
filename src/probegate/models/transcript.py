"""What happened in one attempt, in the shape evidence paths point into.

A path such as ``turns.3.tool_calls.0.arguments.body`` names a location in
``Transcript.model_dump()``; :func:`resolve_path` reads it back. Tool calls carry their result
inline (the shape of a scenario's AgentResult, docs/scenarios.md), so one assistant turn holds
what the agent did and what it was told.

What the agent wrote is bounded as it enters a :class:`ToolCall` or an assistant
:class:`Turn` (:mod:`probegate.models.bounds`): valid Unicode, finite depth and size, at most
:data:`~probegate.models.bounds.TOOL_CALLS_MAX` calls per reply, with a ``cuts`` record of
whatever was cut; :func:`fit_turn` keeps a whole transcript within
:data:`~probegate.models.bounds.TRANSCRIPT_MAX`, so a journal line is bounded too.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from probegate.models.bounds import (
    NAME_MAX,
    TEXT_MAX,
    TOOL_CALLS_MAX,
    Cut,
    bound_arguments,
    calls_cut,
    cut_text,
    valid_unicode,
)

Role = Literal["user", "agent", "assistant"]
GuardStage = Literal["tools", "input", "tool_call", "tool_result", "output"]
# What probegate, standing where a deployment's enforcement point stands, did with a verdict:
# passed / modified (allow, spans applied), dropped (that call refused, the agent goes on),
# withheld (that result replaced by the notice, the agent goes on), answered (the refusal became
# the reply and the agent's turn ended), not_run (nothing asked: the turn had already ended).
GuardAction = Literal["passed", "modified", "dropped", "withheld", "answered", "not_run"]


def _clean_strings(data: Any) -> Any:
    """Every string field valid Unicode: a guard quotes what the agent said, surrogates too."""
    if not isinstance(data, dict):
        return data
    return {
        k: valid_unicode(v)
        if isinstance(v, str)
        else [valid_unicode(x) if isinstance(x, str) else x for x in v]
        if isinstance(v, list)
        else v
        for k, v in data.items()
    }


class GuardFinding(BaseModel):
    """One finding of a runtime guard's verdict (docs/guard.md), kept as the guard sent it.

    ``path`` points into the GuardEvent probegate sent (``payload.messages.0.content``), not
    into this transcript; ``subject`` is bounded before it is stored.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _valid_text(cls, data: Any) -> Any:
        return _clean_strings(data)

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

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

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

    @model_validator(mode="before")
    @classmethod
    def _valid_text(cls, data: Any) -> Any:
        return _clean_strings(data)


# Transcripts of unguarded targets serialise exactly as before the guard existed: golden
# files, journals and recordings made without a guard stay byte-identical. So do those of
# agents that stayed within the bounds: no empty ``cuts``. Both tests are C callables that
# pydantic-core calls per field (``exclude_if``): a wrap serialiser per model, which built the
# dump and popped from it in Python, was half the JSON dump of a 10,000-finding report.
_OMIT_GUARD = functools.partial(operator.is_, None)  # a guard is omitted when absent only
_OMIT_CUTS = operator.not_  # cuts are omitted when empty


def _with_cut(data: dict[str, Any], cut: Cut | None) -> None:
    """Add ``cut`` to the record, over an earlier record of the same field: the original's
    length stays the one first recorded, what is kept is what is kept now."""
    if cut is None:
        return
    cuts = [c if isinstance(c, Cut) else Cut.model_validate(c) for c in data.get("cuts") or ()]
    earlier = next((c for c in cuts if c.field == cut.field), None)
    if earlier is not None:
        cuts.remove(earlier)
        cut = cut.model_copy(update={"length": earlier.length, "sha256": earlier.sha256})
    data["cuts"] = [*cuts, cut]


def _bound_text(data: dict[str, Any], key: str, limit: int) -> None:
    value = data.get(key)
    if isinstance(value, str):
        data[key], cut = cut_text(value, limit, key)
        _with_cut(data, cut)


class ToolCall(BaseModel):
    """One tool call the agent made, with the sandbox's answer.

    ``guard`` holds the verdicts on the call and on its result when a guard stands in front of
    the agent (``kind: guard``); absent otherwise.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    id: str = ""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str | None = None
    error: str | None = None
    declared: bool = True
    guard: list[GuardCheck] | None = Field(default=None, exclude_if=_OMIT_GUARD)
    cuts: list[Cut] = Field(default_factory=list, exclude_if=_OMIT_CUTS)

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        """Whatever the agent wrote, within the bounds (models/bounds.py)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for key, limit in (("id", NAME_MAX), ("name", NAME_MAX)):
            _bound_text(data, key, limit)
        for key in ("result", "error"):
            _bound_text(data, key, TEXT_MAX)
        if "arguments" in data:
            data["arguments"], cut = bound_arguments(data["arguments"])
            _with_cut(data, cut)
        return data


class TurnGuard(BaseModel):
    """What the guard did around one reply turn.

    ``checks`` are the verdicts on the message the turn answers, on the tool definitions the
    agent read, and on the reply. ``refused_calls`` are calls the agent attempted that the
    guard refused: they were never executed, so they are kept apart from ``tool_calls`` (the
    agent's actions, which oracles judge) while staying in the evidence.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    checks: list[GuardCheck] = Field(default_factory=list)
    refused_calls: list[ToolCall] = Field(default_factory=list)


class Turn(BaseModel):
    """One message: the attacker's input (user or peer agent) or the agent's reply."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    session: int = 1
    name: str | None = None
    guard: TurnGuard | None = Field(default=None, exclude_if=_OMIT_GUARD)
    cuts: list[Cut] = Field(default_factory=list, exclude_if=_OMIT_CUTS)

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        """An agent's reply within the bounds (models/bounds.py); the attacker's own turns
        are the probe's text and stay as written."""
        if not isinstance(data, dict) or data.get("role") != "assistant":
            return data
        data = dict(data)
        _bound_text(data, "content", TEXT_MAX)
        calls = data.get("tool_calls")
        if isinstance(calls, list) and len(calls) > TOOL_CALLS_MAX:
            data["tool_calls"] = calls[:TOOL_CALLS_MAX]
            _with_cut(data, calls_cut(len(calls), TOOL_CALLS_MAX))
        return data


class Transcript(BaseModel):
    """The whole exchange of one attempt; what oracles judge and reports show."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    turns: list[Turn] = Field(default_factory=list)
    tools_offered: list[str] = Field(default_factory=list)

    def assistant_turns(self) -> list[tuple[int, Turn]]:
        return [(i, t) for i, t in enumerate(self.turns) if t.role == "assistant"]


def _call_size(call: ToolCall) -> int:
    arguments = json.dumps(call.arguments, ensure_ascii=False)
    return len(call.name) + len(arguments) + len(call.result or "") + len(call.error or "")


def fit_turn(turn: Turn, room: int) -> tuple[Turn, int]:
    """The reply within ``room`` characters of agent output, and the room left after it.

    Each field is bounded already; this bounds their sum over a transcript: the reply's text
    is cut to the room, then its tool calls are kept in order while they fit and the rest are
    recorded as cut. A reply that fits is returned as it is.
    """
    sizes = [_call_size(c) for c in turn.tool_calls]
    refused = turn.guard.refused_calls if turn.guard is not None else []
    refused_sizes = [_call_size(c) for c in refused]
    total = len(turn.content) + sum(sizes) + sum(refused_sizes)
    if total <= room:
        return turn, room - total
    data = turn.model_dump()
    data["cuts"] = list(turn.cuts)
    content, cut = cut_text(turn.content, max(room, 0), "content")
    data["content"] = content
    _with_cut(data, cut)
    left = room - len(content)
    kept: list[ToolCall] = []
    for call, size in zip(turn.tool_calls, sizes, strict=True):
        if size > left:
            break
        kept.append(call)
        left -= size
    data["tool_calls"] = kept
    _with_cut(data, calls_cut(len(turn.tool_calls), len(kept)))
    if turn.guard is not None:
        still: list[ToolCall] = []
        for call, size in zip(refused, refused_sizes, strict=True):
            if size > left:
                break
            still.append(call)
            left -= size
        data["guard"] = turn.guard.model_copy(update={"refused_calls": still})
    return Turn.model_validate(data), max(left, 0)


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


@functools.cache
def _field_names(model: type[BaseModel]) -> frozenset[str]:
    """A model class's field names, read once: pydantic's ``model_fields`` is a Python-level
    property, and :func:`text_at` asks it for every step of every evidence path."""
    return frozenset(model.model_fields)


def text_at(transcript: Transcript, path: str) -> str | None:
    """The string a dotted evidence path names in ``transcript``, or None when it names none.

    What :func:`resolve_path` finds in ``transcript.model_dump()``, read off the models instead
    of dumping every transcript first (a report shows thousands): a model's fields are its keys.
    The fields a dump leaves out (an absent ``guard``, empty ``cuts``) hold no string either way.
    """
    node: Any = transcript
    for part in path.split("."):
        if isinstance(node, BaseModel):
            if part not in _field_names(type(node)):
                return None
            node = getattr(node, part)
        elif isinstance(node, list):
            try:
                node = node[int(part)]
            except (IndexError, ValueError):
                return None
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node if isinstance(node, str) else None


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
