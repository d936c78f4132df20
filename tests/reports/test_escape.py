"""The escaping helpers' own contracts (in every format: tests/reports/test_hostile.py)."""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET

from hypothesis import example, given
from hypothesis import strategies as st

from probegate.reports import escape
from probegate.reports.escape import (
    clean_text,
    json_bytes,
    number,
    sarif_text,
    xml_attribute,
    xml_chars,
    xml_text,
)
from probegate.terminal import JSON_UNSAFE_CHARS, json_text


@given(st.one_of(st.floats(), st.integers(), st.booleans()))
@example(float("nan"))
@example(float("-inf"))
@example(-0.0)
@example(1e16)
@example(10**40)
def test_number_is_what_json_dumps_writes(value: float | int) -> None:
    assert number(value) == json.dumps(value)


@given(st.text(), st.text())
@example("a]]>b <c> & d", 'say "hi"\tthen\nnewline\r\n & <tag>')
def test_xml_escapes_read_back_as_the_text(attribute: str, chars: str) -> None:
    """A parser reads back exactly the text written: no markup breaks out, and an attribute's
    line breaks and tabs survive (a raw one would be read as a space)."""
    value, text = xml_text(attribute), xml_text(chars)
    element = ET.fromstring(f'<a v="{xml_attribute(value)}">{xml_chars(text)}</a>')
    assert element.get("v") == value
    assert (element.text or "") == text
    assert len(element) == 0


@given(st.text())
def test_xml_escapes_are_what_xml_etree_writes(text: str) -> None:
    """The JUnit writer's bytes are the ones xml.etree wrote for the same report."""
    value = xml_text(text)
    element = ET.Element("a", {"v": value})
    element.text = value + "."  # an empty element is written <a v="" />
    written = ET.tostring(element, encoding="unicode")
    assert written == f'<a v="{xml_attribute(value)}">{xml_chars(value + ".")}</a>'


@given(st.text(alphabet=st.sampled_from("ab[]\\\x1b\x00\r\n\u202e:(")) | st.text())
def test_sarif_text_strips_then_escapes_links(text: str) -> None:
    """The fast path for text with nothing to change returns what the full escape would."""
    expected = clean_text(text).replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    assert sarif_text(text) == expected


def _as_decoded(data: bytes) -> bytes:
    """json_bytes's contract read the slow way: decode, escape every unsafe character, encode."""
    return json_text(data.decode("utf-8")).encode("utf-8")


# Text an agent writes (accents, curly quotes, emoji) around the characters that must be escaped.
_UNSAFE = ["\x7f", "\x80", "\x85", "\x9b", "\x9f", "\u061c", "\u200e", "\u200f", "\u2028",
           "\u2029", "\u202a", "\u202e", "\u2066", "\u2069"]  # fmt: skip
_NEAR = ["\x7e", "\xa0", "\xe9", "\u2018", "\u201d", "\u2014", "\u2027", "\u202f", "\u2065",
         "\u206a", "\U0001f600", "\u061b", "\u061d"]  # fmt: skip


@given(st.lists(st.one_of(st.sampled_from(_UNSAFE + _NEAR), st.text(max_size=8)), max_size=12))
@example(["\x7f"])  # ASCII, yet a terminal acts on it
def test_json_bytes_escapes_what_json_text_escapes(pieces: list[str]) -> None:
    text = "".join(pieces).encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    data = json.dumps({"said": text}, ensure_ascii=False).encode("utf-8")
    assert json_bytes(data) == _as_decoded(data)
    assert json.loads(json_bytes(data)) == json.loads(data)


def test_json_bytes_reads_utf8_as_json_text_reads_every_code_point() -> None:
    """The bytes-level search finds exactly the characters json_text escapes, over every code
    point (surrogates cannot stand in UTF-8)."""
    every = "".join(chr(cp) for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF)
    found = {m.group().decode() for m in escape._JSON_UNSAFE_UTF8.finditer(every.encode())}
    escaped = {c for c in re.findall(f"[{JSON_UNSAFE_CHARS}]", every) if json_text(c) != c}
    assert found == escaped
    assert len(found) == 0x9F - 0x7F + 1 + 1 + 2 + 2 + 5 + 4  # DEL, C1, ALM, LRM/RLM, LS/PS, bidi
