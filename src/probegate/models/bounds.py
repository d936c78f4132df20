"""Bounds on what an agent sends: any text, any depth, any size, kept finite and storable.

Everything an agent says is data an attacker shapes (docs/targets.md, "Hostile output"):
a model cut off mid-emoji sends a lone surrogate, which no UTF-8 file can hold; a reply can
nest a thousand levels deep, past what the JSON decoder and the serialiser recurse through;
one reply can carry ten thousand tool calls or a megabyte of text, and a scan keeps every
transcript in memory and in its journal. So what an agent wrote is bounded where it enters:

- text is valid Unicode (each lone surrogate becomes U+FFFD, one character for one, so
  offsets stay true) and at most a limit long; a longer text keeps its head and its tail
  around a marker that names what was cut, and a :class:`Cut` records the original's length
  and SHA-256;
- a tool call's arguments are JSON data at most :data:`DEPTH_MAX` levels deep and
  :data:`ARGUMENTS_MAX` characters of JSON long; other arguments are kept as the head of
  their JSON text under ``_raw`` (the same place malformed arguments go), with a Cut;
- a reply body is parsed with everything deeper than :data:`PARSE_DEPTH_MAX` levels
  replaced by a marker string, so no decoder recursion limit is ever reached.

Nothing here knows the transcript: :mod:`probegate.models.transcript` applies these to its
fields, and any other reader of agent output (a scenario's AgentResult, a tool call arriving
over a network) uses the same functions.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

TEXT_MAX = 32_768  # characters kept of one reply text, tool result or error
NAME_MAX = 256  # characters kept of a tool name or a call id
ARGUMENTS_MAX = 16_384  # characters of JSON text kept of one tool call's arguments
DEPTH_MAX = 32  # levels of nesting kept in one tool call's arguments
TOOL_CALLS_MAX = 64  # tool calls kept of one reply (all the bundled probes need is 4)
SANDBOX_CALLS_MAX = 4 * TOOL_CALLS_MAX  # tool calls the sandbox answers in one attempt
TRANSCRIPT_MAX = 262_144  # characters of agent output kept per attempt, all turns together
PARSE_DEPTH_MAX = 128  # levels of a reply body parsed; deeper values become a marker string

RAW = "_raw"
_SURROGATE = re.compile("[\ud800-\udfff]")
# A JSON string or one bracket: enough to follow the nesting of a body without parsing it.
_JSON_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_OPENERS = frozenset(b"[{")
# A body's digits as "0" and every other byte as a space: 19 zeros in a row are a number orjson
# may read as a float (parse_bounded).
_DIGITS_ONLY = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_NUMBER = b"0" * 19
# Room kept beside a marker for the digits of its numbers.
_SLACK = 4


class Cut(BaseModel):
    """What probegate cut from one field an agent wrote, to keep the transcript bounded.

    ``field`` names the field of the object that holds this record (``content``,
    ``tool_calls``, ``arguments``, ``result``, ...). ``length`` and ``kept`` count characters of
    text (of JSON text for ``arguments``), or tool calls for ``tool_calls``; ``sha256`` is the
    digest of the original text in UTF-8 (empty for a count of tool calls), so a copy of the
    original can always be matched to the transcript that kept only part of it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str
    length: int = Field(ge=0)
    kept: int = Field(ge=0)
    sha256: str = ""


def valid_unicode(text: str) -> str:
    """``text`` as valid Unicode: every lone surrogate becomes U+FFFD, one for one."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", text)


def digest(text: str) -> str:
    """SHA-256 of the text as the agent sent it, lone surrogates included."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _marker(cut: int, length: int, sha256: str) -> str:
    return f"\n[probegate cut {cut} of {length} characters here; sha256 {sha256[:16]}]\n"


def cut_text(text: str, limit: int, field: str) -> tuple[str, Cut | None]:
    """``text`` cleaned and at most ``limit`` characters long, and the Cut when it was longer.

    A long text keeps three quarters of the room from its head and the rest from its tail
    (an exfiltration link appended to a long reply is still seen), with a marker between
    naming how much was cut. The result is never longer than ``limit``, so cutting again
    changes nothing.
    """
    cleaned = valid_unicode(text)
    if len(cleaned) <= limit:
        return cleaned, None
    length = len(text)
    sha256 = digest(text)
    room = limit - len(_marker(length, length, sha256)) - _SLACK
    if room < 64:
        kept, count = cleaned[: max(limit, 0)], max(limit, 0)
    else:
        head = room * 3 // 4
        tail = room - head
        kept = cleaned[:head] + _marker(length - room, length, sha256) + cleaned[-tail:]
        count = room
    return kept, Cut(field=field, length=length, kept=count, sha256=sha256)


# --- JSON values --------------------------------------------------------------------------


class _TooBig(Exception):
    """The value is not plain JSON data within the bounds."""


@dataclass
class _Room:
    left: int

    def take(self, size: int) -> None:
        self.left -= size
        if self.left < 0:
            raise _TooBig


