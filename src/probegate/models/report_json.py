"""Strict JSON for stored reports, and the one pass that reads a large report in little memory.

:mod:`probegate.models.stored` is the one reader of stored reports. Its rules (UTF-8, one
object, no key twice in an object, finite numbers, at most :data:`MAX_DEPTH` deep, no lone
surrogate) are the hooks here, which json's own C scanner calls as it parses.

Read whole, a 10,000-finding report (24 MB) held the file, its text (four bytes a character as
soon as one character lies outside the Basic Multilingual Plane: 96 MB), the parsed data and
the validated report at the same time: 340 MB at the peak. :func:`read_in_one_pass` reads it in
one pass instead:

- the file is read and decoded a piece at a time (:class:`_Text`), and what was parsed is let go;
- it walks the report's top-level object itself and hands each value to json's scanner, with
  the same hooks; each item of the large lists (``findings``, ``results``) is validated as soon
  as it is parsed, and its parsed data dropped, so parsed data is never held for more than one
  item;
- short strings that repeat from finding to finding (categories, detectors, paths, tool names)
  are kept once (:class:`_InterningObjects`);
- every validated model's set of given field names, which pydantic keeps per instance (2 KB for
  a finding, nearly half of a validated report), is shared between models whose sets are equal
  (:func:`probegate.perf.share_field_sets`).

It decides nothing: whatever it does not read to the end (a syntax error, a refusal of a hook, a
value that fails validation, another schema) makes it return None, and the caller reads the
report whole, which gives the one message, or the report. What it returns is equal to what the
whole read returns (tests/models/test_report_json.py holds the two equal).
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from probegate.canonical import canonical_bytes
from probegate.perf import share_field_sets

# Containers inside containers, the report object itself counted: the deepest JSON probegate's
# own serializer writes (pydantic stops at 255 levels below the report), so every report a scan
# wrote reads back, and nothing deeper reaches the emitters.
MAX_DEPTH = 256

# Bytes read at a time. A value longer than the text in hand is parsed again once more text is
# in; the text in hand at least doubles each time, so a value is parsed a few times at most.
CHUNK_BYTES = 1 << 20
# Characters a value is given in hand before it is parsed: a finding is rarely longer.
_AHEAD = 1 << 16
# Strings at most this long are kept once per read (a finding's category, detector, path,
# severity, tool names); longer ones rarely repeat. pydantic's JSON reader draws the same line.
_INTERN_MAX = 64
_INTERNED_MAX = 4096  # strings kept at a time
# A string escape that may be half of a surrogate pair (checked further only where it appears).
_SURROGATE_ESCAPES = ("\\ud", "\\uD")
_ESCAPE_BYTES = tuple(e.encode() for e in _SURROGATE_ESCAPES)
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SPACE = frozenset(" \t\n\r")


class StrictObjects:
    """The object hook of one parse: each object checked for a key given twice, and its depth
    (containers inside containers, itself counted) worked out as it is made, from its values'
    (an object's was noted when it was made; a list's is read here, the one time it is seen),
    so a report nested deeper than :data:`MAX_DEPTH` is refused without a second walk."""

    def __init__(self) -> None:
        self._depths: dict[int, int] = {}

    def read(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):
            _duplicate(pairs)
        deepest = 0
        for _key, value in pairs:
            kind = type(value)
            if kind is dict:
                depth = self._depths.pop(id(value))
            elif kind is list:
                depth = self._list(value)
            else:
                continue
            if depth > deepest:
                deepest = depth
        if deepest >= MAX_DEPTH:
            raise ValueError(f"nested more than {MAX_DEPTH} deep")
        self._depths[id(out)] = deepest + 1
        return out

    def depth(self, value: Any) -> int:
        """The depth of a value this parse returned whole (0 for a scalar)."""
        kind = type(value)
        if kind is dict:
            return self._depths.pop(id(value))
        if kind is list:
            return self._list(value)
        return 0

    def forget(self) -> None:
        """Drop the depths noted in a parse that was cut short (their objects are gone)."""
        self._depths.clear()

    def _list(self, items: list[Any]) -> int:
        deepest = 0
        for value in items:
            kind = type(value)
            if kind is dict:
                depth = self._depths.pop(id(value))
            elif kind is list:
                depth = self._list(value)
            else:
                continue
            if depth > deepest:
                deepest = depth
        return deepest + 1


class _InterningObjects(StrictObjects):
    """:class:`StrictObjects`, keeping one copy of each short string value that repeats.

    One ``security.data_exfiltration`` for many pieces of evidence: 14 MB less for a
    10,000-finding report. The strings seen last are kept in a small dict, emptied whenever it
    fills (the words that repeat are back in it within a finding or two): a dict of every
    short string of the report grew to 200,000 entries, and looking strings up in it took half
    as long again as in a small one.
    """

    def __init__(self) -> None:
        super().__init__()
        self._strings: dict[str, str] = {}

    # read and _list are StrictObjects' with the interning inlined: one walk shared by both
    # hooks read a 10,000-finding report 3 to 5 % slower, on the path bench_stored times.

    def read(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):
            _duplicate(pairs)
        strings = self._strings
        if len(strings) > _INTERNED_MAX:
            strings.clear()
        deepest = 0
        for key, value in pairs:
            kind = type(value)
            if kind is str:
                if len(value) <= _INTERN_MAX:
                    out[key] = strings.setdefault(value, value)
                continue
            if kind is dict:
                depth = self._depths.pop(id(value))
            elif kind is list:
                depth = self._list(value)
            else:
                continue
            if depth > deepest:
                deepest = depth
        if deepest >= MAX_DEPTH:
            raise ValueError(f"nested more than {MAX_DEPTH} deep")
        self._depths[id(out)] = deepest + 1
        return out

    def _list(self, items: list[Any]) -> int:
        strings = self._strings
        deepest = 0
        for index, value in enumerate(items):
            kind = type(value)
            if kind is str:
                if len(value) <= _INTERN_MAX:
                    items[index] = strings.setdefault(value, value)
                continue
            if kind is dict:
                depth = self._depths.pop(id(value))
            elif kind is list:
                depth = self._list(value)
            else:
                continue
            if depth > deepest:
                deepest = depth
        return deepest + 1


def _duplicate(pairs: list[tuple[str, Any]]) -> None:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen.add(key)


def finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is too large for a report")
    return value


def no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in a report")


def scanner(hook: StrictObjects) -> Callable[[str, int], tuple[Any, int]]:
    """json's C scanner with the report rules: ``scan(text, at)`` -> (value, end)."""
    decoder = json.JSONDecoder(
        object_pairs_hook=hook.read, parse_float=finite, parse_constant=no_constant
    )
    return decoder.scan_once  # type: ignore[attr-defined,no-any-return]


