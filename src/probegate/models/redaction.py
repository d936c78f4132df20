"""Redaction: no real secret or personal data reaches a file probegate writes.

Two sources of sensitive text are replaced by ``${...}`` placeholders:

- named secrets, everything the user handed probegate that must never land in a file (declared
  canaries the agent holds, API keys, secret headers, the signing secret), given as a mapping
  ``{"CANARY_1": "<value>"}``. Every run of 8 or more characters of the secret, in any spelling
  :mod:`probegate.models.spellings` knows (case-changed, reversed, rot13, URL, base64, base32,
  hex, a piece of a larger base64 or base32 blob), also with separators or invisible characters
  between its characters, is replaced, because an exfiltrating agent rarely sends a secret
  verbatim and whole (docs/report-format.md, "Redaction": what is covered and what is not);
- patterns: API keys and tokens (``sk-...``, ``Bearer ...``, AWS, GitHub, Google, Slack, JWT,
  PEM private keys), emails, phone numbers and Luhn-valid card numbers.

Emails on reserved test domains (RFC 2606 / RFC 6761: ``example.com``, ``example.org``,
``example.net``, ``*.test``, ``*.invalid``, ``*.example``, ``*.localhost``) and the phone
numbers reserved for fiction stay readable: attack probes address their fake attackers there
and a report must show where the agent sent data. Synthetic canaries the probes plant are not
secrets and are simply not passed in.

Placeholders come in two forms, one per kind of file:

- The **stored form** is what a scan keeps while it runs: the journal, ``--record``
  recordings and the attempts in memory, so a resumed scan assembles exactly what an
  uninterrupted one does. A named secret becomes ``${NAME}``, or ``${NAME:how}`` when it came
  spelled otherwise, in part or interleaved (``${CANARY_1:base64}``, ``${CANARY_1:raw.3.15}``,
  ``${CANARY_1:hex.0.46.u20}``: :func:`fragment_tag`): given the same secret, :func:`restore`
  rebuilds the exact original text, which is what lets a replay judge a declared canary exactly
  as the live scan did. A pattern match becomes ``${EMAIL#3f9a0c61d2}``, the
  token a keyed hash of the value (:func:`stored_key`): the same value has the same token in
  every file of one scan, also across ``--resume``, and the token alone says nothing about the
  value. Verdicts are judged on the clear text before anything is stored, and a resumed scan
  never judges a journaled attempt again.
- The **report form** is what reports show: ``${NAME}``, and ``${EMAIL_1}``, ``${EMAIL_2}``
  numbered per report in the order first met (the same value, or the same stored token,
  always gets the same number), so the same report always redacts to the same bytes.
  Stored-form placeholders met while redacting a report are folded into the report form.

Evidence offsets: an evidence ``start``/``end`` points into a transcript string. When redaction
changes that string, the offsets are recomputed so they point into the *redacted* text, at the
same content; a span that overlapped a redacted value grows to cover the whole placeholder.
So ``redacted[start:end]`` is what the evidence was about, now with placeholders in it.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import hmac
import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import re2
from pydantic import BaseModel

from probegate.models.spellings import SEPARATORS, Spellings, bare, spellings
from probegate.models.transcript import Transcript, Turn, resolve_path
from probegate.models.verdict import SUBJECT_MAX, Attempt, Evidence, truncate

RESERVED_EMAIL_DOMAINS = ("example.com", "example.org", "example.net")
RESERVED_EMAIL_TLDS = ("test", "invalid", "example", "localhost")

_TOKEN_HEX = 10
# Every attempt is redacted, and most of its strings are the same from one attempt to the next
# (roles, tool names, argument keys, fixtures the agent repeats): a Redactor redacts a string
# once. Its output for a string never changes (a report-form placeholder, once numbered, keeps
# its number), so a remembered result is the result. Bounded in entries and in the length of
# a string kept, so a long scan of a verbose agent does not grow it.
_MEMO_ENTRIES = 4096
_MEMO_TEXT_MAX = 1024

# Stored-form placeholders, as written by a stored-form Redactor (see the module docstring).
_STORED_SECRET = re.compile(r"\$\{([A-Z][A-Z0-9_]*)(?::([A-Za-z0-9+.-]+))?\}")
_STORED_TAGGED = re.compile(r"\$\{([A-Z][A-Z0-9_]*):([A-Za-z0-9+.-]+)\}")
_STORED_TOKEN = re.compile(r"\$\{([A-Z][A-Z0-9_]*)#([0-9a-f]{" + str(_TOKEN_HEX) + r"})\}")
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
# The seed search's memory (RE2's DFA cache): a scan's secrets make a few thousand keys.
_SEED_MEMORY = 64 << 20


def _luhn(digits: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(digits)):
        d = ord(char) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card_ok(value: str) -> bool:
    digits = re.sub(r"\D", "", value)
    return 13 <= len(digits) <= 19 and _luhn(digits)


def _email_ok(value: str) -> bool:
    domain = value.rsplit("@", 1)[-1].lower().rstrip(".")
    if domain.rsplit(".", 1)[-1] in RESERVED_EMAIL_TLDS:
        return False
    return not any(domain == d or domain.endswith("." + d) for d in RESERVED_EMAIL_DOMAINS)


def _phone_ok(value: str) -> bool:
    # 555-0100 to 555-0199 are the North American numbers reserved for fiction: attack
    # probes plant them (like example.com addresses) and a report must show them.
    digits = re.sub(r"\D", "", value)
    return not (len(digits) >= 7 and digits[-7:-2] == "55501")


def _token_ok(value: str) -> bool:
    # "Bearer authentication" is prose; real tokens carry digits or are long.
    return any(c.isdigit() for c in value) or len(value) >= 20


@dataclass(frozen=True)
class _Pattern:
    kind: str
    regex: re.Pattern[str]
    # A much cheaper search that finds something in every text ``regex`` can match in: most
    # strings of a transcript are skipped at C speed (every attempt is redacted).
    quick: re.Pattern[str]
    group: int = 0
    valid: Callable[[str], bool] | None = None


# Priority order: when two matches overlap, the earlier pattern wins.
_PATTERNS: tuple[_Pattern, ...] = (
    _Pattern(
        "PRIVATE_KEY",
        quick=re.compile("PRIVATE KEY-----"),
        # The body never crosses another BEGIN: a reply made of BEGIN lines alone would
        # otherwise be read to its end once per line, quadratic (0.3 s on 32 KiB, 21 s on
        # 256 KiB); this way each line is read once (bench/bench_hostile.py).
        regex=re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:(?!-----BEGIN )[\s\S])*?"
            r"-----END [A-Z0-9 ]*PRIVATE KEY-----"
        ),
    ),
    _Pattern(
        "GITHUB_TOKEN",
        quick=re.compile("gh[pousr]_|github_pat_"),
        regex=re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ),
    _Pattern(
        "AWS_KEY",
        quick=re.compile("AKIA|ASIA|ABIA|ACCA"),
        regex=re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ),
    _Pattern(
        "AWS_SECRET",
        quick=re.compile("(?i:secret)"),
        regex=re.compile(
            r"(?i)\b(?:aws_?secret_?access_?key|aws_?secret|secret_?access_?key)"
            r"\W{0,4}[:=]\s*[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        group=1,
    ),
    _Pattern(
        "API_KEY",
        quick=re.compile("sk-|AIza|xox"),
        regex=re.compile(
            r"\bsk-[A-Za-z0-9_-]{16,}"
            r"|\bAIza[0-9A-Za-z_-]{35}\b"
            r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"
        ),
    ),
    _Pattern(
        "TOKEN",
        quick=re.compile("eyJ"),
        regex=re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}"),
    ),
    _Pattern(
        "TOKEN",
        quick=re.compile("(?i:bearer)"),
        regex=re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{8,}=*)"),
        group=1,
        valid=_token_ok,
    ),
    _Pattern(
        "EMAIL",
        quick=re.compile("@"),
        regex=re.compile(
            r"(?<![\w.+-])[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+"
            r"[A-Za-z]{2,63}\b"
        ),
        valid=_email_ok,
    ),
    _Pattern(
        "CARD",
        # The first thirteen digits of any match (a string of short numbers is skipped).
        quick=re.compile(r"\d(?:[ -]?\d){12}"),
        regex=re.compile(r"(?<![\d.])\d(?:[ -]?\d){12,18}(?![\d])"),
        valid=_card_ok,
    ),
    _Pattern(
        "PHONE",
        # What every match holds: three digits, a separator, three digits, or + and eight
        # digits (a bare number, an id or a date is skipped).
        quick=re.compile(r"\d{3}[\s.-]\d{3}|\+\d{8}"),
        regex=re.compile(
            # not inside a longer run of digit groups (card numbers, ids, dates)
            r"(?<![\w+.])(?<!\d[\s.-])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?|\d{2,4}[\s.-])"
            r"\d{3,4}[\s.-]\d{3,4}(?!\w)(?![\s.-]\d)"
            r"|(?<![\w+])\+\d{8,15}(?!\d)"
        ),
        valid=_phone_ok,
    ),
)


# One search that finds something in every text any pattern can match in.
_ANY_QUICK = re.compile("|".join(f"(?:{p.quick.pattern})" for p in _PATTERNS))

# Python's ``\s`` in a str pattern, as an RE2 class body: str.isspace() is the control
# characters below and Unicode's separators (tests/models/test_redaction_quick.py holds the two
# sets equal). RE2's own ``\s`` and ``\d`` are ASCII only.
_PY_SPACE = r"\t-\r\x1c-\x1f\x85\p{Z}"


def _re2_quick(pattern: str) -> Any:
    r"""``pattern`` (a quick search: literals, classes, ``\d``, ``\s`` inside a class,
    ``(?i:...)``) as an RE2 search over UTF-8 that matches every text Python's matches.

    RE2 reads a text once whatever the number of alternatives; Python's engine tries each of
    them at every position (36 us against 4 us for a transcript's 700 characters)."""
    translated = pattern.replace(r"\d", r"\p{Nd}").replace(r"[\s", "[" + _PY_SPACE)
    if re.search(r"\\[swbWSDB]", translated.replace(r"\\", "")):
        raise ValueError(f"no RE2 translation for the quick search {pattern!r}")
    return re2.compile(translated.encode("ascii"))


_ANY_QUICK_RE2 = _re2_quick(_ANY_QUICK.pattern)


def _nothing_to_find(text: str) -> bool:
    """Whether no pattern can match in ``text`` (``_ANY_QUICK`` finds nothing), read by RE2.

    Lone surrogates pass through as bytes RE2 matches nothing with; no quick search could
    match one anyway."""
    return _ANY_QUICK_RE2.search(text.encode("utf-8", "surrogatepass")) is None


def _known_tag(how: str) -> bool:
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


@dataclass(frozen=True)
class OffsetMap:
    """Maps offsets in an original string to offsets in its redacted form.

    ``spans`` are ``(orig_start, orig_end, new_start, new_end)`` of each replacement, sorted.
    An offset inside a replaced span moves to the placeholder's start (for a ``start``) or end
    (for an ``end``), so the mapped range always covers the whole placeholder.
    """

    spans: tuple[tuple[int, int, int, int], ...] = ()

    def start(self, pos: int) -> int:
        delta = 0
        for o_start, o_end, n_start, n_end in self.spans:
            if pos < o_start:
                break
            if pos < o_end:
                return n_start
            delta = n_end - o_end
        return pos + delta

    def end(self, pos: int) -> int:
        delta = 0
        for o_start, o_end, _n_start, n_end in self.spans:
            if pos <= o_start:
                break
            if pos <= o_end:
                return n_end
            delta = n_end - o_end
        return pos + delta


class Redactor:
    """Redacts strings with one numbering shared by everything it sees.

    Without ``key`` it writes the report form: use one instance per report, so the same email
    is ``${EMAIL_1}`` in the transcript, the evidence subject and the summary, and the
    numbering follows the order texts are given in. With ``key`` it writes the stored form
    (tokens instead of numbers), which needs no shared state: one instance may serve a whole
    scan from several threads. Without ``patterns`` only the named secrets are replaced, and
    only their whole spellings, for text that is not agent output and must be rebuilt from its
    placeholders (a command line: a reproducer expands ``${NAME}`` to the secret again).
    """

    def __init__(
        self, secrets: Mapping[str, str], *, key: bytes | None = None, patterns: bool = True
    ) -> None:
        self._key = key
        self._patterns = _PATTERNS if patterns else ()
        self._secrets = _secret_search(
            tuple(sorted((k, v) for k, v in secrets.items() if v)), fragments=patterns
        )
        self._assigned: dict[tuple[str, str], str] = {}
        self._counters: dict[str, int] = {}
        self._memo = functools.lru_cache(maxsize=_MEMO_ENTRIES)(self._redact)

    @property
    def stored(self) -> bool:
        """Whether this redactor writes the stored form."""
        return self._key is not None

    def text(self, text: str) -> str:
        """``text`` with every secret and pattern match replaced by its placeholder."""
        return self.text_with_map(text)[0]

    def text_with_map(self, text: str) -> tuple[str, OffsetMap]:
        """The redacted text and the :class:`OffsetMap` from old offsets to new ones."""
        return self._memo(text) if len(text) <= _MEMO_TEXT_MAX else self._redact(text)

    def _redact(self, text: str) -> tuple[str, OffsetMap]:
        matches = self._matches(text)
        if not matches:
            return text, OffsetMap()
        parts: list[str] = []
        spans: list[tuple[int, int, int, int]] = []
        cursor = 0
        length = 0
        for start, end, placeholder in matches:
            parts.append(text[cursor:start])
            length += start - cursor
            parts.append(placeholder)
            spans.append((start, end, length, length + len(placeholder)))
            length += len(placeholder)
            cursor = end
        parts.append(text[cursor:])
        return "".join(parts), OffsetMap(tuple(spans))

    def transcript(self, transcript: Transcript) -> tuple[Transcript, dict[str, OffsetMap]]:
        """A redacted copy and, per changed string's evidence path, its :class:`OffsetMap`."""
        return self._transcript(transcript, transcript.model_dump())

    def _transcript(
        self, transcript: Transcript, dumped: dict[str, Any]
    ) -> tuple[Transcript, dict[str, OffsetMap]]:
        """:meth:`transcript` given the transcript's ``model_dump()`` (not changed here)."""
        maps: dict[str, OffsetMap] = {}
        # Most transcripts hold nothing to hide: asking each of their strings (each answer
        # remembered) costs a fraction of rebuilding the tree with its paths to find that out.
        if not any(self.text_with_map(s)[1].spans for s in _strings_of(dumped)):
            return transcript, maps
        data = self._walk(dumped, "", maps)
        if not maps:
            return transcript, maps
        return Transcript.model_validate(data), maps

    def hides_any(self, model: BaseModel) -> bool:
        """Whether redaction would change any string of ``model``, read off the model itself.

        For the stored form only, where a string's placeholder does not depend on the order
        strings are met: the report form numbers placeholders in the order of the dump
        (:meth:`transcript`), which this walk does not keep.
        """
        strings = _model_strings(model)
        # Without named secrets only the patterns hide anything, and a text any of them
        # matches in holds a match of ``_ANY_QUICK``, which has no anchor or lookaround: a match
        # inside one string is a match inside all of them joined. One search answers for most
        # transcripts (65% of a full demo scan's), instead of a question per string.
        if (
            self._secrets is None
            and self.stored
            and (not self._patterns or _nothing_to_find("\n".join(strings)))
        ):
            return False
        return any(self.text_with_map(s)[1].spans for s in strings)

    def value(self, node: Any) -> Any:
        """Any JSON-like value with every string in it redacted (keys are left alone)."""
        return self._walk(node, "", {})

    def _walk(self, node: Any, path: str, maps: dict[str, OffsetMap]) -> Any:
        if isinstance(node, str):
            new, offsets = self.text_with_map(node)
            if offsets.spans:
                maps[path] = offsets
            return new
        if isinstance(node, dict):
            return {k: self._child(v, path, k, maps) for k, v in node.items()}
        if isinstance(node, list):
            return [self._child(v, path, i, maps) for i, v in enumerate(node)]
        return node

    def _child(self, node: Any, path: str, key: str | int, maps: dict[str, OffsetMap]) -> Any:
        """:meth:`_walk` of ``node`` at ``path.key``; the path is spelled only when it is used
        (a transcript has some fifty strings and numbers per attempt, most left as they are)."""
        if isinstance(node, str):
            new, offsets = self.text_with_map(node)
            if offsets.spans:
                maps[f"{path}.{key}" if path else str(key)] = offsets
            return new
        if isinstance(node, dict | list):
            return self._walk(node, f"{path}.{key}" if path else str(key), maps)
        return node

    def _matches(self, text: str) -> list[tuple[int, int, str]]:
        found = _Found()
        if not self.stored and "${" in text:
            # Stored-form placeholders (a journaled attempt) fold into the report form.
            for m in _STORED_TAGGED.finditer(text):
                if _known_tag(m.group(2)):
                    found.add(m.start(), m.end(), "", m.group(1))
            for m in _STORED_TOKEN.finditer(text):
                found.add(m.start(), m.end(), m.group(1), "#" + m.group(2))
        if self._secrets is not None:
            self._secrets.add_to(found, text)
        # Each pattern reads the text with what is already redacted blanked out: a card number
        # right after a secret that ends in digits is still a card number of its own, not
        # lost as the overlap of one match that began inside the secret. Text that went
        # through the stored form (it has its tokens) had its patterns found then: finding
        # more now, in contexts the stored form changed, would make a report of stored attempts
        # differ from one of the clear text (resume exactness rests on their being equal).
        folded = not self.stored and "${" in text and _STORED_TOKEN.search(text) is not None
        quiet = _nothing_to_find(text)
        patterns = () if folded or quiet else self._patterns
        masked = found.blanked(text)
        for pattern in patterns:
            if pattern.quick.search(text) is None:
                continue
            before = len(found)
            for m in pattern.regex.finditer(masked):
                value = text[m.start(pattern.group) : m.end(pattern.group)]
                if pattern.valid is not None and not pattern.valid(value):
                    continue
                found.add(m.start(pattern.group), m.end(pattern.group), pattern.kind, value)
            if len(found) > before:
                masked = found.blanked(text)
        return [(s, e, self._placeholder(kind, value)) for s, e, kind, value in found.spans]

    def _placeholder(self, kind: str, value: str) -> str:
        if not kind:  # a named secret: ``value`` is ``NAME`` or ``NAME:how``
            return "${" + (value if self.stored else value.split(":", 1)[0]) + "}"
        if self._key is not None:
            digest = hmac.new(self._key, f"{kind}\0{value}".encode(), hashlib.sha256)
            return "${" + f"{kind}#{digest.hexdigest()[:_TOKEN_HEX]}" + "}"
        key = (kind, value)
        placeholder = self._assigned.get(key)
        if placeholder is None:
            self._counters[kind] = self._counters.get(kind, 0) + 1
            placeholder = "${" + f"{kind}_{self._counters[kind]}" + "}"
            self._assigned[key] = placeholder
        return placeholder


class _Found:
    """What one text's redaction replaces: ``(start, end, kind, value)``, sorted, never two
    overlapping (the first found wins), each addition a binary search (a hostile text can
    hold tens of thousands of matches)."""

    def __init__(self) -> None:
        self.spans: list[tuple[int, int, str, str]] = []
        self._starts: list[int] = []

    def __len__(self) -> int:
        return len(self.spans)

    def add(self, start: int, end: int, kind: str, value: str) -> None:
        if start >= end:
            return
        at = bisect.bisect_left(self._starts, start)
        if at < len(self.spans) and self.spans[at][0] < end:
            return  # overlaps the next span
        if at > 0 and self.spans[at - 1][1] > start:
            return  # overlaps the one before
        self.spans.insert(at, (start, end, kind, value))
        self._starts.insert(at, start)

    def blanked(self, text: str) -> str:
        """``text`` with each span replaced by as many ``}``: offsets kept, nothing left to
        match, and to its neighbours it looks as its placeholder (``${...}``) will: not a word,
        a digit, a separator or a piece of a secret."""
        if not self.spans:
            return text
        out = []
        cursor = 0
        for start, end, _kind, _value in self.spans:
            out.append(text[cursor:start])
            out.append("}" * (end - start))
            cursor = end
        out.append(text[cursor:])
        return "".join(out)


@dataclass(frozen=True)
class _SecretSearch:
    """One set of secrets, ready to search: every spelling's fragments, found from seeds an
    RE2 search (linear time, no Python loop per character) points at, and the
    spellings of :attr:`Spellings.whole` (Python ``re``: a few literals)."""

    table: Spellings
    seed_regex: Any  # RE2, over the separator-free text as one byte per character; or None
    whole: re.Pattern[str] | None
    whole_names: dict[str, tuple[str, str]]

    def seeds(self, stripped: str) -> Callable[[int], int]:
        data = stripped.encode("ascii", "replace")  # one byte per character: offsets kept

        def next_from(at: int) -> int:
            m = self.seed_regex.search(data, at)
            return -1 if m is None else int(m.start())

        return next_from

    def add_to(self, found: _Found, text: str) -> None:
        searched = found.blanked(text)
        seeds = self.seeds if self.seed_regex is not None else None
        for fragment in self.table.find(searched, seeds):
            how = fragment_tag(self.table, text, fragment)
            name = self.table.forms[fragment[2]][0]
            found.add(fragment[0], fragment[1], "", f"{name}:{how}" if how else name)
        if self.whole is not None:
            for m in self.whole.finditer(found.blanked(text)):
                name, how = self.whole_names[m.group()]
                found.add(m.start(), m.end(), "", f"{name}:{how}" if how else name)


@functools.lru_cache(maxsize=16)
def _secret_search(
    secrets: tuple[tuple[str, str], ...], *, fragments: bool = True
) -> _SecretSearch | None:
    """The search for one set of secrets, built once per set: a scan's stored redactor and
    its report's share it (building one takes tens of milliseconds)."""
    if not secrets:
        return None
    table = Spellings(dict(secrets), fragments)
    keys = sorted({key.encode("ascii", "replace").decode("ascii") for key in table.keys})
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _SEED_MEMORY
    try:
        seed_regex = re2.compile("|".join(re2.escape(key) for key in keys), options)
    except re2.error:  # too many secrets for RE2's memory: every place is tried instead
        seed_regex = None
    whole_names = {text: (name, how) for name, how, text in table.whole}
    alternatives = sorted(whole_names, key=lambda v: (-len(v), v))
    whole = re.compile("|".join(map(re.escape, alternatives))) if alternatives else None
    return _SecretSearch(table, seed_regex, whole, whole_names)


def _strings_of(tree: Any) -> list[str]:
    """Every string value in a JSON-like tree (keys aside), in no particular order."""
    strings: list[str] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            strings.append(node)
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return strings


def _model_strings(model: BaseModel) -> set[str]:
    """Every string a model's ``model_dump()`` holds (keys aside), and perhaps more, without
    dumping it: each field's value as the model keeps it, down through models, dicts and
    lists (and tuples: a superset only costs a question). Each string once. The exact types
    are asked first: a transcript is mostly plain strings, dicts, lists and numbers."""
    strings: set[str] = set()
    stack: list[Any] = [model]
    pop, push, add = stack.pop, stack.extend, strings.add
    while stack:
        node = pop()
        kind = type(node)
        if kind is str:
            add(node)
        elif kind is dict:
            push(node.values())
        elif kind is list or kind is tuple:
            push(node)
        elif kind in _SCALARS:
            continue
        elif isinstance(node, BaseModel):
            push(vars(node).values())
        elif isinstance(node, str):  # a str enum
            add(node)
        elif isinstance(node, dict):
            push(node.values())
        elif isinstance(node, list | tuple):
            push(node)
    return strings


_SCALARS = frozenset({int, float, bool, type(None)})


def redact_text(text: str, secrets: Mapping[str, str]) -> str:
    """Redact one string on its own, report form (numbering starts at 1 for this call)."""
    return Redactor(secrets).text(text)


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


def same_when_stored(recorded: str, live: str, redactor: Redactor) -> bool:
    """Whether ``live`` text, once stored by ``redactor``, is the stored ``recorded`` text.

    Pattern tokens depend on the recording scan's key, which is not kept with a recording: two
    tokens of the same kind compare equal.
    """
    if recorded == live:
        return True

    def untokened(text: str) -> str:
        return _STORED_TOKEN.sub(lambda m: "${" + m.group(1) + "#}", text)

    return untokened(recorded) == untokened(redactor.text(live))


# --------------------------------------------------------------------------- transcripts


def redact_transcript_evidence(
    transcript: Transcript | None, evidence: Sequence[Evidence], redactor: Redactor
) -> tuple[Transcript | None, list[Evidence]]:
    """A transcript and the evidence pointing into it, redacted together (offsets moved)."""
    if transcript is None or (redactor.stored and not redactor.hides_any(transcript)):
        # Most transcripts hold nothing to hide (80 of a full demo scan's 4,255): their
        # evidence offsets stay, and no dump of the transcript is needed to find that out.
        return transcript, [redact_evidence(e, redactor) for e in evidence]
    before = transcript.model_dump()
    redacted, maps = redactor._transcript(transcript, before)
    after = redacted.model_dump() if maps else before
    return redacted, [
        redact_evidence(e, redactor, maps.get(e.path), _string_at(before, e.path), after)
        for e in evidence
    ]


def redact_attempt(attempt: Attempt, redactor: Redactor) -> Attempt:
    """The attempt as it may be stored: transcript, evidence, reason and trigger redacted.

    Its outcome and evidence were judged on the clear text; only their words change.
    """
    transcript, evidence = redact_transcript_evidence(
        attempt.transcript, attempt.evidence, redactor
    )
    update = {
        "transcript": transcript,
        "evidence": evidence,
        "reason": redactor.text(attempt.reason),
        "trigger_prompt": redactor.text(attempt.trigger_prompt),
    }
    unchanged = (
        transcript is attempt.transcript
        and update["reason"] == attempt.reason
        and update["trigger_prompt"] == attempt.trigger_prompt
        and all(new is old for new, old in zip(evidence, attempt.evidence, strict=True))
    )
    return attempt if unchanged else attempt.model_copy(update=update)


def _string_at(tree: dict[str, Any], path: str) -> str | None:
    try:
        value = resolve_path(tree, path)
    except (KeyError, IndexError, ValueError):
        return None
    return value if isinstance(value, str) else None


def redact_evidence(
    evidence: Evidence,
    redactor: Redactor,
    offsets: OffsetMap | None = None,
    original: str | None = None,
    after: dict[str, Any] | None = None,
) -> Evidence:
    """Offsets moved into the redacted string; a subject that quotes the text at the offsets
    is re-cut from the redacted string, so both show the same placeholder."""
    update: dict[str, Any] = {}
    start, end = evidence.start, evidence.end
    if offsets is not None and original is not None and after is not None:
        start, end = offsets.start(evidence.start), offsets.end(evidence.end)
        update["start"], update["end"] = start, end
        quoted = original[evidence.start : evidence.end]
        redacted = _string_at(after, evidence.path)
        if quoted and redacted is not None and evidence.subject.startswith(quoted):
            rest = evidence.subject[len(quoted) :]
            subject = redacted[start:end] + (redactor.text(rest) if rest else "")
            update["subject"] = truncate(subject, SUBJECT_MAX)
            return evidence.model_copy(update=update)
    subject = truncate(redactor.text(evidence.subject), SUBJECT_MAX)
    if not update and subject == evidence.subject:
        return evidence  # frozen, and nothing in it to hide
    update["subject"] = subject
    return evidence.model_copy(update=update)