def _within(value: Any, depth: int, room: _Room) -> Any:
    """A clean copy of ``value`` when it is JSON data within ``depth`` and ``room``."""
    if isinstance(value, str):
        room.take(len(value) + 2)
        return valid_unicode(value)
    if value is None or isinstance(value, bool):
        room.take(5)
        return value
    if isinstance(value, int):
        # Beyond 64 bits other JSON readers lose precision, and Python refuses to print it.
        if abs(value) >= 2**63:
            raise _TooBig
        room.take(20)
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _TooBig
        room.take(24)
        return value
    if depth <= 0:
        raise _TooBig
    if isinstance(value, dict):
        room.take(2)
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _TooBig
            room.take(len(key) + 3)
            out[valid_unicode(key)] = _within(item, depth - 1, room)
        return out
    if isinstance(value, list | tuple):
        room.take(2)
        return [_within(item, depth - 1, room) for item in value]
    raise _TooBig


@dataclass(frozen=True)
class _Piece:
    """Literal JSON text on the encoder's stack; ``closes`` the container it ends."""

    text: str
    closes: int = 0


def _scalar(value: Any) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    elif value is not None and not isinstance(value, str | int | float):
        value = _str(value)
    try:
        return json.dumps(value, ensure_ascii=False)
    except ValueError:  # an int too long to print
        return json.dumps(f"<{type(value).__name__}>")


