"""Redaction: no real secret or personal data reaches a file probegate writes.

Two sources of sensitive text are replaced by ``${...}`` placeholders:

- named secrets, everything the user handed probegate that must never land in a file (declared
  canaries the agent holds, API keys, secret headers, the signing secret), given as a mapping
  ``{"CANARY_1": "<value>"}``. Every run of 8 or more characters of the secret, in any spelling
  :mod:`probegate.models.spellings` knows (case-changed, reversed, rot13, URL, base64, base32,
  hex, a piece of a larger base64 or base32 blob, every other character), also with separators
  or invisible characters between its characters, or any one other character between each two
  of them, is replaced, because an exfiltrating agent rarely sends a secret verbatim and whole
  (docs/report-format.md, "Redaction": what is covered and what is not);
- what is known by its shape (:mod:`probegate.models.shapes`): API keys and tokens, emails,
  phone numbers and Luhn-valid card numbers. Synthetic canaries the probes plant are not
  secrets and are simply not passed in.

Placeholders come in two forms, one per kind of file:

- The **stored form** is what a scan keeps while it runs (:mod:`probegate.models.placeholders`
  says what its placeholders hold and spells them back). Verdicts are judged on the clear text
  before anything is stored, and a resumed scan never judges a journaled attempt again.
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
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import re2
from pydantic import BaseModel

from probegate.models.placeholders import (
    STORED_TAGGED,
    STORED_TOKEN,
    TOKEN_HEX,
    fragment_tag,
    known_tag,
    restore,
    restore_turn,
    stored_key,
)
from probegate.models.shapes import (
    PATTERNS,
    RESERVED_EMAIL_DOMAINS,
    RESERVED_EMAIL_TLDS,
    nothing_to_find,
)
from probegate.models.spellings import Spellings
from probegate.models.transcript import Transcript, resolve_path
from probegate.models.verdict import SUBJECT_MAX, Attempt, Evidence, truncate

# Where a name is imported from this module, it may still be: these live with their owners.
__all__ = [
    "RESERVED_EMAIL_DOMAINS",
    "RESERVED_EMAIL_TLDS",
    "OffsetMap",
    "Redactor",
    "fragment_tag",
    "redact_attempt",
    "redact_evidence",
    "redact_text",
    "redact_transcript_evidence",
    "restore",
    "restore_turn",
    "same_when_stored",
    "stored_key",
]

# Every attempt is redacted, and most of its strings are the same from one attempt to the next
# (roles, tool names, argument keys, fixtures the agent repeats): a Redactor redacts a string
# once. Its output for a string never changes (a report-form placeholder, once numbered, keeps
# its number), so a remembered result is the result. Bounded in entries and in the length of
# a string kept, so a long scan of a verbose agent does not grow it.
_MEMO_ENTRIES = 4096
_MEMO_TEXT_MAX = 1024

# The seed search's memory (RE2's DFA cache): a scan's secrets make a few thousand keys.
_SEED_MEMORY = 64 << 20


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
        self._patterns = PATTERNS if patterns else ()
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
        # matches in holds a match of ``ANY_QUICK``, which has no anchor or lookaround: a match
        # inside one string is a match inside all of them joined. One search answers for most
        # transcripts (65% of a full demo scan's), instead of a question per string.
        if (
            self._secrets is None
            and self.stored
            and (not self._patterns or nothing_to_find("\n".join(strings)))
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
            for m in STORED_TAGGED.finditer(text):
                if known_tag(m.group(2)):
                    found.add(m.start(), m.end(), "", m.group(1))
            for m in STORED_TOKEN.finditer(text):
                found.add(m.start(), m.end(), m.group(1), "#" + m.group(2))
        if self._secrets is not None:
            self._secrets.add_to(found, text)
        # Each pattern reads the text with what is already redacted blanked out: a card number
        # right after a secret that ends in digits is still a card number of its own, not
        # lost as the overlap of one match that began inside the secret. Text that went
        # through the stored form (it has its tokens) had its patterns found then: finding
        # more now, in contexts the stored form changed, would make a report of stored attempts
        # differ from one of the clear text (resume exactness rests on their being equal).
        folded = not self.stored and "${" in text and STORED_TOKEN.search(text) is not None
        quiet = nothing_to_find(text)
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
            return "${" + f"{kind}#{digest.hexdigest()[:TOKEN_HEX]}" + "}"
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


def same_when_stored(recorded: str, live: str, redactor: Redactor) -> bool:
    """Whether ``live`` text, once stored by ``redactor``, is the stored ``recorded`` text.

    Pattern tokens depend on the recording scan's key, which is not kept with a recording: two
    tokens of the same kind compare equal.
    """
    if recorded == live:
        return True

    def untokened(text: str) -> str:
        return STORED_TOKEN.sub(lambda m: "${" + m.group(1) + "#}", text)

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
