"""What every model API is to probegate, whichever side of it probegate stands on.

probegate is a *client* of a model API when it runs an agent's loop itself (the ``openai`` and
``anthropic`` kinds) or asks the LLM judge, and it stands *between* an agent and its model API
as the model-API proxy (docs/targets.md). Both sides meet the same shapes, so each API is one
:class:`ModelApi`, read and written in one module, and the rest of probegate sees a reply only
as a :class:`Completion`: its text, its tool calls, its tokens.

Replies are read defensively: a reply without its API's shape (an error object in a 200, a
stream that ends before the API's end of reply) is a
:class:`~probegate.transport.usage.MalformedReply`, which the HTTP client retries like a 5xx
(missing evidence is a transient fault, and after the retries the attempt is unjudged, never
resisted), and at most :data:`~probegate.models.bounds.TOOL_CALLS_MAX` tool calls of one reply
are read.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from probegate.models.bounds import TOOL_CALLS_MAX
from probegate.transport.sse import SseEvent
from probegate.transport.usage import UNREADABLE, MalformedReply

Excerpt = Callable[[str], str]


@dataclass(frozen=True)
class RawToolCall:
    """One tool call as the model wrote it, before anything answers it."""

    id: str
    name: str
    arguments: Any  # a JSON text (OpenAI) or an object (Anthropic), as sent


@dataclass(frozen=True)
class Completion:
    """The parts of one model reply an agent loop, the judge and the proxy need."""

    text: str
    tool_calls: tuple[RawToolCall, ...]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # How many tool calls the reply asked for; only the first TOOL_CALLS_MAX are read.
    calls_made: int = 0


@dataclass
class ReplyParts:
    """A reply read block by block, as the Messages and Responses APIs list it: its text, and
    its tool calls, every one counted and the first TOOL_CALLS_MAX kept."""

    text: list[str] = field(default_factory=list)
    calls: list[RawToolCall] = field(default_factory=list)
    made: int = 0

    def call(self, raw_id: Any, name: Any, arguments: Any) -> None:
        self.made += 1
        if len(self.calls) < TOOL_CALLS_MAX:
            self.calls.append(
                RawToolCall(call_id(raw_id, len(self.calls)), str(name or ""), arguments)
            )

    def completion(self, prompt_tokens: int, completion_tokens: int) -> Completion:
        return Completion(
            text="".join(self.text),
            tool_calls=tuple(self.calls),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            calls_made=self.made,
        )


@dataclass(frozen=True)
class ToolDecl:
    """A function tool as a request declares it to the model."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class ToolResultSlot:
    """Where a request carries one tool's result back to the model, for the proxy to rewrite."""

    call_id: str
    text: str
    _set: Callable[[str, bool], None]

    def replace(self, text: str, *, error: bool = False) -> None:
        """What the model reads as the call's result from now on (``error``: a failed call)."""
        self._set(text, error)


