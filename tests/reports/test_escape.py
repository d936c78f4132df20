"""The escaping helpers' own contracts (in every format: tests/reports/test_hostile.py)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from hypothesis import example, given
from hypothesis import strategies as st

from probegate.reports.escape import (
    clean_text,
    number,
    sarif_text,
    xml_attribute,
    xml_chars,
    xml_text,
)


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
