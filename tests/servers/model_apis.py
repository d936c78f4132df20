"""A loopback model server that speaks all three model APIs, streamed and not.

``/v1/chat/completions`` (OpenAI Chat Completions), ``/v1/responses`` (OpenAI Responses) and
``/v1/messages`` (Anthropic Messages), each as a whole JSON reply or, when the request says
``"stream": true``, as the API's server-sent events. Behind all three sits one decision maker
with the ``reply(messages, tools)`` of tests/servers/openai_agent.py (``FakeAgent``: weak or
hardened) or tests/servers/careful_openai.py (``CarefulChatAgent``): each request is read into
chat messages, and the decision written back in the API it came in. The translation is written
here from the APIs' documentation, independently of probegate's own reader
(``probegate.transport.model_apis``), so a test through this server checks probegate's shapes
against a second reading, and the official SDKs (tests/targets/test_model_proxy.py) check
this server.

Credentials are checked the way each API does: ``Authorization: Bearer`` for OpenAI,
``x-api-key`` and a required ``anthropic-version`` for Anthropic. ``faults`` makes the first
replies 200s no client can read (a gateway's HTML page, the API's error object, a body or a
stream cut off half-way), which probegate must retry like a 5xx.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from tests.servers.base import Handler, LoopbackServer
from tests.servers.openai_agent import FakeAgent

ROUTES = {
    "/chat/completions": "chat",
    "/responses": "responses",
    "/messages": "messages",
}
USAGE = (100, 20)  # prompt and completion tokens of every reply


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text(part) for part in content)
    if isinstance(content, dict):
        return str(content.get("text") or content.get("content") or "")
    return ""


# -- requests, read into chat messages --------------------------------------------------------


def chat_view(api: str, body: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """(chat messages, {tool name: description}) of a request in ``api``."""
    if api == "chat":
        tools = {
            t["function"]["name"]: str(t["function"].get("description") or "")
            for t in body.get("tools") or []
        }
        return list(body.get("messages") or []), tools
    if api == "responses":
        return _responses_messages(body), {
            t["name"]: str(t.get("description") or "")
            for t in body.get("tools") or []
            if t.get("type") == "function"
        }
    return _anthropic_messages(body), {
        t["name"]: str(t.get("description") or "") for t in body.get("tools") or []
    }


def _responses_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or []:
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") in ("system", "developer") and messages:
            messages[0]["content"] += "\n\n" + _text(item.get("content"))
        elif kind == "message":
            messages.append({"role": item["role"], "content": _text(item.get("content"))})
        elif kind == "function_call":
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item.get("arguments") or "{}"},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append(
                {"role": "tool", "tool_call_id": item["call_id"], "content": _text(output)}
            )
    return messages


def _anthropic_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": _text(body.get("system"))}]
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            messages.append({"role": message["role"], "content": content})
            continue
        if message["role"] == "assistant":
            text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {})},
                }
                for b in content
                if b.get("type") == "tool_use"
            ]
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                entry["tool_calls"] = calls
            messages.append(entry)
            continue
        for block in content:
            if block.get("type") == "tool_result":
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": block["tool_use_id"],
                        "content": _text(block.get("content")),
                    }
                )
            elif block.get("type") == "text":
                messages.append({"role": "user", "content": block["text"]})
    return messages


# -- replies, written in the API they were asked in ------------------------------------------


def _arguments(call: dict[str, Any]) -> Any:
    return call["function"]["arguments"]


def _call_id(call: dict[str, Any], index: int) -> str:
    return str(call.get("id") or f"call_srv_{index}")


def reply_json(api: str, model: str, content: Any, calls: list[dict[str, Any]]) -> dict[str, Any]:
    text = _text(content) if content is not None else ""
    prompt, completion = USAGE
    if api == "chat":
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        return {
            "id": "chatcmpl-srv",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
    if api == "responses":
        output: list[dict[str, Any]] = []
        if text:
            output.append(
                {
                    "id": "msg_srv",
                    "type": "message",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            )
        for i, call in enumerate(calls):
            output.append(
                {
                    "id": f"fc_srv_{i}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": _call_id(call, i),
                    "name": call["function"]["name"],
                    "arguments": _arguments(call),
                }
            )
        return {
            "id": "resp_srv",
            "object": "response",
            "created_at": 0,
            "status": "completed",
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
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion,
            },
        }
    blocks: list[dict[str, Any]] = []
    if text:
        blocks.append({"type": "text", "text": text})
    for i, call in enumerate(calls):
        try:
            arguments = json.loads(_arguments(call))
        except ValueError:
            arguments = {}
        blocks.append(
            {
                "type": "tool_use",
                "id": f"toolu_{_call_id(call, i)}",
                "name": call["function"]["name"],
                "input": arguments if isinstance(arguments, dict) else {},
            }
        )
    return {
        "id": "msg_srv",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return "".join(out).encode()


def reply_stream(api: str, whole: dict[str, Any]) -> bytes:
    """The same reply as the API streams it, text and arguments in small pieces."""
    if api == "chat":
        message = whole["choices"][0]["message"]
        head = {k: whole[k] for k in ("id", "created", "model")}
        head["object"] = "chat.completion.chunk"

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant"}))]
        text = _text(message.get("content"))
        events += [(None, chunk({"content": text[i : i + 7]})) for i in range(0, len(text), 7)]
        for index, call in enumerate(message.get("tool_calls") or []):
            first = {
                "index": index,
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            if call.get("id"):
                first["id"] = call["id"]
            events.append((None, chunk({"tool_calls": [first]})))
            arguments = call["function"]["arguments"]
            for i in range(0, len(arguments), 9):
                piece = {"index": index, "function": {"arguments": arguments[i : i + 9]}}
                events.append((None, chunk({"tool_calls": [piece]})))
        events.append((None, chunk({}, whole["choices"][0]["finish_reason"])))
        events.append((None, {**head, "choices": [], "usage": whole["usage"]}))
        events.append((None, "[DONE]"))
        return _sse(events)
    if api == "responses":
        seq = iter(range(10_000))
        started = {**whole, "status": "in_progress", "output": []}
        events = [
            ("response.created", {"type": "response.created", "response": started}),
        ]
        for index, item in enumerate(whole["output"]):
            events.append(
                (
                    "response.output_item.added",
                    {
                        "type": "response.output_item.added",
                        "output_index": index,
                        "item": {**item, "status": "in_progress"},
                    },
                )
            )
            if item["type"] == "message":
                text = item["content"][0]["text"]
                for i in range(0, len(text), 7):
                    events.append(
                        (
                            "response.output_text.delta",
                            {
                                "type": "response.output_text.delta",
                                "item_id": item["id"],
                                "output_index": index,
                                "content_index": 0,
                                "delta": text[i : i + 7],
                                "logprobs": [],
                            },
                        )
                    )
            else:
                events.append(
                    (
                        "response.function_call_arguments.done",
                        {
                            "type": "response.function_call_arguments.done",
                            "item_id": item["id"],
                            "output_index": index,
                            "arguments": item["arguments"],
                        },
                    )
                )
            events.append(
                (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": index, "item": item},
                )
            )
        events.append(("response.completed", {"type": "response.completed", "response": whole}))
        return _sse([(name, {**data, "sequence_number": next(seq)}) for name, data in events])
    start = {**whole, "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": whole["usage"]["input_tokens"], "output_tokens": 1}
    events = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(whole["content"]):
        if block["type"] == "text":
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            text = block["text"]
            for i in range(0, len(text), 7):
                delta = {"type": "text_delta", "text": text[i : i + 7]}
                events.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": delta},
                    )
                )
        else:
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {**block, "input": {}},
                    },
                )
            )
            arguments = json.dumps(block["input"])
            for i in range(0, len(arguments), 9):
                delta = {"type": "input_json_delta", "partial_json": arguments[i : i + 9]}
                events.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": delta},
                    )
                )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": whole["usage"]["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return _sse(events)


class Faults:
    """The first replies' faults, one each, in order (thread-safe): a 200 no client can read
    (``html``: a gateway's page; ``shape``: the API's error object; ``cut``: JSON or an event
    stream cut off half-way). The replies after them are the model's."""

    def __init__(self, faults: tuple[str, ...] = ()) -> None:
        self._left = list(faults)
        self._lock = threading.Lock()

    def next(self) -> str | None:
        with self._lock:
            return self._left.pop(0) if self._left else None


