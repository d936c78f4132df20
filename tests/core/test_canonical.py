"""Canonical JSON is Python json's bytes, whichever encoder writes them (probegate/canonical.py).

The reference is json itself with the canonical settings, not bytes written down here: the
golden scans (tests/reports/test_golden.py) hold the layout; these hold orjson's fast path to
json on every kind of value a report carries and on the values where the two encoders differ.
"""

from __future__ import annotations

import copy
import json
import math
import random
import struct
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from probegate import canonical
from probegate.canonical import (
    Items,
    canonical_bytes,
    canonical_line,
    pretty_bytes,
    write_canonical,
    write_pretty,
)
from probegate.models.report import Budget, Completeness, Finding
from probegate.models.transcript import GuardCheck
from probegate.models.verdict import Evidence
from tests.factories import make_finding

JSON = json.JSONEncoder(
    sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
)


def by_json(value: Any) -> bytes:
    return JSON.encode(value).encode("utf-8")


def old_pretty(obj: Any) -> bytes:
    """The layout as json wrote it before orjson did: the reference for pretty_bytes."""
    if isinstance(obj, list) and obj:
        items = ",\n".join("  " + JSON.encode(item) for item in obj)
        return ("[\n" + items + "\n]\n").encode("utf-8")
    if not isinstance(obj, dict) or not obj:
        return (JSON.encode(obj) + "\n").encode("utf-8")
    lines = []
    for key in sorted(obj):
        value = obj[key]
        if isinstance(value, list) and value:
            items = ",\n".join("    " + JSON.encode(item) for item in value)
            lines.append(f"  {JSON.encode(key)}: [\n{items}\n  ]")
        else:
            lines.append(f"  {JSON.encode(key)}: {JSON.encode(value)}")
    return ("{\n" + ",\n".join(lines) + "\n}\n").encode("utf-8")


# Every code point but the surrogates (which neither encoder writes), most often the ones an
# encoder escapes or might: controls, quotes, backslash, DEL, U+2028/9, the BOM, astral ones.
_TEXT = st.text(
    st.one_of(
        st.sampled_from([*map(chr, range(0x20)), '"', "\\", "/", "\x7f", "\u2028", "\u2029",
                         "\ufeff", "\U0001f600", "e", "-", "0", ".", ":", ","]),
        st.characters(codec="utf-8"),
    )
)  # fmt: skip
_FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e-3, max_value=1e-3, allow_nan=False),  # where orjson writes otherwise
    st.sampled_from([0.0, -0.0, 1e-4, 1e-5, 9.99e-5, 1e-7, 2.5e-10, 1e16, 1.5e16, 5e-324]),
)
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), _FLOATS, _TEXT)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_TEXT, inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=600)
@given(_VALUES)
def test_canonical_bytes_are_by_json(value: Any) -> None:
    assert canonical_bytes(value) == by_json(value)
    assert canonical_line(value) == by_json(value) + b"\n"


@settings(max_examples=300)
@given(st.one_of(st.lists(_VALUES, max_size=6), st.dictionaries(_TEXT, _VALUES, max_size=6)))
def test_pretty_bytes_are_the_json_layout(value: Any) -> None:
    assert pretty_bytes(value) == old_pretty(value)


def test_every_float_orjson_writes_otherwise_is_written_by_json() -> None:
    """Floats drawn over the whole bit range: wherever orjson's bytes differ, json's are used."""
    rng = random.Random(20261202)
    differed = 0
    for _ in range(20_000):
        x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if not math.isfinite(x):
            continue
        for value in (x, [x], {"a": [x, 1]}):
            assert canonical_bytes(value) == by_json(value), x
            assert canonical_line(value) == by_json(value) + b"\n", x
            differed += canonical._may_differ(orjson.dumps(value))
    assert differed  # the fall back was taken: the draw reached the floats where they differ


@pytest.mark.parametrize(
    "value",
    [
        2**64,  # beyond 64 bits
        -(2**63) - 1,
        {1: "a"},  # a key that is not a string
        {"f": type("F", (float,), {})(1.5)},  # a float subclass
    ],
    ids=["2**64", "-2**63-1", "int-key", "float-subclass"],
)
def test_values_orjson_refuses_are_written_by_json(value: Any) -> None:
    assert canonical_bytes(value) == by_json(value)
    assert canonical_line(value) == by_json(value) + b"\n"
    assert pretty_bytes({"v": value}) == old_pretty({"v": value})
    pieces: list[bytes] = []
    write_pretty({"v": [1, value]}, pieces.append, chunk=1)
    assert b"".join(pieces) == old_pretty({"v": [1, value]})


def test_deep_nesting_orjson_refuses_is_written_by_json() -> None:
    value: Any = "leaf"
    for _ in range(300):  # orjson stops at 254 levels
        value = [value]
    assert canonical_bytes(value) == by_json(value)