# --------------------------------------------------------------------------- the one pass


class _Stop(Exception):
    """The one pass cannot go on; the whole read decides."""


class _Text:
    """The report's text, decoded a piece at a time; ``text[pos:]`` is what is left to parse."""

    def __init__(self, read: Callable[[int], bytes]) -> None:
        self._read = read
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self.text = ""
        self.pos = 0
        self.done = False
        # Whether the text read so far holds an escape that may be half of a surrogate pair;
        # looked for in the bytes (in text four bytes a character, it took a tenth of a read).
        self._escapes = False
        self._tail = b""

    def more(self) -> None:
        """Let go of what was parsed and decode the next piece (raises UnicodeDecodeError on a
        byte that is not UTF-8, and :class:`_Stop` when there is no more)."""
        if self.done:
            raise _Stop
        left = self.text[self.pos :]
        raw = self._read(max(CHUNK_BYTES, 2 * len(left)))
        self.done = not raw
        self.text = left + self._decoder.decode(raw, final=self.done)
        self.pos = 0
        around = self._tail + raw[:8]  # an escape the last piece ended in the middle of
        self._escapes = self._escapes or any(e in raw or e in around for e in _ESCAPE_BYTES)
        self._tail = raw[-8:]

    def peek(self) -> str:
        """The next character after whitespace ("" at the end of the text)."""
        while True:
            if self.pos < len(self.text):
                char = self.text[self.pos]
                if char not in _SPACE:
                    return char
                self.pos = _WHITESPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
                if self.pos < len(self.text):
                    return self.text[self.pos]
            if self.done:
                return ""
            self.more()

    def take(self, expected: str) -> None:
        if self.peek() != expected:
            raise _Stop
        self.pos += 1

    def value(self, scan: Callable[[str, int], tuple[Any, int]], hook: StrictObjects) -> Any:
        """The next value, parsed whole: a value the text in hand cuts short is parsed again
        once more text is in, as is one that ends where the text in hand does (a number may go
        on). Its string escapes are checked as the whole read checks them."""
        self.peek()
        if len(self.text) - self.pos < _AHEAD and not self.done:
            # A parse cut short costs its error's line number: json counts the newlines of
            # the whole text in hand (a fifth of all the work when each piece cut one short).
            self.more()
        while True:
            start = self.pos
            try:
                value, end = scan(self.text, start)
            except (ValueError, StopIteration, RecursionError):
                hook.forget()
                self.more()
                continue
            if end == len(self.text) and not self.done:
                hook.forget()
                self.more()
                continue
            self.pos = end
            if self._escapes and any(
                self.text.find(e, start, end) != -1 for e in _SURROGATE_ESCAPES
            ):
                canonical_bytes(value)  # UnicodeEncodeError: half of a surrogate pair
            return value