def content_text(content: Any) -> str:
    """Message content as text: a string, null, or a list of typed parts (``text`` fields)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    return json.dumps(content, sort_keys=True)


def count(value: Any) -> int:
    """A token count as an API reports it: a non-negative integer, anything else is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def mapping(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one for anything else (a reply's optional parts)."""
    return value if isinstance(value, dict) else {}


def items(value: Any) -> list[Any]:
    """A JSON array, or an empty one for anything else (a reply's optional lists)."""
    return value if isinstance(value, list) else []


def position(value: Any, default: int) -> int:
    """An ``index`` field of a streamed piece, else ``default``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def call_id(value: Any, index: int) -> str:
    return value if isinstance(value, str) and value else f"call_pg_{index}"


def unreadable(what: str, problem: str, *, streamed: bool = False) -> MalformedReply:
    """A 200 whose body is not ``what``: retried like a 5xx, then the attempt's reason."""
    body = "an event stream" if streamed else "JSON"
    return MalformedReply(f"{UNREADABLE}: HTTP 200 with {body} that is not {what}: {problem}")


def error_of(data: Any, excerpt: Excerpt, what: str, *, streamed: bool = False) -> MalformedReply:
    """The API's own error object in a 200 (a gateway's, an overloaded model's), else a shape
    error naming ``what``: either way nothing the agent did can be read from it."""
    if isinstance(data, dict) and isinstance(data.get("error"), dict | str):
        problem = f"an error object: {excerpt(json.dumps(data['error']))}"
    else:
        problem = excerpt(json.dumps(data))
    return unreadable(what, problem, streamed=streamed)


class ModelApi(ABC):
    """One model API: its path, its credentials, its request and reply shapes, both sides."""

    name: ClassVar[str]  # the proxy's ``api`` value: openai-chat, openai-responses, ...
    path: ClassVar[str]  # appended to a base URL: /chat/completions, /responses, /messages
    what: ClassVar[str]  # a reply's name in messages: "a chat completion"

    def url(self, endpoint: str) -> str:
        """The endpoint URL of a base URL (one that already ends in the path is kept)."""
        base = endpoint.rstrip("/")
        return base if base.endswith(self.path) else base + self.path

    @abstractmethod
    def headers(self, key: str | None) -> dict[str, str]:
        """The headers every request of this API carries, and the API key's when there is one."""

    # -- probegate as the client ------------------------------------------------------------
    @abstractmethod
    def request(
        self,
        *,
        model: str,
        system: str,
        history: Sequence[Any],
        tools: Sequence[ToolDecl],
        params: dict[str, Any],
    ) -> dict[str, Any]:
        """The body of one call; ``params`` (temperature, stream, ...) are merged in first."""

    @abstractmethod
    def user_items(self, text: str) -> list[Any]:
        """What a user message adds to the history."""

    @abstractmethod
    def reply_items(self, reply: Completion, answered: Sequence[RawToolCall]) -> list[Any]:
        """What the model's reply adds to the history, with only the calls that are answered
        (every call in the history must have its result, and a cut one has none)."""

    @abstractmethod
    def result_items(self, results: Sequence[tuple[RawToolCall, str, bool]]) -> list[Any]:
        """What the answers of one reply's calls add: ``(call, text, failed)`` each."""

    @abstractmethod
    def parse(self, data: Any, excerpt: Excerpt = str) -> Completion:
        """A whole JSON reply."""

    @abstractmethod
    def parse_events(self, events: Sequence[SseEvent], excerpt: Excerpt = str) -> Completion:
        """A streamed reply, every event of it; one that ends before the API's end of reply
        was cut off, and what it would have said next is missing."""

    def read(self, data: Any, excerpt: Excerpt = str) -> Completion:
        """A reply as the HTTP client hands it over (the ``parse`` of
        :meth:`~probegate.transport.http.HttpClient.request_events`): the events of a stream,
        or JSON (a server may answer a stream request whole)."""
        if isinstance(data, list) and data and isinstance(data[0], SseEvent):
            return self.parse_events(data, excerpt)
        return self.parse(data, excerpt)

    def streams(self, body: Any) -> bool:
        """Whether a request asks for a streamed reply."""
        return isinstance(body, dict) and body.get("stream") is True

    # -- probegate between an agent and its model (the proxy) ---------------------------------
    @abstractmethod
    def plant(self, body: dict[str, Any], text: str) -> None:
        """Append ``text`` to the end of the request's system prompt or instructions."""

    @abstractmethod
    def declared_tools(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The function tools the request declares, as the dicts holding ``name`` and
        ``description`` (rewriting a dict's description rewrites the request)."""

    @abstractmethod
    def tool_results(self, body: dict[str, Any]) -> list[ToolResultSlot]:
        """Every tool result the request carries back to the model."""

    @abstractmethod
    def user_texts(self, body: dict[str, Any]) -> list[str]:
        """The text of every user message in the request, oldest first."""

    @abstractmethod
    def end_of_turn(self, text: str, model: str, *, stream: bool) -> bytes:
        """A complete reply that says ``text`` and calls no tool: JSON, or an event stream."""
