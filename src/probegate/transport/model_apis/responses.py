"""OpenAI Responses (``POST /responses``): the API OpenAI's newest models call tools through.

A request carries ``instructions`` and a list of ``input`` items; a reply is a list of
``output`` items (``message`` items with ``output_text`` parts, ``function_call`` items with a
``call_id``), and a tool's answer goes back as a ``function_call_output`` item. probegate sends
the whole conversation every time (no ``previous_response_id``), so it keeps no state on the
server. A stream is typed events, the last of which (``response.completed``) holds the whole
response; a stream cut off before it is unreadable (what came after the cut is missing) and
retried like a 5xx.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

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
    unreadable,
)
from probegate.transport.sse import SseEvent, encode_events

_FINAL = ("response.completed", "response.incomplete")
_MESSAGE_ID = "msg_probegate"


def _arguments(raw: RawToolCall) -> str:
    return raw.arguments if isinstance(raw.arguments, str) else json.dumps(raw.arguments or {})


def _message_text(item: dict[str, Any]) -> str:
    parts = []
    for part in item.get("content") or []:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif isinstance(part.get("refusal"), str):
            parts.append(part["refusal"])
    return "".join(parts)


def _response(model: str, output: list[dict[str, Any]], status: str) -> dict[str, Any]:
    return {
        "id": "resp_probegate",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": model,
        "output": output,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "usage": {
            "input_tokens": 0,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 0,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 0,
        },
    }


class ResponsesApi(ModelApi):
    name = "openai-responses"
    path = "/responses"
    what = "a Responses API response"

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
        body: dict[str, Any] = {**params, "model": model, "instructions": system}
        body["input"] = list(history)
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters or {"type": "object", "properties": {}},
                }
                for t in tools
            ]
        return body

    def user_items(self, text: str) -> list[Any]:
        return [{"role": "user", "content": text}]

    def reply_items(self, reply: Completion, answered: Sequence[RawToolCall]) -> list[Any]:
        items: list[Any] = []
        if reply.text or not answered:
            items.append({"role": "assistant", "content": reply.text})
        items += [
            {
                "type": "function_call",
                "call_id": raw.id,
                "name": raw.name,
                "arguments": _arguments(raw),
            }
            for raw in answered
        ]
        return items

    def result_items(self, results: Sequence[tuple[RawToolCall, str, bool]]) -> list[Any]:
        return [
            {"type": "function_call_output", "call_id": raw.id, "output": text}
            for raw, text, _ in results
        ]

    def parse(self, data: Any, excerpt: Excerpt = str) -> Completion:
        if not isinstance(data, dict):
            raise unreadable(self.what, f"JSON {type(data).__name__}")
        output = data.get("output")
        if data.get("error") or data.get("status") == "failed" or not isinstance(output, list):
            if data.get("error") or "output" not in data:
                raise error_of(data, excerpt, self.what)
            raise unreadable(self.what, f"its output is not a list: {excerpt(json.dumps(data))}")
        usage = mapping(data.get("usage"))
        return self._completion(output, usage)

    def _completion(self, output: list[Any], usage: dict[str, Any]) -> Completion:
        reply = ReplyParts()
        for item in output:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "message":
                reply.text.append(_message_text(item))
            elif item.get("type") == "function_call":
                reply.call(item.get("call_id"), item.get("name"), item.get("arguments"))
        return reply.completion(count(usage.get("input_tokens")), count(usage.get("output_tokens")))

    def parse_events(self, events: Sequence[SseEvent], excerpt: Excerpt = str) -> Completion:
        typed = 0
        for event in events:
            data = event.json()
            if not isinstance(data, dict):
                continue
            kind = data.get("type") or event.event
            typed += 1
            if kind == "error" or kind == "response.failed":
                problem = data.get("response", data)
                failed = problem if isinstance(problem, dict) else data
                raise error_of(failed, excerpt, self.what, streamed=True)
            if kind in _FINAL and isinstance(data.get("response"), dict):
                # The final event carries the whole response: the pieces before it add nothing.
                return self.parse(data["response"], excerpt)
        if not typed:
            raise unreadable(self.what, "no events", streamed=True)
        # No response.completed: the stream was cut off, and what came after is missing.
        raise unreadable(self.what, f"cut off after {typed} events", streamed=True)

    # -- the proxy -------------------------------------------------------------------------
    def plant(self, body: dict[str, Any], text: str) -> None:
        instructions = body.get("instructions")
        if isinstance(instructions, str) and instructions:
            body["instructions"] = f"{instructions}\n\n{text}"
            return
        items = body.get("input")
        if isinstance(items, list):
            for item in items:
                if isinstance(item, dict) and item.get("role") in ("system", "developer"):
                    content = item.get("content")
                    if isinstance(content, list):
                        item["content"] = [*content, {"type": "input_text", "text": text}]
                    else:
                        before = content if isinstance(content, str) else ""
                        item["content"] = f"{before}\n\n{text}" if before else text
                    return
        body["instructions"] = text

    def declared_tools(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            tool
            for tool in body.get("tools") or []
            if isinstance(tool, dict)
            and tool.get("type") == "function"
            and isinstance(tool.get("name"), str)
        ]

    def tool_results(self, body: dict[str, Any]) -> list[ToolResultSlot]:
        slots = []
        items = body.get("input")
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or item.get("type") != "function_call_output":
                continue

            def put(text: str, _error: bool, item: dict[str, Any] = item) -> None:
                item["output"] = text

            output = item.get("output")
            slots.append(ToolResultSlot(str(item.get("call_id") or ""), content_text(output), put))
        return slots

    def user_texts(self, body: dict[str, Any]) -> list[str]:
        items = body.get("input")
        if isinstance(items, str):
            return [items]
        listed = items if isinstance(items, list) else []
        return [
            content_text(item.get("content"))
            for item in listed
            if isinstance(item, dict) and item.get("role") == "user"
        ]

    def end_of_turn(self, text: str, model: str, *, stream: bool) -> bytes:
        part = {"type": "output_text", "text": text, "annotations": []}
        item = {
            "id": _MESSAGE_ID,
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [part],
        }
        if not stream:
            return json.dumps(_response(model, [item], "completed")).encode("utf-8")
        at = {"item_id": _MESSAGE_ID, "output_index": 0, "content_index": 0}
        steps: list[dict[str, Any]] = [
            {"type": "response.created", "response": _response(model, [], "in_progress")},
            {"type": "response.in_progress", "response": _response(model, [], "in_progress")},
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress", "content": []},
            },
            {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
            {"type": "response.output_text.delta", **at, "delta": text, "logprobs": []},
            {"type": "response.output_text.done", **at, "text": text, "logprobs": []},
            {"type": "response.content_part.done", **at, "part": part},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": _response(model, [item], "completed")},
        ]
        return encode_events(
            (step["type"], {**step, "sequence_number": n}) for n, step in enumerate(steps)
        )


RESPONSES = ResponsesApi()