def send_reply(
    handler: Handler, api: str, whole: dict[str, Any], stream: bool, fault: str | None
) -> None:
    """The model's reply in ``api``, streamed when asked; or, with ``fault``, a 200 the API's
    client cannot read, as gateways and cut connections send them."""
    if fault is None and stream:
        handler.send_raw(200, reply_stream(api, whole), content_type="text/event-stream")
    elif fault is None:
        handler.send_json(200, whole)
    elif fault == "html":
        page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
        handler.send_raw(200, page, content_type="text/html")
    elif fault == "shape":  # the API's own error object, in a 200
        handler.send_json(200, refusal_body(api, "the model is overloaded"))
    elif fault == "cut" and stream:  # the first half of the events: the end never comes
        events = reply_stream(api, whole).split(b"\n\n")
        half = b"\n\n".join(events[: len(events) // 2]) + b"\n\n"
        handler.send_raw(200, half, content_type="text/event-stream")
    elif fault == "cut":
        raw = json.dumps(whole).encode()
        handler.send_raw(200, raw[: len(raw) // 2])
    else:
        raise AssertionError(f"no such fault {fault!r}")


class _ModelApiHandler(Handler):
    def do_POST(self) -> None:
        server: ModelApiServer = self.owner
        server.count()
        body = self.read_json()
        api = next((a for suffix, a in ROUTES.items() if self.path.endswith(suffix)), None)
        if api is None or not isinstance(body, dict):
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        refusal = self._refusal(api)
        if refusal is not None:
            self.send_json(401 if "key" in refusal else 400, refusal_body(api, refusal))
            return
        with server.lock:
            server.bodies.append((api, body))
            server.headers_seen.append(dict(self.headers))
        if server.latency:
            time.sleep(server.latency)
        messages, tools = chat_view(api, body)
        content, calls = server.agent.reply(messages, tools)
        whole = reply_json(api, str(body.get("model") or ""), content, calls)
        send_reply(self, api, whole, body.get("stream") is True, server.faults.next())

    def _refusal(self, api: str) -> str | None:
        key: str | None = self.owner.api_key
        if api == "messages":
            if not self.headers.get("anthropic-version"):
                return "anthropic-version header is required"
            if key is not None and self.headers.get("x-api-key") != key:
                return "invalid x-api-key"
            return None
        if key is not None and self.headers.get("Authorization") != f"Bearer {key}":
            return "invalid api key"
        return None


def refusal_body(api: str, message: str) -> dict[str, Any]:
    if api == "messages":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return {"error": {"message": message, "type": "invalid_request_error"}}


class ModelApiServer(LoopbackServer):
    """One decision maker behind all three APIs; ``base_url`` ends in ``/v1``."""

    handler = _ModelApiHandler

    def __init__(
        self,
        *,
        agent: Any = None,
        api_key: str | None = None,
        latency: float = 0.0,
        faults: tuple[str, ...] = (),
    ) -> None:
        super().__init__()
        self.agent = agent if agent is not None else FakeAgent(hardened=False)
        self.api_key = api_key
        self.latency = latency
        self.faults = Faults(faults)
        self.bodies: list[tuple[str, dict[str, Any]]] = []
        self.headers_seen: list[dict[str, str]] = []

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def of(self, api: str) -> list[dict[str, Any]]:
        """The request bodies of one API, in order."""
        with self.lock:
            return [body for used, body in self.bodies if used == api]
