"""parse_bounded reads what json reads, faster; dumps_parsed writes it back as the same value.

orjson is the parser, json the reference: the two are compared on generated JSON (every kind
of value, integers far past 64 bits, NaN and infinities, lone surrogates, non-ASCII text) and
on the cases where orjson alone would differ (an integer past 64 bits becomes a float, a NaN is
written as null).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probegate.models.bounds import dumps_parsed, loads_bounded, parse_bounded

# Surrogates included: a lone one is what a model cut off mid-emoji sends.
_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.integers(min_value=-(2**63) - 2, max_value=2**64 + 2)
    | st.floats(allow_nan=True, allow_infinity=True)
    | _TEXT
)
VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=24,
)


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values, kinds included: 1 is not 1.0, NaN is NaN, -0.0 is not 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (
            math.isnan(b)
            if math.isnan(a)
            else a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@settings(max_examples=400, deadline=None)
@given(VALUES, st.booleans())
def test_parse_bounded_reads_what_json_reads(value: Any, ascii_only: bool) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    parsed, by_orjson = parse_bounded(raw)
    assert same(parsed, json.loads(raw))
    assert same(loads_bounded(raw.decode("utf-8", "surrogatepass")), parsed)
    # Written back, changed or not, it is the same value again.
    assert same(json.loads(dumps_parsed(parsed, by_orjson=by_orjson)), parsed)


@pytest.mark.parametrize(
    "raw, value",
    [
        (b'{"n": 18446744073709551617}', {"n": 2**64 + 1}),
        (b"[-9223372036854775809]", [-(2**63) - 1]),
        (b'{"id": "call 12345678901234567890"}', {"id": "call 12345678901234567890"}),
    ],
)
def test_a_number_orjson_would_make_a_float_is_read_by_json(raw: bytes, value: Any) -> None:
    parsed, by_orjson = parse_bounded(raw)
    assert same(parsed, value) and not by_orjson


ORJSON_REFUSES = [
    b"[NaN, Infinity, -Infinity]",
    b'"\\ud800"',
    b"\xef\xbb\xbf{}",
    '{"a": "\u00e9"}'.encode("utf-16"),
]


@pytest.mark.parametrize("raw", ORJSON_REFUSES)
def test_what_orjson_refuses_and_json_reads_is_json_s(raw: bytes) -> None:
    parsed, by_orjson = parse_bounded(raw)
    assert same(parsed, json.loads(raw)) and not by_orjson


def test_a_nan_json_read_is_written_as_nan_not_null() -> None:
    parsed, by_orjson = parse_bounded(b'{"bias": NaN, "text": "caf\\u00e9"}')
    parsed["planted"] = "canary \u2062"
    written = dumps_parsed(parsed, by_orjson=by_orjson)
    assert b"NaN" in written and math.isnan(json.loads(written)["bias"])


def test_text_orjson_will_not_write_goes_to_json() -> None:
    parsed, by_orjson = parse_bounded(b'{"content": "hello"}')
    assert by_orjson
    parsed["content"] = "cut mid-emoji \ud83d"  # a lone surrogate, planted after the parse
    parsed["seed"] = 2**70
    assert json.loads(dumps_parsed(parsed, by_orjson=by_orjson)) == parsed


def test_invalid_json_is_still_a_value_error() -> None:
    for raw in (b"{", b"[1,]", b"\xff", b""):
        with pytest.raises(ValueError):
            parse_bounded(raw)


@pytest.mark.parametrize("text", ["\ufeff{}", "1\x00", "\x001", "\x00{\x00}"])
def test_text_is_read_as_text_as_json_reads_it(text: str) -> None:
    # As bytes, json reads these (a byte-order mark dropped, NULs taken for UTF-16); a tool
    # call's arguments are text, and json refuses them as text.
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        loads_bounded(text)


def test_deep_text_is_read_as_text_after_the_cut() -> None:
    deep = "\ufeff" + "[" * 200 + "]" * 200
    with pytest.raises(ValueError):
        loads_bounded(deep)
    assert loads_bounded(deep[1:]) == loads_bounded(deep[1:].encode())