def test_what_json_refuses_is_refused_as_before() -> None:
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate: orjson refuses, json cannot encode
        canonical_bytes({"a": "\ud800"})
    with pytest.raises(TypeError, match="not JSON serializable"):  # json's message, not orjson's
        canonical_bytes({"a": object()})


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_report_models_refuse_non_finite_numbers(bad: float) -> None:
    """orjson writes NaN as null where json refuses it: a report's models never hold one, as
    the report reader never accepts one (models/stored.py). Each model takes the same value
    when it is finite: the refusal is the number's."""
    finding = make_finding(0).model_dump()
    for field in ("confidence", "aivss_severity"):
        Finding.model_validate({**finding, field: 0.5})
        with pytest.raises(ValidationError):
            Finding.model_validate({**finding, field: bad})
    completeness = {
        "agents_planned": 1, "agents_completed": 1, "agents_cut_short": 0, "turns_used": 1,
        "turns_planned": 1,
    }  # fmt: skip
    evidence = {
        "category": "security.data_exfiltration", "severity": "high", "path": "turns.0.content",
        "start": 0, "end": 1, "fp": "0" * 32, "subject": "x", "detector": "canary_leak:plain",
    }  # fmt: skip
    guard = {"stage": "input", "decision": "allow", "action": "passed"}
    made: list[Callable[[float], object]] = [
        lambda v: Budget(spent_usd=v),
        lambda v: Completeness(**completeness, pct=v),
        lambda v: GuardCheck(**guard, latency_ms=v),
        lambda v: Evidence(**evidence, score=v),
    ]
    for make in made:
        make(0.5)
        with pytest.raises(ValidationError):
            make(bad)


def test_the_installed_orjson_agrees_so_these_tests_read_its_bytes() -> None:
    """Every other test here compares orjson's bytes with json's only if orjson is used."""
    assert canonical._ORJSON_AGREES


def test_an_orjson_that_writes_a_probe_otherwise_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """orjson before 3.12 wrote 1e+16 as 1e16: checked at import, such a version is not used."""

    def unsigned_exponent(value: Any, option: int) -> bytes:
        return orjson.dumps(value, option=option).replace(b"e+", b"e")

    assert canonical.agrees(orjson.dumps)
    assert not canonical.agrees(unsigned_exponent)

    class Refused:
        JSONEncodeError = orjson.JSONEncodeError

        @staticmethod
        def dumps(value: Any, option: int) -> bytes:
            raise AssertionError("orjson was used although it does not agree")

    monkeypatch.setattr(canonical, "_ORJSON_AGREES", False)
    monkeypatch.setattr(canonical, "orjson", Refused)
    value = {"big": 1e16, "small": 1e-5, "list": [1, 2]}
    assert canonical_bytes(value) == by_json(value)
    assert canonical_line(value) == by_json(value) + b"\n"
    assert pretty_bytes(value) == old_pretty(value)


@settings(max_examples=300)
@given(st.dictionaries(_TEXT, _VALUES, max_size=6), st.integers(1, 200), st.booleans())
def test_write_pretty_is_pretty_bytes_a_piece_at_a_time(
    value: dict[str, Any], chunk: int, lazy: bool
) -> None:
    """Whatever the pieces, they join into the whole layout, lists given whole or as Items."""
    fields = {
        k: Items(v, copy.deepcopy) if lazy and isinstance(v, list) else v for k, v in value.items()
    }
    pieces: list[bytes] = []
    write_pretty(fields, pieces.append, chunk=chunk)
    assert b"".join(pieces) == old_pretty(value)
    assert all(pieces)


def test_write_pretty_decides_the_encoder_value_by_value() -> None:
    """One item orjson writes otherwise (or refuses) among many it writes as json: the joined
    pieces are still json's whole text, the others written by orjson."""
    items: list[Any] = [{"n": i, "t": "café \u2028"} for i in range(50)]
    items[17] = {"tiny": 1e-05, "huge": 2**64}
    value = {"items": items, "cost": 2.5e-7, "name": "x"}
    pieces: list[bytes] = []
    write_pretty({**value, "items": Items(items, dict)}, pieces.append, chunk=64)
    assert len(pieces) > 10
    assert b"".join(pieces) == pretty_bytes(value) == old_pretty(value)


@settings(max_examples=300)
@given(st.dictionaries(_TEXT, _VALUES, max_size=6), st.integers(1, 200), st.booleans())
def test_write_canonical_is_canonical_bytes_a_piece_at_a_time(
    value: dict[str, Any], chunk: int, lazy: bool
) -> None:
    fields = {
        k: Items(v, copy.deepcopy) if lazy and isinstance(v, list) else v for k, v in value.items()
    }
    pieces: list[bytes] = []
    write_canonical(fields, pieces.append, chunk=chunk)
    assert b"".join(pieces) == canonical_bytes(value) == by_json(value)
