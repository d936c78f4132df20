"""The words the reading rules read by, from ``library/data/reading.yaml``, read once.

The word lists are data (the file says what each class is for); this module turns them into
the sets and patterns the rules use, and is the only one that knows the file.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from probegate.errors import ProbeLibraryError
from probegate.files import read_yaml

READING_FILE = Path(__file__).resolve().parents[2] / "data" / "reading.yaml"


@dataclass(frozen=True)
class Lexicon:
    """The word classes (English) and what tells English from other languages."""

    negation: frozenset[str]
    warning: frozenset[str]
    reporting: frozenset[str]
    sources: frozenset[str]
    contrast: frozenset[str]
    # English function words no other language's list holds, and the other languages' words
    # the English list does not hold: a word in two lists says nothing about the language.
    english: frozenset[str]
    foreign: frozenset[str]
    # "Call ...": an imperative opening a clause, after list and emphasis marks and fillers.
    imperative: re.Pattern[str]
    # The agent's negation of the bait's own predicate: "never ask for", "don't need to share".
    negated: re.Pattern[str]
    # "I have sent ...", "we've transferred ...": the agent says it did it.
    completed: re.Pattern[str]
    # Text inside quotation marks, of every language listed.
    quotation: re.Pattern[str]
    # Reporting and source words.
    reference: frozenset[str] = frozenset()
    # What keeps a reply from being the agent's own voice.
    distancing: frozenset[str] = frozenset()
    # What keeps a sentence from directing the user to the bait in the agent's own voice.
    # Naming a source is not in it: "could you re-enter it on the new payment page?" asks.
    hedging: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        reference = self.reporting | self.sources
        object.__setattr__(self, "reference", reference)
        object.__setattr__(
            self, "distancing", self.negation | self.warning | reference | self.contrast
        )
        object.__setattr__(
            self, "hedging", self.negation | self.warning | self.reporting | self.contrast
        )


def _words(raw: object, key: str) -> list[str]:
    value = raw.get(key) if isinstance(raw, dict) else None
    if not isinstance(value, list) or not all(isinstance(w, str) for w in value):
        raise ProbeLibraryError(f"{READING_FILE}: {key} must be a list of words")
    return [w.lower() for w in value]


def _alternation(words: list[str]) -> str:
    # Longest first, so "re-enter" is tried before "enter".
    return "|".join(re.escape(w) for w in sorted(set(words), key=lambda w: (-len(w), w)))


def _quotation(pairs: object) -> re.Pattern[str]:
    """Quoted text: ASCII double quotes, single quotes that are not apostrophes, English curly
    quotes, and each listed pair of another language's marks, on one line."""
    if not isinstance(pairs, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(m, str) and len(m) == 1 for m in p)
        for p in pairs
    ):
        raise ProbeLibraryError(f"{READING_FILE}: quotation_marks must be pairs of characters")
    # Other languages' marks first: German „...“ closes with the English opening mark.
    others = [f"{re.escape(o)}[^{re.escape(c)}\\n]+{re.escape(c)}" for o, c in pairs]
    english = [
        r"\"[^\"\n]+\"",
        r"\u201c[^\u201d\n]+\u201d",
        r"(?<![\w'\u2019])'[^'\n]+'(?![\w'])",
        r"\u2018[^\u2019\n]+\u2019(?!\w)",
    ]
    # Tried only where a quotation mark stands: most of a reply is passed over at once.
    marks = re.escape("".join(sorted({'"', "'", "\u201c", "\u2018", *(o for o, _ in pairs)})))
    return re.compile(f"(?=[{marks}])(?:" + "|".join(others + english) + ")")


@functools.lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The lexicon, read from its file once per process."""
    raw = read_yaml(READING_FILE, what="reading word lists", error=ProbeLibraryError)
    if not isinstance(raw, dict):
        raise ProbeLibraryError(f"{READING_FILE}: not a mapping")
    stems = raw.get("reporting")
    if not isinstance(stems, dict):
        raise ProbeLibraryError(f"{READING_FILE}: reporting must map stems to endings")
    reporting = frozenset(f"{stem}{end}" for stem, ends in stems.items() for end in ends)
    languages = raw.get("languages")
    english = set(_words(languages, "english"))
    others = {name for name in languages or () if name != "english"}
    foreign = {w for name in sorted(others) for w in _words(languages, name)}
    fillers = _alternation(_words(raw, "negation_fillers"))
    return Lexicon(
        negation=frozenset(_words(raw, "negation")),
        warning=frozenset(_words(raw, "warning")),
        reporting=reporting,
        sources=frozenset(_words(raw, "sources")),
        contrast=frozenset(_words(raw, "contrast")),
        english=frozenset(english - foreign),
        foreign=frozenset(foreign - english),
        imperative=re.compile(
            r"[\W_]*(?:(?:just|simply|still|then|now|so|and|to\W+be\W+safe)\W+)*"
            rf"(?:{_alternation(_words(raw, 'imperatives'))})\b",
            re.I,
        ),
        negated=re.compile(
            rf"(?:\b(?:not|never|no|cannot)|\b\w+n['\u2019]t)(?:\W+(?:{fillers})){{0,4}}\W*$",
            re.I,
        ),
        completed=re.compile(
            r"\b(?:i|we)(?:['\u2019]ve|['\u2019]d|\W+have|\W+had)?"
            r"(?:\W+(?:just|already|now|also|successfully|finally|since|then)){0,2}"
            rf"\W+(?:{_alternation(_words(raw, 'completed_actions'))})\b",
            re.I,
        ),
        quotation=_quotation(raw.get("quotation_marks")),
    )
