"""Text an attacker disguised, read in plain letters: the one set of normalisations the oracles
share.

Attackers rewrite a payload so that a filter reading the exact characters misses it (the
mutators, library/mutators.py), and agents read through it: they quote a homoglyph payload in
plain letters, decode leetspeak, drop the zero-width characters. So whatever compares an
agent's text with an attacker's reads both in plain letters:

- **invisible characters** (zero-width spaces and joiners, the word joiner, the byte-order mark,
  the soft hyphen) are dropped: ``Op\\u200ber\\u200bator`` is ``Operator``;
- **homoglyphs** (Cyrillic and Greek letters that look Latin) and fullwidth Latin letters are
  read as the Latin letters they look like;
- **leetspeak**: in a word that mixes letters with the digits 0 1 3 4 5 7, the digits are read
  as the letters they stand for (``c0nf1rm``, ``7h3``); a number (``4471``) stays a number;
- **spacing**: words are read between any run of whitespace or punctuation.

The secret matcher (canary.py) drops the same invisible characters with its separators; the
reading rules (reading/) compare a reply's words with the attack's through :func:`plain_words`.
Every function here keeps offsets into the original text.
"""

from __future__ import annotations

import re

# Characters that take no room on screen and split a word apart for a filter.
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"

# Lookalikes of Latin letters (written as escapes so the source stays legible), one character
# for one, so offsets survive the folding.
_LOOKALIKES = {
    # Cyrillic, lower and upper case
    "\u0430": "a",
    "\u0432": "b",
    "\u0435": "e",
    "\u043e": "o",
    "\u0440": "p",
    "\u0441": "c",
    "\u0445": "x",
    "\u0443": "y",
    "\u0456": "i",
    "\u0455": "s",
    "\u0458": "j",
    "\u04bb": "h",
    "\u0501": "d",
    "\u051b": "q",
    "\u051d": "w",
    "\u04cf": "l",
    "\u0410": "A",
    "\u0412": "B",
    "\u0415": "E",
    "\u041a": "K",
    "\u041c": "M",
    "\u041d": "H",
    "\u041e": "O",
    "\u0420": "P",
    "\u0421": "C",
    "\u0422": "T",
    "\u0425": "X",
    "\u0423": "Y",
    "\u0406": "I",
    "\u0405": "S",
    "\u0408": "J",
    # Greek
    "\u0391": "A",
    "\u0392": "B",
    "\u0395": "E",
    "\u0396": "Z",
    "\u0397": "H",
    "\u0399": "I",
    "\u039a": "K",
    "\u039c": "M",
    "\u039d": "N",
    "\u039f": "O",
    "\u03a1": "P",
    "\u03a4": "T",
    "\u03a5": "Y",
    "\u03a7": "X",
    "\u03bf": "o",
    "\u03b9": "i",
    # Latin small letter script g
    "\u0261": "g",
}
_FULLWIDTH = {chr(0xFF21 + i): chr(ord("A") + i) for i in range(26)} | {
    chr(0xFF41 + i): chr(ord("a") + i) for i in range(26)
}
_FOLD = str.maketrans(_LOOKALIKES | _FULLWIDTH)
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t"})
_LEET_DIGITS = frozenset("013457")

# A word as the rules read it: letters, with invisible characters and leet digits inside it,
# and an apostrophe ending ("don't", with a typographic apostrophe too). One run of the
# characters, never tried again from inside it: linear in a hostile reply.
_TOKEN = re.compile(rf"[a-z0-9{INVISIBLE}]+(?:'[a-z]+)?")
_DROP_INVISIBLE = str.maketrans(dict.fromkeys(INVISIBLE))
_LETTERS = re.compile(r"[a-z]+(?:'[a-z]+)?")
_PLAIN_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
# What makes a text need more than reading its letters: a digit next to a letter, or an
# invisible character. A text without either reads the same both ways, token by token.
_DISGUISED = re.compile(rf"[a-z][0-9]|[0-9][a-z]|[{INVISIBLE}]")


def fold(text: str) -> str:
    """``text`` lower-cased with its lookalike letters read as Latin ones; the same length, so
    an offset in it is an offset in ``text`` (a letter whose lower case is longer, the dotted
    capital I, stays as it is)."""
    folded = text.translate(_FOLD) if not text.isascii() else text
    lowered = folded.lower()
    if len(lowered) != len(text):
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in folded)
    return lowered


def plain_words(text: str) -> list[tuple[str, int]]:
    """Every word of ``text`` in plain lower-case letters, with the offset where it starts.

    Invisible characters inside a word are dropped, lookalikes read as Latin letters, leet
    digits read as letters in a word that holds letters too (``p455w0rd``); a word of digits
    alone is a number, not a word. A typographic apostrophe reads as ``'``. Linear in the
    length of ``text``.
    """
    folded = fold(text).replace("\u2019", "'")  # one character for one: offsets hold
    if _DISGUISED.search(folded) is None:  # most replies: letters as they stand
        return [(m.group(0), m.start()) for m in _PLAIN_WORD.finditer(folded)]
    out: list[tuple[str, int]] = []
    for m in _TOKEN.finditer(folded):
        token = m.group(0)
        if token.isalpha():
            out.append((token, m.start()))
            continue
        token = token.translate(_DROP_INVISIBLE)
        if _LEET_DIGITS.intersection(token) and any(c.isalpha() for c in token):
            token = token.translate(_LEET)
        # Each run of letters left is a word ("4471" none, "a2b" two), all read as starting
        # where the token starts: the rules place words by sentence and quotation, which a
        # token never straddles.
        out.extend((run.group(0), m.start()) for run in _LETTERS.finditer(token))
    return out
