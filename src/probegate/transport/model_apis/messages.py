"""Anthropic Messages (``POST /v1/messages``): Claude's API.

The key goes in ``x-api-key`` and every request names the API version in
``anthropic-version``; ``max_tokens`` is required; the system prompt is a top-level
``system`` (text or text blocks). A reply's ``content`` is a list of blocks: ``text`` and
``tool_use`` (an ``id``, a ``name`` and an ``input`` object), several of them at once when the
model calls tools in parallel; their answers go back together in the next user message, one
``tool_result`` block each. A stream is typed events (``message_start``, ``content_block_*``,
``message_delta``, ``message_stop``), a tool's input arriving as pieces of JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from probegate.models.bounds import loads_bounded
from probegate.transport.model_apis.base import (
    Completion,
    Excerpt,
    ModelApi,
    RawToolCall,
    ReplyParts,
    ToolDecl,
    ToolResultSlot,
    content_text,
    count,
    error_of,
    mapping,
    position,
    unreadable,
)
from probegate.transport.sse import SseEvent, encode_events

VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024
_MESSAGE_ID = "msg_probegate"


def _input(arguments: Any) -> dict[str, Any]:
    """A tool call's arguments as the ``input`` object the API takes back in the history."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str) and arguments.strip():
        try:
            value = loads_bounded(arguments)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _message(model: str, content: list[dict[str, Any]], stop: str | None) -> dict[str, Any]:
    return {
        "id": _MESSAGE_ID,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


@dataclass
class _Stream:
    """What a stream's events add up to so far: its content blocks by index, the pieces of
    JSON text of each tool input, the prompt's tokens and the usage, whether the message
    started and stopped (a stream without message_stop was cut off)."""

    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    pieces: dict[int, list[str]] = field(default_factory=dict)
    prompt: int = 0
    usage: dict[str, Any] = field(default_factory=dict)
    started: bool = False
    stopped: bool = False

    def message_start(self, data: dict[str, Any]) -> None:
        if not isinstance(data.get("message"), dict):
            return
        self.started = True
        first = data["message"].get("usage")
        if isinstance(first, dict):
            self.prompt = count(first.get("input_tokens"))
            self.usage = first

    def block_start(self, data: dict[str, Any]) -> None:
        if isinstance(data.get("content_block"), dict):
            index = position(data.get("index"), len(self.blocks))
            self.blocks[index] = dict(data["content_block"])

    def block_delta(self, data: dict[str, Any]) -> None:
        index = position(data.get("index"), -1)
        block = self.blocks.get(index)
        delta = data.get("delta")
        if block is None or not isinstance(delta, dict):
            return
        if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
            block["text"] = str(block.get("text") or "") + delta["text"]
        elif delta.get("type") == "input_json_delta":
            self.pieces.setdefault(index, []).append(str(delta.get("partial_json") or ""))

    def message_delta(self, data: dict[str, Any]) -> None:
        if isinstance(data.get("usage"), dict):
            self.usage = {**self.usage, **data["usage"]}

    def message_stop(self, _data: dict[str, Any]) -> None:
        self.stopped = True

    def content(self) -> list[dict[str, Any]]:
        """The blocks in order, each tool input whole."""
        for index, parts in self.pieces.items():
            # A streamed tool input is JSON text; what cannot be read is kept for the oracles.
            self.blocks[index]["input"] = "".join(parts)
        return [self.blocks[i] for i in sorted(self.blocks)]


# What each event of a stream does to it; other events (ping, content_block_stop) add nothing.
_ON_EVENT: dict[str, Callable[[_Stream, dict[str, Any]], None]] = {
    "message_start": _Stream.message_start,
    "content_block_start": _Stream.block_start,
    "content_block_delta": _Stream.block_delta,
    "message_delta": _Stream.message_delta,
    "message_stop": _Stream.message_stop,
}


class MessagesApi(ModelApi):
    name = "anthropic-messages"
    path = "/messages"
    what = "an Anthropic message"

    def url(self, endpoint: str) -> str:
        """``https://api.anthropic.com`` or ``.../v1``: both reach ``/v1/messages``."""
        base = endpoint.rstrip("/")
        if base.endswith(self.path):
            return base
        return base + self.path if base.endswith("/v1") else base + "/v1" + self.path

    def headers(self, key: str | None) -> dict[str, str]:
        out = {"anthropic-version": VERSION}
        if key:
            out["x-api-key"] = key
        return out

    # -- the client ------------------------------------------------------------------------
    def request(
        self,
        *,
        model: str,
        system: str,
        history: Sequence[Any],
        tools: Sequence[ToolDecl],
        params: dict[str, Any],
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"max_tokens": DEFAULT_MAX_TOKENS, **params, "model": model}
        body["system"] = system
        body["messages"] = list(history)
        if tools:
            body["tools"] = [
                {
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters or {"type": "object", "properties": {}},
                }
                for t in tools
            ]
        return body

    def user_items(self, text: str) -> list[Any]:
        return [{"role": "user", "content": text}]

    def reply_items(self, reply: Completion, answered: Sequence[RawToolCall]) -> list[Any]:
        blocks: list[dict[str, Any]] = []
        if reply.text:
            blocks.append({"type": "text", "text": reply.text})
        blocks += [
            {"type": "tool_use", "id": raw.id, "name": raw.name, "input": _input(raw.arguments)}
            for raw in answered
        ]
        # The API refuses an empty assistant message; the next user message simply follows.
        return [{"role": "assistant", "content": blocks}] if blocks else []

    def result_items(self, results: Sequence[tuple[RawToolCall, str, bool]]) -> list[Any]:
        if not results:
            return []
        blocks = []
        for raw, text, failed in results:
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": raw.id, "content": text}
            if failed:
                block["is_error"] = True
            blocks.append(block)
        return [{"role": "user", "content": blocks}]

    def parse(self, data: Any, excerpt: Excerpt = str) -> Completion:
        if not isinstance(data, dict):
            raise unreadable(self.what, f"JSON {type(data).__name__}")
        content = data.get("content")
        if data.get("type") == "error" or not isinstance(content, list):
            if data.get("type") == "error" or "error" in data:
                raise error_of(data, excerpt, self.what)
            raise unreadable(self.what, f"its content is not a list: {excerpt(json.dumps(data))}")
        usage = mapping(data.get("usage"))
        return self._completion(content, count(usage.get("input_tokens")), usage)

    def _completion(self, content: list[Any], prompt: int, usage: dict[str, Any]) -> Completion:
        reply = ReplyParts()
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                reply.text.append(block["text"])
            elif block.get("type") == "tool_use":
                reply.call(block.get("id"), block.get("name"), block.get("input"))
        return reply.completion(prompt, count(usage.get("output_tokens")))

    def parse_events(self, events: Sequence[SseEvent], excerpt: Excerpt = str) -> Completion:
        stream = _Stream()
        for event in events:
            data = event.json()
            if not isinstance(data, dict):
                continue
            kind = data.get("type") or event.event
            if kind == "error":
                raise error_of(data, excerpt, self.what, streamed=True)
            on_event = _ON_EVENT.get(kind) if isinstance(kind, str) else None
            if on_event is not None:
                on_event(stream, data)
        if not stream.started:
            raise unreadable(self.what, "no message_start", streamed=True)
        if not stream.stopped:
            raise unreadable(self.what, "cut off before message_stop", streamed=True)
        return self._completion(stream.content(), stream.prompt, stream.usage)

    # -- the proxy -------------------------------------------------------------------------
    def plant(self, body: dict[str, Any], text: str) -> None:
        system = body.get("system")
        if isinstance(system, list):
            body["system"] = [*system, {"type": "text", "text": text}]
        elif isinstance(system, str) and system:
            body["system"] = f"{system}\n\n{text}"
        else:
            body["system"] = text

    def declared_tools(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        # Server tools (web search, code execution) carry a versioned type; the agent's own
        # function tools have none, or "custom".
        return [
            tool
            for tool in body.get("tools") or []
            if isinstance(tool, dict)
            and tool.get("type") in (None, "custom")
            and isinstance(tool.get("name"), str)
        ]

    def tool_results(self, body: dict[str, Any]) -> list[ToolResultSlot]:
        slots = []
        for message in body.get("messages") or []:
            if not isinstance(message, dict) or message.get("role") != "user":
                continue
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue

                def put(text: str, error: bool, block: dict[str, Any] = block) -> None:
                    block["content"] = text
                    if error:
                        block["is_error"] = True
                    else:
                        block.pop("is_error", None)

                call = str(block.get("tool_use_id") or "")
                slots.append(ToolResultSlot(call, content_text(block.get("content")), put))
        return slots

    def user_texts(self, body: dict[str, Any]) -> list[str]:
        texts = []
        for message in body.get("messages") or []:
            if not isinstance(message, dict) or message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                said = [b for b in content if isinstance(b, dict) and b.get("type") == "text"]
                if said:
                    texts.append(content_text(said))
        return texts

    def end_of_turn(self, text: str, model: str, *, stream: bool) -> bytes:
        block = {"type": "text", "text": text}
        if not stream:
            return json.dumps(_message(model, [block], "end_turn")).encode("utf-8")
        return encode_events(
            [
                ("message_start", {"type": "message_start", "message": _message(model, [], None)}),
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                ),
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": text},
                    },
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                        "usage": {"output_tokens": 0},
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
        )


MESSAGES = MessagesApi()
