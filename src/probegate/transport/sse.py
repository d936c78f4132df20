"""Server-sent events, the streaming form of all three model APIs (docs/targets.md).

A model API streams a reply as ``text/event-stream``: blocks of ``event:`` and ``data:``
lines separated by a blank line. probegate reads whole streams (a direct loop and the
model-API proxy both need every tool call of a reply before acting on it), so this is a
parser of a complete body and an encoder of events, nothing incremental.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from probegate.models.bounds import loads_bounded

CONTENT_TYPE = "text/event-stream"
_LINES = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class SseEvent:
    """One event: its name (``message`` when the stream gave none) and its data."""

    event: str
    data: str

    def json(self) -> Any:
        """The data as JSON (bounded in depth, models/bounds.py); None when it is not JSON."""
        try:
            return loads_bounded(self.data)
        except ValueError:
            return None


def is_event_stream(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == CONTENT_TYPE


def parse_events(raw: bytes | str) -> list[SseEvent]:
    """Every event of a complete stream, by the rules of the HTML standard's event stream.

    Comments (``:``) and ``id``/``retry`` lines are read and dropped; several ``data`` lines
    of one event are joined by a line break; an event with no data is not dispatched.
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    text = text.removeprefix("\ufeff")
    events: list[SseEvent] = []
    name, data = "", list[str]()
    for line in [*_LINES.split(text), ""]:
        if not line:
            if data:
                events.append(SseEvent(name or "message", "\n".join(data)))
            name, data = "", list[str]()
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    return events


def encode_events(events: Iterable[tuple[str | None, Any]]) -> bytes:
    """``(event name or None, data)`` pairs as a stream; data that is not a string is JSON."""
    out: list[str] = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        head = f"event: {name}\n" if name else ""
        body = "".join(f"data: {line}\n" for line in text.split("\n"))
        out.append(f"{head}{body}\n")
    return "".join(out).encode("utf-8")
