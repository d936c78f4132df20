"""The redactor's quick search read by RE2 finds what Python's finds (models/redaction.py).

The RE2 form decides that a text holds nothing to hide; if it ever missed a text Python's
quick search finds, a secret pattern (a card number written in Arabic-Indic digits, a phone
number split by a no-break space) would be stored in clear. So the two are held equal, on
Unicode's digits, spaces and case folds as well as on ASCII.
"""

from __future__ import annotations

import sys

import pytest
import re2
from hypothesis import example, given, settings
from hypothesis import strategies as st

from probegate.models.placeholders import stored_key
from probegate.models.redaction import Redactor
from probegate.models.shapes import ANY_QUICK, PATTERNS, PY_SPACE, nothing_to_find, re2_quick
from probegate.models.transcript import ToolCall, Transcript, Turn

_EVERY_CHAR = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000)


def _re2_chars(pattern: bytes) -> set[str]:
    found = re2.compile(pattern).findall(_EVERY_CHAR.encode())
    return {m.decode() for m in found}


def test_the_space_class_is_pythons_whitespace_exactly() -> None:
    python = {c for c in _EVERY_CHAR if c.isspace()}
    assert _re2_chars(("[" + PY_SPACE + "]").encode()) == python


def test_every_python_digit_is_a_digit_to_re2() -> None:
    python = {c for c in _EVERY_CHAR if c.isdecimal()}  # what ``\d`` means in a str pattern
    assert python <= _re2_chars(rb"\p{Nd}")


@pytest.mark.parametrize("untranslatable", [r"\bkey", r"\w{40}", r"x\sy"])
def test_a_quick_search_with_no_translation_is_refused(untranslatable: str) -> None:
    with pytest.raises(ValueError, match="no RE2 translation"):
        re2_quick(untranslatable)


# Characters each quick search is about, and their Unicode look-alikes Python's engine reads
# as the same: digits of other scripts, spaces of every kind, the long s and the Kelvin sign.
_ALPHABET = (
    "0123456789\u0663\u0664\u0665\u06f1\u0967\uff11"
    " \t\n\x0b\x0c\r\x1c\x1f\x85\xa0\u1680\u2003\u2028\u202f\u3000"
    "-.+@_SsEeCcRrTtBbAaIKky\u017f\u212a"
    "PRIVATE KEY-----ghpousr_github_pat_AKIASIABIACCAsk-AIzaxoxeyJ"
)


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=40))
@example("\u0665\u0665\u0665\xa0\u0661\u0662\u0663")  # a phone number, Arabic-Indic, nbsp
@example("1 2 3 4 5 6 7 8 9 0 1 2 3")  # thirteen digits, spaced
@example("\u017fecret")  # the long s folds to s
@example("+\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18")  # fullwidth digits
def test_re2_finds_exactly_what_python_finds(text: str) -> None:
    assert nothing_to_find(text) == (ANY_QUICK.search(text) is None)
    for pattern in PATTERNS:
        quick = re2_quick(pattern.quick.pattern)
        assert (quick.search(text.encode()) is None) == (pattern.quick.search(text) is None)


def test_a_lone_surrogate_is_read_not_raised() -> None:
    assert nothing_to_find("\udc80 plain")
    assert not nothing_to_find("\udc80 mail me at a@b.test")


def _transcript(*replies: str) -> Transcript:
    turns = [Turn(role="user", content="Please look up my account")]
    for reply in replies:
        call = ToolCall(name="lookup_customer", arguments={"id": "c-1"}, result=reply)
        turns.append(Turn(role="assistant", content="Done.", tool_calls=[call]))
    return Transcript(turns=turns, tools_offered=["lookup_customer"])


# Strings a stored redactor hides (an address, a card, phones in two scripts, a token) and
# look-alikes it keeps (a reserved domain, a card in Arabic-Indic digits it does not read).
_SAMPLES = (
    "jane.doe@acme-corp.com",
    "card 4111 1111 1111 1111",
    "\u0665\u0665\u0665\xa0\u0661\u0662\u0663\xa0\u0664\u0665\u0666\u0667",
    "555 123 4567",
    "Bearer abcdefgh12345678",
    "ops@example.test",
    "\u0664\u0661\u0661\u0661 \u0661\u0661\u0661\u0661 \u0661\u0661\u0661\u0661 1111",
    "nothing here",
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from(_SAMPLES), st.text(alphabet=_ALPHABET, max_size=30)),
        min_size=1,
        max_size=4,
    )
)
@example(["nothing here", "write to jane.doe@acme-corp.com"])
def test_hides_any_answers_as_asking_every_string_would(replies: list[str]) -> None:
    """The joined search is a shortcut: it never says "nothing" where a string hides one."""
    transcript = _transcript(*replies)
    redactor = Redactor({}, key=stored_key("salt", {}))
    strings = [t.content for t in transcript.turns] + [
        c.result or "" for t in transcript.turns for c in t.tool_calls
    ]
    asked = any(redactor.text_with_map(s)[1].spans for s in strings)
    assert redactor.hides_any(transcript) == asked
    assert Redactor({}, key=stored_key("salt", {})).hides_any(transcript) == asked  # memo cold
