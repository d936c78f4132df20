"""OpenAI Chat Completions (``POST /chat/completions``), and every API that copies it.

What real models send back is taken as it comes: several tool calls in one reply, tool calls
with no text, a call without an id, content as a list of parts, replies without ``usage``; a
stream is ``data:`` chunks whose deltas add up to the message, tool calls assembled by index.

A reply may hold several choices (a request's ``n > 1``, or an upstream that sends them
unasked). Its text is the first choice's (what an agent shows), but its tool calls are every
choice's, in choice order: an agent may run any of them (one that reads ``choices[0]`` of each
chunk reads the second choice's call, in a chunk that holds that choice alone), so each is
evidence and each is stopped in safe mode, which replaces the whole reply (docs/targets.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from probegate.models.bounds import TOOL_CALLS_MAX
from probegate.transport.model_apis.base import (
    Completion,
    Excerpt,
    ModelApi,
    RawToolCall,
    ToolDecl,
    ToolResultSlot,
    call_id,
    content_text,
    count,
    error_of,
    items,
    mapping,
    position,
    unreadable,
)
from probegate.transport.sse import SseEvent, encode_events


def _arguments(raw: RawToolCall) -> str:
    return raw.arguments if isinstance(raw.arguments, str) else json.dumps(raw.arguments or {})


@dataclass
class _Stream:
    """What a stream's chunks add up to so far: the first choice's text, every choice's tool
    calls assembled by (choice, index) (a call's id, name and arguments arrive in pieces), the
    last usage."""

    text: list[str] = field(default_factory=list)
    calls: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    chunks: int = 0
    ended: bool = False

    def add(self, chunk: dict[str, Any]) -> None:
        self.chunks += 1
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in items(chunk.get("choices")):
            if isinstance(choice, dict):
                self._add_choice(choice, position(choice.get("index"), 0))

    def _add_choice(self, choice: dict[str, Any], which: int) -> None:
        self.ended = self.ended or bool(choice.get("finish_reason"))
        delta = mapping(choice.get("delta"))
        if which == 0 and isinstance(delta.get("content"), str):
            self.text.append(delta["content"])
        for item in items(delta.get("tool_calls")):
            if isinstance(item, dict):
                self._add_call_piece(item, which)

    def _add_call_piece(self, item: dict[str, Any], which: int) -> None:
        mine = sum(1 for key in self.calls if key[0] == which)
        index = position(item.get("index"), mine)
        slot = self.calls.setdefault((which, index), {"id": None, "name": "", "arguments": ""})
        if isinstance(item.get("id"), str) and item["id"]:
            slot["id"] = item["id"]
        function = mapping(item.get("function"))
        if isinstance(function.get("name"), str):
            slot["name"] += function["name"]
        if isinstance(function.get("arguments"), str):
            slot["arguments"] += function["arguments"]

    def completion(self) -> Completion:
        ordered = [self.calls[i] for i in sorted(self.calls)]
        return Completion(
            text="".join(self.text),
            tool_calls=tuple(
                RawToolCall(call_id(slot["id"], i), slot["name"], slot["arguments"])
                for i, slot in enumerate(ordered[:TOOL_CALLS_MAX])
            ),
            prompt_tokens=count(self.usage.get("prompt_tokens")),
            completion_tokens=count(self.usage.get("completion_tokens")),
            calls_made=len(ordered),
        )


class ChatApi(ModelApi):
    name = "openai-chat"
    path = "/chat/completions"
    what = "a chat completion"

    def headers(self, key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}

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
        body: dict[str, Any] = {**params, "model": model}
        body["messages"] = [{"role": "system", "content": system}, *history]
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters or {"type": "object", "properties": {}},
                    },
                }
                for t in tools
            ]
        if body.get("stream") is True:
            # Without it a stream reports no tokens, and the dollar budget would see none.
            options = body.get("stream_options")
            body["stream_options"] = {
                **(options if isinstance(options, dict) else {}),
                "include_usage": True,
            }
        return body

    def user_items(self, text: str) -> list[Any]:
        return [{"role": "user", "content": text}]

    def reply_items(self, reply: Completion, answered: Sequence[RawToolCall]) -> list[Any]:
        if not answered:
            return [{"role": "assistant", "content": reply.text}]
        calls = [
            {
                "id": raw.id,
                "type": "function",
                "function": {"name": raw.name, "arguments": _arguments(raw)},
            }
            for raw in answered
        ]
        return [{"role": "assistant", "content": reply.text or None, "tool_calls": calls}]

    def result_items(self, results: Sequence[tuple[RawToolCall, str, bool]]) -> list[Any]:
        return [
            {"role": "tool", "tool_call_id": raw.id, "content": text} for raw, text, _ in results
        ]

    def parse(self, data: Any, excerpt: Excerpt = str) -> Completion:
        if not isinstance(data, dict):
            raise unreadable(self.what, f"JSON {type(data).__name__}")
        choices = data.get("choices")
        if "error" in data and not choices:
            raise error_of(data, excerpt, self.what)
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise unreadable(self.what, f"no choices: {excerpt(json.dumps(data))}")
        ordered = sorted(
            (c for c in choices if isinstance(c, dict)), key=lambda c: position(c.get("index"), 0)
        )
        message = ordered[0].get("message")
        if not isinstance(message, dict):
            raise unreadable(self.what, "its choice has no message")
        raw_calls: list[Any] = []
        for choice in ordered:
            listed = mapping(choice.get("message")).get("tool_calls") or []
            if not isinstance(listed, list):
                raise unreadable(self.what, "a choice's tool_calls is not a list")
            raw_calls += listed
        calls: list[RawToolCall] = []
        for index, item in enumerate(raw_calls[:TOOL_CALLS_MAX]):
            function = item.get("function") if isinstance(item, dict) else None
            if not isinstance(function, dict):
                function = {}
            calls.append(
                RawToolCall(
                    id=call_id(item.get("id") if isinstance(item, dict) else None, index),
                    name=str(function.get("name") or ""),
                    arguments=function.get("arguments"),
                )
            )
        usage = mapping(data.get("usage"))
        return Completion(
            text=content_text(message.get("content")),
            tool_calls=tuple(calls),
            prompt_tokens=count(usage.get("prompt_tokens")),
            completion_tokens=count(usage.get("completion_tokens")),
            calls_made=len(raw_calls),
        )

    def parse_events(self, events: Sequence[SseEvent], excerpt: Excerpt = str) -> Completion:
        stream = _Stream()
        for event in events:
            if event.data.strip() == "[DONE]":
                stream.ended = True
                break
            chunk = event.json()
            if not isinstance(chunk, dict):
                raise unreadable(self.what, "a chunk is not JSON", streamed=True)
            if "error" in chunk and not chunk.get("choices"):
                raise error_of(chunk, excerpt, self.what, streamed=True)
            stream.add(chunk)
        if not stream.chunks:
            raise unreadable(self.what, "no chunks", streamed=True)
        if not stream.ended:  # neither a finish_reason nor [DONE]: the stream was cut off
            raise unreadable(self.what, f"cut off after {stream.chunks} chunks", streamed=True)
        return stream.completion()

    # -- the proxy -------------------------------------------------------------------------
    def plant(self, body: dict[str, Any], text: str) -> None:
        messages = body.get("messages")
        if not isinstance(messages, list):
            return
        for message in messages:
            if isinstance(message, dict) and message.get("role") in ("system", "developer"):
                message["content"] = _appended(message.get("content"), text)
                return
        messages.insert(0, {"role": "system", "content": text})

    def declared_tools(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for tool in body.get("tools") or []:
            function = tool.get("function") if isinstance(tool, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                out.append(function)
        return out

    def tool_results(self, body: dict[str, Any]) -> list[ToolResultSlot]:
        slots = []
        for message in body.get("messages") or []:
            if not isinstance(message, dict) or message.get("role") != "tool":
                continue

            def put(text: str, _error: bool, message: dict[str, Any] = message) -> None:
                message["content"] = text

            call = message.get("tool_call_id")
            slots.append(ToolResultSlot(str(call or ""), content_text(message.get("content")), put))
        return slots

    def user_texts(self, body: dict[str, Any]) -> list[str]:
        return [
            content_text(m.get("content"))
            for m in body.get("messages") or []
            if isinstance(m, dict) and m.get("role") == "user"
        ]

    def end_of_turn(self, text: str, model: str, *, stream: bool) -> bytes:
        if not stream:
            reply = {
                "id": "chatcmpl-probegate",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                        "logprobs": None,
                    }
                ],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            }
            return json.dumps(reply).encode("utf-8")
        head = {"id": "chatcmpl-probegate", "object": "chat.completion.chunk", "created": 0}
        head["model"] = model

        def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
            return {**head, "choices": [choice]}

        return encode_events(
            [
                (None, chunk({"role": "assistant", "content": text}, None)),
                (None, chunk({}, "stop")),
                (None, "[DONE]"),
            ]
        )


def _appended(content: Any, text: str) -> Any:
    """System content with ``text`` at its end: a string, or a list of text parts."""
    if isinstance(content, list):
        return [*content, {"type": "text", "text": text}]
    before = content if isinstance(content, str) else ""
    return f"{before}\n\n{text}" if before else text


CHAT = ChatApi()