Validate = Callable[[Any], BaseModel]


def read_in_one_pass(
    read: Callable[[int], bytes], items: Mapping[str, Validate]
) -> dict[str, Any] | None:
    """The report's top-level object, each list named in ``items`` already validated, item by
    item, by its function (a model's ``model_validate``); None when the whole read must decide
    (see the module docstring).

    ``read(n)`` gives the file's next ``n`` bytes (fewer at its end). A validation error of an
    item is not reported here, nor is anything else: the whole read says what is wrong.
    """
    hook = _InterningObjects()
    scan = scanner(hook)
    text = _Text(read)
    try:
        return _top_object(text, hook, scan, items)
    except (_Stop, ValueError, StopIteration, RecursionError):
        # ValueError covers json's, the hooks', UTF-8's and validation's refusals.
        return None


def _top_object(
    text: _Text,
    hook: StrictObjects,
    scan: Callable[[str, int], tuple[Any, int]],
    items: Mapping[str, Validate],
) -> dict[str, Any]:
    text.take("{")
    pairs: list[tuple[str, Any]] = []
    deepest = 0
    if text.peek() == "}":
        text.pos += 1
    else:
        while True:
            if text.peek() != '"':
                raise _Stop
            key = text.value(scan, hook)
            text.take(":")
            validate = items.get(key)
            if validate is not None and text.peek() == "[":
                value, depth = _validated_list(text, hook, scan, validate)
            else:
                value = text.value(scan, hook)
                depth = hook.depth(value)
            deepest = max(deepest, depth)
            pairs.append((key, value))
            following = text.peek()
            text.pos += 1
            if following == "}":
                break
            if following != ",":
                raise _Stop
    if text.peek() != "" or deepest >= MAX_DEPTH:
        raise _Stop
    data = dict(pairs)
    if len(data) != len(pairs):
        raise _Stop
    return data


def _validated_list(
    text: _Text,
    hook: StrictObjects,
    scan: Callable[[str, int], tuple[Any, int]],
    validate: Validate,
) -> tuple[list[BaseModel], int]:
    """A top-level list, each item validated as it is parsed; and the list's depth."""
    text.take("[")
    out: list[BaseModel] = []
    deepest = 0
    if text.peek() == "]":
        text.pos += 1
        return out, 1
    while True:
        item = text.value(scan, hook)
        deepest = max(deepest, hook.depth(item))
        validated = validate(item)
        del item  # its parsed data goes now, before the next item's is made
        share_field_sets(validated)
        out.append(validated)
        following = text.peek()
        text.pos += 1
        if following == "]":
            return out, deepest + 1
        if following != ",":
            raise _Stop
