"""The stored form's placeholders: what they say, and the text they stand for.

A scan keeps its attempts in the *stored form* while it runs (the journal, ``--record``
recordings, the attempts in memory), so a resumed scan assembles exactly what an uninterrupted
one does. A named secret becomes ``${NAME}``, or ``${NAME:how}`` when it came spelled otherwise,
in part or interleaved (``${CANARY_1:base64}``, ``${CANARY_1:raw.3.15}``,
``${CANARY_1:hex.0.46.u20}``, ``${API_KEY:raw.0.31.a78-78-...}``: :func:`fragment_tag`):
given the same secret, :func:`restore` rebuilds the exact original text, which is what lets a
replay judge a declared canary exactly as the live scan did. A pattern match
(models/shapes.py) becomes ``${EMAIL#3f9a0c61d2}``, the token a keyed hash of the value
(:func:`stored_key`): the same value has the same token in every file of one scan, also
across ``--resume``, and the token alone says nothing about the value.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import itertools
import re
from collections.abc import Callable, Mapping
from typing import Any

from probegate.models.spellings import SEPARATORS, Spellings, bare, spellings
from probegate.models.transcript import Turn

TOKEN_HEX = 10
# Stored-form placeholders, as written by a stored-form Redactor (see the module docstring).
_STORED_SECRET = re.compile(r"\$\{([A-Z][A-Z0-9_]*)(?::([A-Za-z0-9+.-]+))?\}")
STORED_TAGGED = re.compile(r"\$\{([A-Z][A-Z0-9_]*):([A-Za-z0-9+.-]+)\}")
STORED_TOKEN = re.compile(r"\$\{([A-Z][A-Z0-9_]*)#([0-9a-f]{" + str(TOKEN_HEX) + r"})\}")
# Written by earlier versions for a secret cut off at a string's edge; still read.
_PARTIAL_TAG = re.compile(r"(head|tail)([1-9][0-9]{0,4})")
# Every spelling's name (those of a secret long enough to have them all).
_SPELLING_TAGS = frozenset(how for how, _text in spellings("every spelling's name")) - {""}
# A fragment: ``spelling.start.end`` in the spelling, then how it was interleaved (fragment_tag).
_FRAGMENT_TAG = re.compile(
    r"([a-zA-Z0-9+]+)\.(0|[1-9][0-9]{0,5})\.([1-9][0-9]{0,5})(?:\.([uga])([0-9a-fxr-]*))?"
)
_GAP_RUN = re.compile(r"([0-9a-f]{1,6})(?:r([0-9a-f]{1,6}))?")
# One character that is not a separator: splitting a fragment on it leaves its gaps.
_KEPT = re.compile("[^" + re.escape(SEPARATORS) + "]")


def known_tag(how: str) -> bool:
    """Whether ``how`` is a tag the stored form writes (or wrote): worth folding."""
    return (
        how in _SPELLING_TAGS
        or _PARTIAL_TAG.fullmatch(how) is not None
        or _FRAGMENT_TAG.fullmatch(how) is not None
    )


@functools.lru_cache(maxsize=256)
def _gap_text(gap: str) -> str:
    return "x".join(
        f"{ord(char):x}" + (f"r{count:x}" if count > 1 else "") for char, count in _runs(gap)
    )


def _runs(text: str) -> list[tuple[str, int]]:
    runs: list[tuple[str, int]] = []
    for char in text:
        if runs and runs[-1][0] == char:
            runs[-1] = (char, runs[-1][1] + 1)
        else:
            runs.append((char, 1))
    return runs


def _gap_of(text: str, *, alternating: bool = False) -> str | None:
    """The separators a gap code stands for (any characters, one at least, for an alternating
    fragment's); None for a code that is not one."""
    if not text:
        return None if alternating else ""
    out: list[str] = []
    for run in text.split("x"):
        m = _GAP_RUN.fullmatch(run)
        if m is None or int(m.group(1), 16) > 0x10FFFF:
            return None
        count = int(m.group(2), 16) if m.group(2) else 1
        char = chr(int(m.group(1), 16))
        if (char not in SEPARATORS and not alternating) or count < 1:
            return None
        out.append(char * count)
    return "".join(out)


def fragment_tag(table: Spellings, text: str, found: tuple[int, int, int, int, int]) -> str:
    """The stored form's tag for one fragment :meth:`Spellings.find` found in ``text``.

    ``how`` alone for a whole spelling sent as it is (``base64``; "" for the secret itself);
    ``how.start.end`` for a piece ``spelling[start:end]`` sent as it is (``raw`` names the
    secret itself). A piece sent with other separators between its characters adds ``.u`` and
    one gap, when the same separators stand between every two of them, else ``.g`` and one gap
    per pair, ``-`` between them. A gap is its characters' code points in hex, ``x`` between
    them, ``rN`` after one repeated N times (hex): ``raw.0.23.u200b`` is the secret with a
    zero-width space between every two of its characters. A piece that alternates with other
    characters (every other character of it is the secret's, separators aside or not) adds
    ``.a`` and one gap per pair as ``.g`` does, a gap holding any characters:
    ``raw.0.23.a78-78-...`` is the secret with an ``x`` between every two of its characters.
    """
    start, end, form, first, last = found
    _name, how, spelled = table.forms[form]
    piece = text[start:end]
    own = table.alternating(text, found)
    if own:
        gaps = [_gap_text(piece[a + 1 : b]) for a, b in itertools.pairwise(own)]
        return f"{how or 'raw'}.{first}.{last}.a" + "-".join(gaps)
    if piece == spelled[first:last]:
        if first == 0 and last == len(spelled):
            return how
        return f"{how or 'raw'}.{first}.{last}"
    lead, trail = _edges(spelled[first:last])
    gaps = [_gap_text(gap) for gap in _KEPT.split(piece[lead : len(piece) - trail])[1:-1]]
    interleaved = f"u{gaps[0]}" if len(set(gaps)) == 1 else "g" + "-".join(gaps)
    return f"{how or 'raw'}.{first}.{last}.{interleaved}"


def _spelling(value: str, how: str) -> str | None:
    """The text a stored ``${NAME:how}`` stood for, given the secret; None for an unknown tag."""
    partial = _PARTIAL_TAG.fullmatch(how)
    if partial is not None:
        size = int(partial.group(2))
        if size >= len(value):
            return None
        return value[:size] if partial.group(1) == "head" else value[-size:]
    named = dict(spellings(value))
    fragment = _FRAGMENT_TAG.fullmatch(how)
    if fragment is None:
        return named.get(how)
    form, first, last, kind, code = fragment.groups()
    return _piece(named, form, int(first), int(last), kind, code)


def _piece(
    named: dict[str, str], form: str, start: int, end: int, kind: str | None, code: str | None
) -> str | None:
    """The piece ``spelling[start:end]`` of a fragment tag, interleaved as ``kind`` says."""
    spelled = named.get("" if form == "raw" else form)
    if spelled is None or not start < end <= len(spelled):
        return None
    piece = spelled[start:end]
    if kind is None:
        return piece
    chars = bare(piece)
    codes = [code or ""] * (len(chars) - 1) if kind == "u" else (code or "").split("-")
    gaps = [_gap_of(c, alternating=kind == "a") for c in codes]
    if not chars or len(gaps) != len(chars) - 1 or any(g is None for g in gaps):
        return None
    lead, trail = _edges(piece)
    inner = chars[:1] + "".join(f"{g}{c}" for g, c in zip(gaps, chars[1:], strict=True))
    return piece[:lead] + inner + piece[len(piece) - trail :]


def _edges(piece: str) -> tuple[int, int]:
    """How many separators ``piece`` starts and ends with."""
    kept = _KEPT.search(piece)
    if kept is None:
        return len(piece), 0
    return kept.start(), len(piece) - len(piece.rstrip(SEPARATORS))


def stored_key(salt: str, secrets: Mapping[str, str]) -> bytes:
    """The key of one scan's stored-form tokens: its salt (kept in the journal's header, so a
    resumed scan tokenises as the first run did) and the values of its secrets, which are never
    stored, so a copy of the store alone cannot test guesses against the tokens."""
    material = "\0".join(f"{name}={secrets[name]}" for name in sorted(secrets) if secrets[name])
    return hmac.new(salt.encode("utf-8"), material.encode("utf-8"), hashlib.sha256).digest()


def restore(text: str, secrets: Mapping[str, str]) -> str:
    """Stored-form text with each named secret in ``secrets`` spelled out again exactly.

    Placeholders of secrets not given, and pattern tokens, stay as they are: a replay is
    given the declared canaries it judges, not the API key of the recorded target.
    """
    if "${" not in text or not secrets:
        return text

    def spell(match: re.Match[str]) -> str:
        value = secrets.get(match.group(1))
        if not value:
            return match.group(0)
        spelled = _spelling(value, match.group(2) or "")
        return match.group(0) if spelled is None else spelled

    return _STORED_SECRET.sub(spell, text)


def restore_turn(turn: Turn, secrets: Mapping[str, str]) -> Turn:
    """:func:`restore` applied to every string of a stored turn (content and tool calls)."""
    if not secrets:
        return turn
    data = _map_strings(turn.model_dump(), lambda s: restore(s, secrets))
    return Turn.model_validate(data)


def _map_strings(node: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(node, str):
        return fn(node)
    if isinstance(node, dict):
        return {k: _map_strings(v, fn) for k, v in node.items()}
    if isinstance(node, list):
        return [_map_strings(v, fn) for v in node]
    return node
