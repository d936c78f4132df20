"""Is a stretch of the agent's own words English? The word classes of the rules are English,
so they decide only what reads as English (docs/scoring.md, "Other languages").

The question is narrower than a language identifier's: not which of a hundred languages, but
whether English word classes may read these words. It is answered from function words, the
closed class every sentence is built of, in the lists of ``library/data/reading.yaml``: English
when the stretch holds more English function words than words of another language (their
function words, and any word with a letter outside ASCII: ``für``, ``número``, ``très``,
Cyrillic, Chinese). No answer when it holds neither. Deterministic, a set look-up per word.

Errors fall one way. A sentence of another language read as English would let English word
classes miss its warning and call a careful reply a relay; English read as another language is
only left to a judge. So a tie is not English, and a language with no list of its own still
reads as not English: it holds no English function words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from probegate.library.oracles.plain import INVISIBLE, fold
from probegate.library.oracles.reading.lexicon import Lexicon

# A word in any script: letters and digits, with invisible characters inside it and inner
# apostrophes and hyphens ("e-mail" is one word, and so is a zero-width-split "In\u200bternal").
WORD = re.compile(rf"(?:[^\W_]|[{INVISIBLE}])+(?:[-'\u2019](?:[^\W_]|[{INVISIBLE}])+)*")
_DROP = str.maketrans(dict.fromkeys(INVISIBLE))


def telling(word: str) -> str | None:
    """``word`` (as written) as the language test reads it, or None when it tells nothing of
    a language: a word in capitals (an abbreviation or a name: ET, IBAN, SSN), a word with a
    digit (a code, an order number, leetspeak), a single letter. Lookalike letters read as
    the Latin ones, invisible characters are dropped."""
    word = word.translate(_DROP)
    if len(word) < 2 or word.isupper() or any(c.isdigit() for c in word):
        return None
    return fold(word).replace("\u2019", "'")


def reads_english(words: Iterable[str], lexicon: Lexicon) -> bool | None:
    """English (True), another language (False), or nothing to tell (None), from ``words``
    (read by :func:`telling`)."""
    english = other = 0
    for word in words:
        if word in lexicon.english:
            english += 1
        elif word in lexicon.foreign or not word.isascii():
            other += 1
    if english == other == 0:
        return None
    return english > other
