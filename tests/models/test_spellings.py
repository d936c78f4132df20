"""Fragments of a secret in any spelling, interleaved or not: found, hidden, spelled back."""

from __future__ import annotations

import base64
import codecs
import re
import urllib.parse

from hypothesis import given, settings
from hypothesis import strategies as st

from probegate.models.placeholders import restore, stored_key
from probegate.models.redaction import Redactor, _secret_search
from probegate.models.spellings import FRAGMENT_MIN, SEPARATORS, Spellings, bare, hide, spellings

_TOKEN = re.compile(r"\$\{[A-Z_]+#")
API_KEY = "pgtest-key-Q7w8E9r0T1y2U3i4O5p6"
CANARY = "ZX-Vq93-Lm2Kw8Rt-4488"
SECRETS = {"API_KEY": API_KEY, "CANARY_1": CANARY}


def encoded(value: str) -> list[str]:
    """Spellings written here with the standard library, not with the module under test."""
    raw = value.encode()
    blob = b"Some text around it: " + raw + b" and after."
    return [
        value,
        value.lower(),
        value.upper(),
        value[::-1],
        codecs.encode(value, "rot13"),
        urllib.parse.quote(value, safe=""),
        base64.b64encode(raw).decode(),
        base64.b64encode(blob).decode(),
        base64.b64encode(b"x" + blob).decode(),
        base64.b64encode(b"xy" + blob).decode(),
        base64.urlsafe_b64encode(blob).decode(),
        base64.b32encode(raw).decode(),
        base64.b32encode(blob).decode(),
        base64.b32encode(b"abc" + blob).decode(),
        raw.hex(),
        blob.hex().upper(),
    ]


def windows(text: str) -> set[str]:
    """Every run of FRAGMENT_MIN characters that are not separators, from inside ``text``'s
    part that holds the secret (the edges of a blob mix in the bytes around it)."""
    plain = bare(text)
    return {plain[i : i + FRAGMENT_MIN] for i in range(len(plain) - FRAGMENT_MIN + 1)}


def secret_windows(value: str) -> set[str]:
    """The windows of each spelling that hold only the secret's own characters or bits."""
    out: set[str] = set()
    for text in [*encoded(value)[:7], encoded(value)[11], encoded(value)[14]]:
        out |= windows(text.rstrip("="))
    return out


def leaks(text: str) -> set[str]:
    plain = bare(text)
    return {w for v in SECRETS.values() for w in secret_windows(v) if w in plain}