def _str(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # a broken __str__ in the agent's object must not break the scan
        return f"<unprintable {type(value).__name__}>"


def json_pieces(value: Any) -> Iterator[str]:
    """The JSON text of any value, in pieces, with keys sorted: at any depth, without recursion.

    The text is ``json.dumps(value, sort_keys=True, ensure_ascii=False)``'s for JSON data.

    Objects that are not JSON data are written as their ``str()``, and a container that
    contains itself as ``"[cycle]"``: whatever an agent built can be written down.
    """
    stack: list[Any] = [value]
    open_ids: set[int] = set()
    while stack:
        item = stack.pop()
        if type(item) is _Piece:
            open_ids.discard(item.closes)
            yield item.text
            continue
        if not isinstance(item, dict | list | tuple | set | frozenset):
            yield _scalar(item)
            continue
        ident = id(item)
        if ident in open_ids:
            yield '"[cycle]"'
            continue
        open_ids.add(ident)
        parts: list[Any] = []
        if isinstance(item, dict):
            parts.append(_Piece("{"))
            entries = sorted(((_str(k), v) for k, v in item.items()), key=lambda kv: kv[0])
            for index, (key, member) in enumerate(entries):
                parts.append(_Piece((", " if index else "") + json.dumps(key, ensure_ascii=False)))
                parts.append(_Piece(": "))
                parts.append(member)
            parts.append(_Piece("}", ident))
        else:
            parts.append(_Piece("["))
            for index, member in enumerate(item):
                if index:
                    parts.append(_Piece(", "))
                parts.append(member)
            parts.append(_Piece("]", ident))
        stack.extend(reversed(parts))


def json_head(value: Any, limit: int) -> tuple[str, int, str]:
    """The first ``limit`` characters of ``value``'s JSON text, its length and its SHA-256."""
    hasher = hashlib.sha256()
    head: list[str] = []
    kept = 0
    length = 0
    for piece in json_pieces(value):
        hasher.update(piece.encode("utf-8", "surrogatepass"))
        length += len(piece)
        if kept < limit:
            part = piece[: limit - kept]
            head.append(part)
            kept += len(part)
    return valid_unicode("".join(head)), length, hasher.hexdigest()


def text_of(value: Any, limit: int = TEXT_MAX) -> str:
    """Any value as bounded text: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    head, length, sha256 = json_head(value, limit)
    if length <= limit:
        return head
    return head + _marker(length - len(head), length, sha256)


def bound_value(value: Any, limit: int = TRANSCRIPT_MAX) -> Any:
    """JSON data within :data:`DEPTH_MAX` levels and ``limit`` characters as it is (cleaned),
    anything else as its bounded JSON text (:func:`text_of`)."""
    try:
        return _within(value, DEPTH_MAX, _Room(limit))
    except _TooBig:
        return text_of(value, limit)


def bound_arguments(value: Any) -> tuple[dict[str, Any], Cut | None]:
    """A tool call's arguments within the bounds, and the Cut when they were not.

    Plain JSON data within :data:`DEPTH_MAX` levels and :data:`ARGUMENTS_MAX` characters is
    kept as it is (lone surrogates cleaned). Anything else (deeper, longer, not JSON) is kept
    as the head of its JSON text under ``_raw``, where oracles still read it.
    """
    if isinstance(value, dict):
        raw = value.get(RAW)
        if len(value) == 1 and isinstance(raw, str):  # already text: cut it as text
            text, cut = cut_text(raw, ARGUMENTS_MAX, "arguments")
            return {RAW: text}, cut
        try:
            return _within(value, DEPTH_MAX, _Room(ARGUMENTS_MAX)), None
        except _TooBig:
            pass
    head, length, sha256 = json_head(value, ARGUMENTS_MAX - 128)
    if length > len(head):
        head += _marker(length - len(head), length, sha256)
    return {RAW: head}, Cut(field="arguments", length=length, kept=len(head), sha256=sha256)


def calls_cut(made: int, kept: int) -> Cut | None:
    """The record of tool calls an agent made beyond what its transcript keeps."""
    return Cut(field="tool_calls", length=made, kept=kept) if made > kept else None


# --- parsing bodies -----------------------------------------------------------------------


def loads_bounded(raw: bytes | str, max_depth: int = PARSE_DEPTH_MAX) -> Any:
    """``json.loads``, with every value nested deeper than ``max_depth`` replaced by a marker.

    The decoder recurses once per level and fails past the interpreter's recursion limit; a
    2 KB body can nest a thousand levels. A body with fewer brackets than ``max_depth`` cannot
    be that deep and is parsed as it is; another is first rewritten, each too-deep value
    becoming the string ``"[probegate cut N bytes nested deeper than D levels; sha256 ...]"``.
    Invalid JSON still raises ``ValueError`` (``json.JSONDecodeError``).
    """
    return parse_bounded(raw, max_depth)[0]


def parse_bounded(raw: bytes | str, max_depth: int = PARSE_DEPTH_MAX) -> tuple[Any, bool]:
    """:func:`loads_bounded`'s value, and whether orjson read it (see :func:`dumps_parsed`).

    Every model reply, streamed event and proxied request is parsed here, so the parser is
    orjson: 9 us with the check below, against json's 17, for a 3 KB chat request (2.2 against
    3.7 for a reply). It reads the same value as json but for an integer past 64 bits, which
    it makes a float (2**64 becomes 1.8446744073709552e+19): a body with 19 digits in a row
    anywhere, in a string too, goes to json, as does what orjson refuses and json reads (NaN,
    a lone surrogate, a byte-order mark, UTF-16). The value is json's in every case.
    """
    text: str | None = None
    if isinstance(raw, str):
        text, data = raw, raw.encode("utf-8", "surrogatepass")
    else:
        data = raw
    if data.count(b"[") + data.count(b"{") > max_depth:
        data = _flatten(data, max_depth)
        text = None if text is None else data.decode("utf-8", "surrogatepass")
    if _LONG_NUMBER not in data.translate(_DIGITS_ONLY):
        try:
            return orjson.loads(data), True
        except orjson.JSONDecodeError:
            pass
    try:
        # Text (a tool call's arguments) is read as text: as bytes, json would take a NUL for
        # UTF-16 ("1\x00" read as 1) and drop a byte-order mark it refuses in text.
        return json.loads(data if text is None else text), False
    except RecursionError:  # deeper than the rewrite could see (unbalanced brackets)
        raise ValueError(f"JSON nested deeper than {max_depth} levels") from None


def dumps_parsed(value: Any, *, by_orjson: bool) -> bytes:
    """JSON text (UTF-8) of a value :func:`parse_bounded` read, changed since or not.

    orjson writes it 15 times faster than json, but writes a NaN or an infinity as ``null``;
    only json's parse can hold one, so a value json read is written by json. So is one orjson
    will not write (a lone surrogate, an integer past 64 bits). orjson's text is compact and
    keeps non-ASCII characters as they are: the same JSON value.
    """
    if by_orjson:
        try:
            return orjson.dumps(value)
        except TypeError:  # orjson.JSONEncodeError
            pass
    return json.dumps(value).encode("utf-8")


def nested_deeper(data: bytes, max_depth: int = PARSE_DEPTH_MAX) -> bool:
    """Whether JSON text nests deeper than ``max_depth`` (brackets in strings aside): one
    linear pass, for a reader that refuses such a body instead of cutting it."""
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return False
    depth = 0
    for token in _JSON_TOKEN.finditer(data):
        first = token.group()[0]
        if first == ord('"'):
            continue
        depth += 1 if first in _OPENERS else -1
        if depth > max_depth:
            return True
    return False


def _flatten(data: bytes, max_depth: int) -> bytes:
    out: list[bytes] = []
    depth = 0
    start = 0  # where the kept text resumes
    cut_at = -1  # where the value being cut began
    for token in _JSON_TOKEN.finditer(data):
        if token.group()[0] == ord('"'):
            continue
        if token.group()[0] in _OPENERS:
            depth += 1
            if depth == max_depth + 1 and cut_at < 0:
                cut_at = token.start()
        else:
            depth -= 1
            if depth == max_depth and cut_at >= 0:
                removed = data[cut_at : token.end()]
                sha256 = hashlib.sha256(removed).hexdigest()
                note = (
                    f'"[probegate cut {len(removed)} bytes nested deeper than {max_depth} '
                    f'levels; sha256 {sha256[:16]}]"'
                )
                out += [data[start:cut_at], note.encode()]
                start = token.end()
                cut_at = -1
    out.append(data[start:] if cut_at < 0 else data[start:cut_at] + b'""')
    return b"".join(out)
