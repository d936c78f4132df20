"""Canonical JSON: the one byte form that is signed, stored and compared.

Sorted keys, UTF-8 without ASCII escaping, no insignificant whitespace differences between
runs. Floats are rounded where they are produced, never here, so the same model always gives
the same bytes.

Files use a line layout rather than a full indent: one top-level field per line and one item of
each top-level list (each finding, each probe result) per line. It diffs well when a baseline
is committed, and it is written by a C encoder: a fully indented dump goes through the
pure-Python encoder and took four times as long on a 10,000-finding report.

The bytes are those of Python's ``json`` (the encoder below) and were defined by it; orjson
writes them, six times as fast (a 10,000-finding SARIF log: 0.07 s against 0.45 s). Where the
two could differ, json writes the whole text:

- a value orjson refuses (an integer beyond 64 bits, a key that is not a string, a float
  subclass, nesting over 254 levels): orjson raises and json writes it, or raises as before;
- a float under 1e-4 (json ``1e-05``, orjson ``0.00001`` or ``1e-7``): such a number's bytes
  hold ``0.0000`` or a digit before ``e-``, looked for in orjson's bytes (:func:`_may_differ`);
- a NaN or an infinity, which orjson writes as ``null`` and json refuses: nothing written here
  holds one. A report's models refuse them (``allow_inf_nan=False``), the report reader refuses
  them (models/stored.py), and what an agent sends is bounded to finite numbers (models/bounds.py).

Where the two agree depends on orjson's version (before 3.12 it wrote 1e+16 as 1e16): at import,
orjson writes a few probe values, and unless every byte is json's it is not used at all.
tests/core/test_canonical.py holds the two equal on generated JSON values and on the floats where
they differ.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

import orjson

# No cycle check: what is written is JSON data (model dumps, emitters' documents), which
# cannot hold a cycle, and tracking every container on the way took a tenth of the encoding
# (a cycle would still stop the encoder, at its recursion limit).
_ENCODER = json.JSONEncoder(
    sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
)
_SORTED = orjson.OPT_SORT_KEYS
# Values whose bytes orjson must write as json does for its bytes to be used at all: orjson
# before 3.12 wrote 1e+16 as 1e16, and another version could change again.
_PROBES: tuple[Any, ...] = (
    1e16, 8.849005675541007e20, 1.5e300, 5e-324, 1e-4, 0.1, -0.0, 123456789.123, 2**63 - 1,
    -(2**63), "\u2028\u2029\x7f\x1f\x00\"\\/\u00e9\U0001f600",
    {"b": [True, None], "a": {"\u00e9": 1, "Z": 2}},
)  # fmt: skip
# A number token orjson writes otherwise than json: a float under 1e-4 in either of orjson's
# forms, starting the text or after ":", ",", "[" or the layout's spaces.
_OTHERWISE = re.compile(rb"(?:^|[:,\[ ])-?(?:0\.0000|[0-9]+(?:\.[0-9]+)?e-)")
_DIGITS = frozenset(b"0123456789")
_T = TypeVar("_T")


def _may_differ(data: bytes) -> bool:
    """Whether orjson's ``data`` may hold a number json writes otherwise.

    The regular expression reads every byte (0.17 s for a 36 MB SARIF log); ``bytes.find`` of
    its two markers takes a tenth of that, so it runs only when a marker is there.
    """
    if b"0.0000" in data:
        return _OTHERWISE.search(data) is not None
    at = data.find(b"e-")
    while at != -1:  # "e-" is common in text ("re-run"); a number has a digit before it
        if at and data[at - 1] in _DIGITS:
            return _OTHERWISE.search(data) is not None
        at = data.find(b"e-", at + 2)
    return False


def agrees(dumps: Callable[..., bytes]) -> bool:
    """Whether ``dumps`` (orjson's) writes every probe value as json does."""
    try:
        return all(dumps(v, option=_SORTED) == _json(v) for v in _PROBES)
    except (TypeError, ValueError):  # a dumps that cannot write them does not agree either
        return False


def _fast(obj: Any) -> bytes:
    return orjson.dumps(obj, option=_SORTED)


def _json(obj: Any) -> bytes:
    return _ENCODER.encode(obj).encode("utf-8")


def _fast_line(obj: Any) -> bytes:
    return orjson.dumps(obj, option=_SORTED | orjson.OPT_APPEND_NEWLINE)


def _json_line(obj: Any) -> bytes:
    return _json(obj) + b"\n"


Encode = Callable[[Any], bytes]


def _written(
    obj: Any, write: Callable[[Any, Encode], bytes], fast: Encode = _fast, slow: Encode = _json
) -> bytes:
    """``write(obj, encode)`` with orjson's encode, or with json's where the bytes may differ."""
    if not _ORJSON_AGREES:
        return write(obj, slow)
    try:
        data = write(obj, fast)
    except orjson.JSONEncodeError:
        return write(obj, slow)
    return write(obj, slow) if _may_differ(data) else data


def _call(obj: Any, encode: Encode) -> bytes:
    return encode(obj)


# Checked once, at import: an orjson that writes the probes otherwise is not used.
_ORJSON_AGREES = agrees(orjson.dumps)


def canonical_bytes(obj: Any) -> bytes:
    """Serialise ``obj`` as canonical JSON bytes (no trailing newline): what is signed."""
    return _written(obj, _call)


def canonical_line(obj: Any) -> bytes:
    """:func:`canonical_bytes` and a newline (a journal's line, the SARIF file), written in
    place: adding it after would copy the whole text (36 MB for a 10,000-finding SARIF log)."""
    return _written(obj, _call, _fast_line, _json_line)


def pretty_bytes(obj: Any) -> bytes:
    """The file layout: canonical values, one top-level field and list item per line."""
    return _written(obj, _layout)


def _layout(obj: Any, encode: Encode) -> bytes:
    """Each item is appended to one buffer as soon as it is written: kept as 20,000 separate
    bytes objects and joined, a 10,000-finding report's items touched several times the memory
    (47,000 page faults against 6,000-12,000, and half the layout's time)."""
    out = bytearray()
    if isinstance(obj, list) and obj:
        _items(out, obj, encode, b"\n  ", b"\n]\n")
        return bytes(out)
    if not isinstance(obj, dict) or not obj:
        return encode(obj) + b"\n"
    for key in sorted(obj):
        value = obj[key]
        out += b",\n  " if out else b"{\n  "
        out += encode(key)
        out += b": "
        if isinstance(value, list) and value:
            _items(out, value, encode, b"\n    ", b"\n  ]")
        else:
            out += encode(value)
    out += b"\n}\n"
    return bytes(out)


def _items(out: bytearray, items: list[Any], encode: Encode, before: bytes, end: bytes) -> None:
    """A non-empty list, one item a line: each ``before`` it, a comma after all but the last."""
    out += b"["
    for item in items:
        out += before
        out += encode(item)
        out += b","
    out[-1:] = end


def _piece(obj: Any) -> bytes:
    """One value's canonical bytes, as :func:`_written` would write them inside a whole text.

    orjson's bytes are json's unless it refuses the value or they hold a marker
    :func:`_may_differ` looks for, and the markers of a text are those of its values (the
    layout's own bytes hold no digit): so deciding value by value gives the very bytes of the
    text written whole, where one marker anywhere has json write everything.
    """
    if not _ORJSON_AGREES:
        return _json(obj)
    try:
        data = _fast(obj)
    except orjson.JSONEncodeError:
        return _json(obj)
    return _json(obj) if _may_differ(data) else data


class Items(Generic[_T]):
    """A top-level list for :func:`write_pretty` whose items become JSON values one at a time
    (``dump``, a model's dump), so the values of the whole list never exist at once."""

    __slots__ = ("_dump", "_items")

    def __init__(self, items: Sequence[_T], dump: Callable[[_T], Any]) -> None:
        self._items = items
        self._dump = dump

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return map(self._dump, self._items)


def write_pretty(
    obj: Mapping[str, Any], write: Callable[[bytes], object], chunk: int = 1 << 20
) -> None:
    """:func:`pretty_bytes` of a JSON object, handed to ``write`` a piece at a time.

    The pieces join into the very bytes :func:`pretty_bytes` writes; each holds whole values
    and is about ``chunk`` bytes (a 10,000-finding report written whole held its values, its
    layout buffer and the copy of it at once: 90 MB over the report itself). A top-level value
    that is :class:`Items` is written item by item, each dumped as it is reached.
    """
    if not obj:
        write(pretty_bytes({}))
        return
    out, between = bytearray(), b"{\n  "
    for key in sorted(obj):
        value = obj[key]
        out += between
        between = b",\n  "
        out += _piece(key)
        out += b": "
        if not isinstance(value, (list, Items)) or not len(value):
            out += _piece([] if isinstance(value, Items) else value)
            continue
        before = b"[\n    "
        for item in value:
            out += before
            out += _piece(item)
            before = b",\n    "
            if len(out) >= chunk:
                write(bytes(out))
                out.clear()
        out += b"\n  ]"
    out += b"\n}\n"
    write(bytes(out))


def write_canonical(
    obj: Mapping[str, Any], write: Callable[[bytes], object], chunk: int = 1 << 20
) -> None:
    """:func:`canonical_bytes` of a JSON object, handed to ``write`` a piece at a time, a top-level
    :class:`Items` value item by item (what is signed, without the report's values held whole:
    the value-by-value choice of encoder is :func:`_piece`'s)."""
    out, between = bytearray(b"{"), b""
    for key in sorted(obj):
        value = obj[key]
        out += between
        between = b","
        out += _piece(key)
        out += b":"
        if not isinstance(value, Items):
            out += _piece(value)
            continue
        before = b"["
        for item in value:
            out += before
            out += _piece(item)
            before = b","
            if len(out) >= chunk:
                write(bytes(out))
                out.clear()
        out += b"]" if before == b"," else b"[]"
    out += b"}"
    write(bytes(out))