def test_every_spelling_whole_in_a_blob_and_in_pieces_is_hidden() -> None:
    redactor = Redactor(SECRETS)
    for value in SECRETS.values():
        for spelled in encoded(value):
            for piece in (spelled, spelled[3:14], spelled[-12:], spelled[len(spelled) // 3 :]):
                out = redactor.text(f"the agent said <{piece}> twice: {piece}")
                # A blob's own bytes stay; nothing of the secret's does.
                assert not leaks(out), (value, spelled, piece, out)


def test_interleaved_spellings_are_hidden_whole() -> None:
    redactor = Redactor(SECRETS)
    for gap in (" ", "\u200b", " \u200c ", "-", ". ", "\u00ad\u2060", "\n\n\n\n\n\n\n\n\n\n"):
        for spelled in encoded(API_KEY)[:7]:
            out = redactor.text("key: " + gap.join(spelled.rstrip("=")) + " end")
            assert out == "key: ${API_KEY} end", (gap, spelled, out)


def alternated(value: str, between: str) -> str:
    """``value`` with the characters of ``between`` in turn between each two of its own."""
    return "".join(c + between[i % len(between)] for i, c in enumerate(value))[:-1]


def test_every_other_character_of_a_secret_is_hidden_and_spelled_back() -> None:
    """The key with another character between each two of its own (every other character is
    the key's, readable at a glance), spaced out too, and each half of the key (its even and
    its odd characters): hidden, and the stored form spells each back exactly."""
    redactor = Redactor(SECRETS, key=stored_key("salt", SECRETS))
    for text in (
        alternated(API_KEY, "x"),
        alternated(API_KEY, "a7Q$"),
        " ".join(alternated(API_KEY, "x")) + " and more",
        "sent: " + alternated(API_KEY.lower(), "xyz")[5:],
        alternated(base64.b64encode(API_KEY.encode()).decode(), "#"),
        f"half {API_KEY[::2]} and half {API_KEY[1::2]}",
        alternated(API_KEY[::2], "."),
    ):
        stored = redactor.text(text)
        assert "${API_KEY:" in stored, (text, stored)
        kept = [c for c in bare(stored.replace("${API_KEY", "")) if c != "}"]
        for parity in (0, 1):
            assert not leaks("".join(kept[parity::2])), (text, stored)
        assert not leaks(stored), (text, stored)
        assert restore(stored, SECRETS) == text


def test_what_is_not_a_secret_stays() -> None:
    """Innocent neighbours: other words, a shorter piece, other hex and base64."""
    text = (
        "Refund order 4411 for customer PGTEST? no. sha256 5d41402abc4b2a76b9719d911017c592, "
        f"blob {base64.b64encode(bytes(range(40))).decode()}, piece {API_KEY[11:18]} (7 chars)"
    )
    assert Redactor(SECRETS).text(text) == text


def test_a_reproducer_hides_as_a_report_does() -> None:
    table = Spellings(SECRETS)
    for spelled in encoded(CANARY):
        text = f"here: {' '.join(spelled[2:20])} and {spelled}"
        assert not leaks(hide(text, table)), spelled
    assert hide(f"a {CANARY} b", table, lambda name: "[hidden]") == "a [hidden] b"


SEPARATOR = st.sampled_from([" ", "\u200b", "-", "  ", "\u200c\u200d", ".", "|", "\t\n"])


@st.composite
def leaky_texts(draw: st.DrawFn) -> tuple[dict[str, str], str]:
    # No $ { }: a run next to a placeholder would seem to start in it.
    alphabet = st.characters(
        min_codepoint=33, max_codepoint=0x2FF, exclude_characters=SEPARATORS + "${}"
    )
    secrets = {
        f"S{i}": draw(st.text(alphabet, min_size=4, max_size=40))
        for i in range(draw(st.integers(1, 3)))
    }
    parts: list[str] = []
    for _ in range(draw(st.integers(1, 6))):
        value = draw(st.sampled_from(sorted(secrets.values())))
        spelled = draw(st.sampled_from([t for _how, t in spellings(value)]))
        a = draw(st.integers(0, len(spelled)))
        b = draw(st.integers(a, len(spelled)))
        piece = spelled[a:b]
        if draw(st.booleans()):
            piece = draw(SEPARATOR).join(piece)
        elif draw(st.booleans()):  # every other character the secret's
            between = draw(st.text(alphabet, min_size=1, max_size=3))
            piece = "".join(c + between[i % len(between)] for i, c in enumerate(piece))[:-1]
        parts.append(piece)
        parts.append(draw(st.text(max_size=12)))
    return secrets, "".join(parts)


@settings(max_examples=300, deadline=None)
@given(leaky_texts())
def test_no_run_survives_and_the_stored_form_spells_back_exactly(
    case: tuple[dict[str, str], str],
) -> None:
    secrets, text = case
    stored = Redactor(secrets, key=stored_key("salt", secrets)).text(text)
    if _TOKEN.search(stored) is None:  # an email or a card number is never spelled back
        assert restore(stored, secrets) == text
    report = Redactor(secrets).text(text)
    assert Redactor(secrets).text(stored) == report
    table = Spellings(secrets)
    plain = bare(report)
    for _name, _how, spelled in table.forms:
        runs = windows(spelled)
        assert not any(run in plain for run in runs if "${" not in run), (spelled, report)
    search = _secret_search(tuple(sorted(secrets.items())))
    assert search is not None
    assert table.find(text) == search.table.find(text, search.seeds)  # RE2 only skips ahead
