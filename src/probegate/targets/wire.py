"""What agents send over the wire, read the same way by every target kind that talks to one.

Messages from peer agents, tool-call arguments that may not be JSON, and tool calls an agent
reports about itself: the ``openai``, ``http`` and ``python`` kinds all meet these shapes, so
they are read here once instead of one kind borrowing another's helpers.
"""

from __future__ import annotations

import json
from typing import Any

from probegate.models.bounds import TOOL_CALLS_MAX, calls_cut, loads_bounded, text_of
from probegate.models.causes import Cause
from probegate.models.transcript import ToolCall, Turn
from probegate.transport.usage import TransportError


def peer_message(message: Turn) -> str:
    """How a message from another agent reaches the model: as user input, labelled."""
    if message.role == "agent":
        return f"[message from agent {message.name or 'peer'}] {message.content}"
    return message.content


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool arguments as a mapping, or ``{"_raw": ...}`` with the problem when malformed."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if isinstance(raw, str):
        try:
            value = loads_bounded(raw)
        except ValueError:
            return {"_raw": raw}, "malformed arguments: not valid JSON"
        if isinstance(value, dict):
            return value, None
        return {"_raw": raw}, "malformed arguments: not a JSON object"
    return {"_raw": text_of(raw)}, "malformed arguments: not a JSON object"


def as_text(value: Any) -> str:
    """A JSON value as text: strings as they are, anything else as sorted JSON (bounded, at
    any depth: models/bounds.py)."""
    if value is None:
        return ""
    return text_of(value)


def reply_turn(content: str, calls: list[ToolCall], *, made: int) -> Turn:
    """An agent's reply turn; ``made`` counts every tool call it made, and those beyond
    ``calls`` are recorded as cut (models/bounds.py)."""
    cut = calls_cut(made, len(calls))
    return Turn(role="assistant", content=content, tool_calls=calls, cuts=[cut] if cut else [])


def calls_reported(items: Any) -> int:
    """How many tool calls an agent reported, read or not."""
    return len(items) if isinstance(items, list) else 0


def reported_tool_calls(items: Any, declared: set[str]) -> list[ToolCall]:
    """Tool calls an agent reports about itself: ``[{name, arguments, result}]``.

    The shape is the one docs/targets.md documents for the ``http`` and ``python`` kinds.

    The OpenAI shape (``{"function": {"name", "arguments"}}``) is accepted too. Arguments that
    are not a JSON object are kept under ``_raw`` so oracles still read them. Only the first
    :data:`~probegate.models.bounds.TOOL_CALLS_MAX` are read; the reply's turn records the
    rest as cut (:func:`~probegate.models.bounds.calls_cut`).
    """
    if items is None:
        return []
    if not isinstance(items, list):
        raise TransportError("the tool calls in the reply are not a list", cause=Cause.UNREADABLE)
    calls: list[ToolCall] = []
    for index, item in enumerate(items[:TOOL_CALLS_MAX]):
        if not isinstance(item, dict):
            item = {name: getattr(item, name, None) for name in ("name", "arguments", "result")}
        function = item.get("function")
        if not isinstance(function, dict):
            function = item
        name = as_text(function.get("name") or "")
        arguments, problem = parse_arguments(function.get("arguments"))
        error = item.get("error")
        calls.append(
            ToolCall(
                id=as_text(item.get("id") or f"call_{index}"),
                name=name,
                arguments=arguments,
                result=None if item.get("result") is None else as_text(item.get("result")),
                error=as_text(error) if error is not None else problem,
                declared=name in declared,
            )
        )
    return calls


def tool_reply(call: ToolCall) -> str:
    """What the agent reads back from a call: its result, or its error marked as one.

    The same words whichever way the tools reach the agent (probegate's own loop, a python
    agent's context, the MCP server), so a probe reads the same through every delivery; over
    MCP the result is also flagged ``isError``, which not every framework shows its model.
    """
    return (call.result or "") if call.error is None else f"ERROR: {call.error}"


def with_reported(recorded: list[ToolCall], reported: list[ToolCall]) -> list[ToolCall]:
    """The calls the sandbox recorded, plus those the agent reports that it did elsewhere.

    An agent that took its tools from probegate (a python agent's context, the MCP server) and
    also reports its calls reports the same calls: the sandbox's record is kept, a reported
    call that repeats one of them (same tool, same arguments) is not added twice.
    """
    seen = {(c.name, _key(c.arguments)) for c in recorded}
    return [*recorded, *(c for c in reported if (c.name, _key(c.arguments)) not in seen)]


def _key(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, default=str)
