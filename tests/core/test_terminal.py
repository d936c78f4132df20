"""Terminal-safe text (probegate.terminal): any string in, nothing a terminal or a CI log acts
on out; and ``--json`` text that a parser reads back as the very same value."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from probegate.reports.escape import clean_text
from probegate.terminal import clean, json_text, one_line, strip_controls
from tests.reports.inert import assert_json_inert, assert_terminal_inert
from tests.servers.hostile import LACE

# Any code point, lone surrogates and every control included, weighted towards the ones that
# matter here so short examples hit them.
ANY = st.text(
    alphabet=st.one_of(
        st.characters(exclude_categories=()),
        st.sampled_from(["\x1b", "\x9b", "\r", "\n", ":", " ", "\u202e", "\u2066", "\ud800"]),
    )
)


@given(ANY)
@example(LACE)
@example("  ::error::x\n\t::add-mask::y\r::warning::z")
def test_clean_text_acts_on_nothing_and_starts_no_command(text: str) -> None:
    shown = clean(text)
    assert_terminal_inert(shown)
    assert clean(shown) == shown  # a second pass finds nothing left to do


@given(ANY, st.integers(min_value=2, max_value=300))
@example(LACE, 120)
def test_one_line_is_one_bounded_inert_line(text: str, limit: int) -> None:
    shown = one_line(text, limit)
    assert_terminal_inert(shown)
    assert "\n" not in shown and len(shown) <= limit + 1  # + the backslash that defuses "::"


@given(ANY)
def test_documents_strip_the_same_characters_as_the_terminal(text: str) -> None:
    assert clean_text(text) == strip_controls(text)


JSON_VALUES = st.recursive(
    ANY | st.integers(), lambda inner: st.lists(inner) | st.dictionaries(ANY, inner)
)


@given(JSON_VALUES)
@example({"name": LACE})
def test_json_text_is_inert_and_parses_to_the_same_value(value: object) -> None:
    shown = json_text(json.dumps(value, ensure_ascii=False, indent=2))
    assert assert_json_inert(shown) == value


def test_ansi_and_osc_sequences_go_whole_and_their_text_stays() -> None:
    text = "a\x1b[31mred\x1b[0m \x1b]8;;https://evil.test\x07link\x1b]8;;\x07 \x1b]0;title\x07b"
    assert clean(text) == "ared link b"
