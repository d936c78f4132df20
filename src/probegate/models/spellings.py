"""The spellings of a secret that redaction hides, and where they are in a text.

An agent that leaks a secret rarely sends it whole and verbatim: it sends a piece of it, a
case-changed, reversed, rot13, URL, base64, base32 or hex spelling of it, every other character
of it, or any of those with spaces, punctuation or invisible characters between the characters,
or with any one other character between each two of its own (every other character of the
text, separators aside, is the secret's: docs/report-format.md, "Redaction").
:class:`Spellings` finds every run of :data:`FRAGMENT_MIN` or more characters of any spelling
of any secret, interleaved or not, in time linear in the text.

This module is the one owner of that rule, for the files a scan writes (through
:mod:`probegate.models.redaction`, which adds the placeholders) and for the standalone
reproducers (``pov/*.replay.py``), which carry its source verbatim to hide the secrets in
what the agent says when they run. So it uses the standard library only, nothing that needs
``from __future__`` and no annotation that Python 3.9 cannot evaluate.
"""

import base64
import bisect
import codecs
import re
import urllib.parse
from collections.abc import Callable

# A run of this many characters of a spelling that are not separators is hidden, whatever
# stands between them; a spelling with fewer is hidden only whole. Separators carry nothing of
# a secret, and counting them would hide "CANARY" in any text for a secret "sk-canary-7f3a".
FRAGMENT_MIN = 8
# Characters an agent puts between a secret's characters to slip it past a filter: whitespace,
# the punctuation of spelled-out tokens, and the invisible ones (zero-width space, non-joiner,
# joiner, word joiner, byte-order mark, soft hyphen, combining grapheme joiner, Mongolian vowel
# separator, bidi marks, invisible operators). A text is compared with all of them removed.
SEPARATORS = (
    " \t\n\r\f\v-_.,|/*'\"`"
    "\u00ad\u034f\u180e\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff"
)
_DROP = dict.fromkeys(map(ord, SEPARATORS))
# Where one run may start in the spellings, at most: a secret that repeats a run more often
# ("aaaaaaaaaaaa") would make every search try each place; any one place hides the run.
_PLACES_MAX = 8
_SEPARATOR_SET = frozenset(SEPARATORS)
_SEPARATOR_RUNS = re.compile("[" + re.escape(SEPARATORS) + "]+")
# After a fragment, the next one is most often right behind it: try this many places one by
# one before asking ``seeds`` (a call that costs as much as this many tries).
_WALK = 8


def _aligned(encode: Callable[[bytes], bytes], raw: bytes, skip: int, bits: int) -> str:
    """The characters of ``encode`` that hold only the secret's bits when it follows ``skip``
    other bytes, and the last one as it is when nothing follows: what an agent's larger encoded
    blob shows of a secret in it, whatever comes before (the first characters mix in the bits
    of the bytes before it)."""
    text = encode(bytes(skip) + raw).decode("ascii").rstrip("=")
    return text[-(-8 * skip // bits) :]  # from the first character that starts in the secret


def spellings(value: str) -> "list[tuple[str, str]]":
    """``(how, text)`` for the secret and every spelling redaction hides, in priority order
    (the first of two identical spellings names them). ``how`` is "" for the secret itself.

    The ``a1``.. forms are the secret inside a longer base64 or base32 blob, one per byte
    offset: a piece of the blob is a piece of one of them.
    """
    raw = value.encode("utf-8")
    out = [("", value)]
    if len(value) >= FRAGMENT_MIN:
        out += [
            ("lower", value.lower()),
            ("upper", value.upper()),
            ("reversed", value[::-1]),
            ("rot13", codecs.encode(value, "rot13")),
        ]
    if len(value) >= 2 * FRAGMENT_MIN:  # each half holds a run worth hiding
        out += [("even", value[::2]), ("odd", value[1::2])]
    out += [
        ("url", urllib.parse.quote(value, safe="")),
        ("url+", urllib.parse.quote_plus(value)),
        ("base64", base64.b64encode(raw).decode("ascii").rstrip("=")),
        ("base64url", base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")),
        ("base32", base64.b32encode(raw).decode("ascii").rstrip("=")),
        ("hex", raw.hex()),
        ("HEX", raw.hex().upper()),
    ]
    if len(raw) >= FRAGMENT_MIN:  # a blob's piece of a shorter secret is too short to hide
        for skip in (1, 2):
            out.append((f"base64a{skip}", _aligned(base64.b64encode, raw, skip, 6)))
            out.append((f"base64urla{skip}", _aligned(base64.urlsafe_b64encode, raw, skip, 6)))
        for skip in (1, 2, 3, 4):
            out.append((f"base32a{skip}", _aligned(base64.b32encode, raw, skip, 5)))
    return [(how, text) for how, text in out if text]


def bare(text: str) -> str:
    """``text`` without its separators."""
    return text.translate(_DROP)


class Spellings:
    """Every spelling of a set of named secrets, indexed for :meth:`find`.

    ``forms`` lists ``(name, how, text)``, one per distinct spelling of FRAGMENT_MIN or more
    characters that are not separators, in priority order: the secrets sorted by name, each
    one's spellings as :func:`spellings` orders them. ``whole`` lists the shorter spellings,
    found only whole and as they are; without ``fragments``, every spelling (for text that
    must be rebuilt from its placeholders, such as a command line).
    """

    def __init__(self, secrets: "dict[str, str]", fragments: bool = True) -> None:
        self.forms: list[tuple[str, str, str]] = []
        self.whole: list[tuple[str, str, str]] = []
        self._bare: list[str] = []
        self._where: list[list[int]] = []
        self._keys: dict[str, list[tuple[int, int]]] = {}
        seen: set[str] = set()
        for name in sorted(secrets):
            value = secrets[name]
            if not value:
                continue
            for how, text in spellings(value):
                if text in seen:
                    continue
                seen.add(text)
                stripped = bare(text)
                if len(stripped) < FRAGMENT_MIN or not fragments:
                    self.whole.append((name, how, text))
                    continue
                form = len(self.forms)
                self.forms.append((name, how, text))
                self._bare.append(stripped)
                self._where.append([i for i, c in enumerate(text) if c not in _SEPARATOR_SET])
                for start in range(len(stripped) - FRAGMENT_MIN + 1):
                    places = self._keys.setdefault(stripped[start : start + FRAGMENT_MIN], [])
                    if len(places) < _PLACES_MAX:
                        places.append((form, start))

    @property
    def keys(self) -> "list[str]":
        """Every separator-free run a fragment starts with (for a faster search of seeds)."""
        return list(self._keys)

    def find(
        self, text: str, seeds: "Callable[[str], Callable[[int], int]] | None" = None
    ) -> "list[tuple[int, int, int, int, int]]":
        """Every fragment in ``text``: ``(start, end, form, first, last)``, sorted.

        ``text[start:end]`` is the piece ``forms[form][2][first:last]`` of a spelling, or its
        characters that are not separators in order with other separators between them; the
        separators the piece starts or ends with are the spelling's own. Or, *alternating*,
        every other character of ``text[start:end]`` from its first (or every other one that
        is not a separator) is such a piece, whatever one character stands between two of them
        (:meth:`alternating`). Fragments never
        overlap (a plain one wins); what is left between them holds no run of FRAGMENT_MIN
        characters of a spelling (separators aside), nor every other character of one.
        ``seeds``, given the separator-free text, returns a function from a position to the
        first position at or after it where a fragment may start (-1: none); without it every
        position is tried.
        """
        stripped = bare(text)
        if len(stripped) < FRAGMENT_MIN or not self._keys:
            return []
        # Every other character of the text without its separators, and of the text itself
        # (a secret's own separators stand between two of the other characters there): all
        # searched with the text in one pass of ``seeds``, which says of most texts that no
        # half holds a run.
        halves = _halves(text, stripped)
        search = _Search(seeds, [stripped, *(plain for _half, plain in halves)])
        found = self._find(text, stripped, search.within(0))
        if not halves or search.none_after(len(stripped)):
            return found
        # In what the fragments found leave (each blanked out), again until nothing more is
        # found: a run that overlapped one taken is looked for in what remains of it, as it is
        # in the stored form (where the fragment is a placeholder), so both hide the same.
        current = text
        while True:
            if found:
                current = _blanked(text, found)
                halves = _halves(current, bare(current))
                search = _Search(seeds, [bare(current), *(plain for _half, plain in halves)])
            more = _merged(found, self._every_other(current, halves, search))
            if len(more) == len(found):
                return found
            found = more

    def _every_other(
        self, text: str, halves: "list[tuple[str, str]]", search: "_Search"
    ) -> "list[tuple[int, int, int, int, int]]":
        """The fragments in every other character of ``text``: of it without separators (the
        first two ``halves``), then of it as it is (the next two, when it has separators)."""
        where = _Offsets(text)
        found = []
        for index, (half, plain) in enumerate(halves):
            parity = index % 2
            for a, b, form, first, last in self._find(half, plain, search.within(1 + index)):
                if index < 2:
                    a, b = where.raw(2 * a + parity), where.raw(2 * b + parity - 2) + 1
                else:
                    a, b, first, last = _core(half, a, b, first, last)
                    a, b = 2 * a + parity, 2 * b + parity - 1
                found.append((a, b, form, first, last))
        return found

    def alternating(self, text: str, found: "tuple[int, int, int, int, int]") -> "list[int]":
        """Where the spelling's characters are in ``text[start:end]`` when ``found`` (of
        :meth:`find`) alternates with other characters; [] when it does not."""
        start, end, form, first, last = found
        piece, own = text[start:end], bare(self.forms[form][2][first:last])
        if bare(piece) == own:
            return []
        at = [i for i in range(0, len(piece), 2) if piece[i] not in _SEPARATOR_SET]
        if "".join(piece[i] for i in at) != own:  # every other one once separators are gone
            at = [i for i, char in enumerate(piece) if char not in _SEPARATOR_SET][::2]
        return at

    def _find(
        self, text: str, stripped: str, next_seed: "Callable[[int], int] | None"
    ) -> "list[tuple[int, int, int, int, int]]":
        """:meth:`find`'s plain fragments, given ``text`` without separators and where seeds
        are in it."""
        if len(stripped) < FRAGMENT_MIN:
            return []
        where: _Offsets | None = None
        found: list[tuple[int, int, int, int, int]] = []
        at = 0
        misses = _WALK
        limit = len(stripped) - FRAGMENT_MIN
        while at <= limit:
            if next_seed is not None and misses >= _WALK:
                at = next_seed(at)
                if at < 0:
                    break
            best = self._longest_at(stripped, at)
            if best is None:
                at += 1
                misses += 1
                continue
            size, form, start = best
            where = where or _Offsets(text)
            spelled, spans = self.forms[form][2], self._where[form]
            first, last = spans[start], spans[start + size - 1] + 1
            begin, end = where.raw(at), where.raw(at + size - 1) + 1
            # The spelling's own separators at the piece's edges, when the text has them too.
            floor = found[-1][1] if found else 0
            while first and begin > floor and text[begin - 1] == spelled[first - 1]:
                if spelled[first - 1] not in _SEPARATOR_SET:
                    break
                first, begin = first - 1, begin - 1
            while last < len(spelled) and end < len(text) and text[end] == spelled[last]:
                if spelled[last] not in _SEPARATOR_SET:
                    break
                last, end = last + 1, end + 1
            found.append((begin, end, form, first, last))
            at += size
            misses = 0
        return found

    def _longest_at(self, stripped: str, at: int) -> "tuple[int, int, int] | None":
        """The longest run of a spelling that starts at ``at``: (size, form, bare start)."""
        best: tuple[int, int, int] | None = None
        for form, start in self._keys.get(stripped[at : at + FRAGMENT_MIN], ()):
            length = _common(stripped, at, self._bare[form], start, FRAGMENT_MIN)
            if best is None or length > best[0]:
                best = (length, form, start)
        return best


class _Search:
    """One ``seeds`` search over several texts joined (a NUL between two), answered per text."""

    def __init__(
        self, seeds: "Callable[[str], Callable[[int], int]] | None", parts: "list[str]"
    ) -> None:
        self._next = seeds("\0".join(parts)) if seeds is not None else None
        self._starts = []
        at = 0
        for part in parts:
            self._starts.append((at, at + len(part)))
            at += len(part) + 1

    def none_after(self, at: int) -> bool:
        """Whether no seed is at or after ``at`` (an offset in the joined texts)."""
        return self._next is not None and self._next(at + 1) < 0

    def within(self, index: int) -> "Callable[[int], int] | None":
        """Where seeds are in part ``index``, in its own offsets (None: every position)."""
        if self._next is None:
            return None
        start, end = self._starts[index]
        next_seed = self._next

        def seed(at: int) -> int:
            found = next_seed(start + at)
            return found - start if 0 <= found < end else -1

        return seed


def _halves(text: str, stripped: str) -> "list[tuple[str, str]]":
    """Every other character of ``text`` without separators (both ways), then of ``text``
    itself when it has separators; each with its separator-free form."""
    if len(stripped) < 2 * FRAGMENT_MIN - 1:
        return []
    halves = [(stripped[0::2], stripped[0::2]), (stripped[1::2], stripped[1::2])]
    if stripped != text:
        halves += [(half, bare(half)) for half in (text[0::2], text[1::2])]
    return halves


def _blanked(text: str, found: "list[tuple[int, int, int, int, int]]") -> str:
    """``text`` with each fragment's characters replaced by NUL (no spelling holds one, and it
    is no separator), offsets kept."""
    parts, cursor = [], 0
    for start, end, _form, _first, _last in found:
        parts += [text[cursor:start], "\0" * (end - start)]
        cursor = end
    parts.append(text[cursor:])
    return "".join(parts)


def _core(half: str, start: int, end: int, first: int, last: int) -> "tuple[int, int, int, int]":
    """A fragment of every other character without the spelling's own separators it was
    widened to at its edges (in the text, other characters stand beside them)."""
    while half[start] in _SEPARATOR_SET:
        start, first = start + 1, first + 1
    while half[end - 1] in _SEPARATOR_SET:
        end, last = end - 1, last - 1
    return start, end, first, last


def _merged(
    plain: "list[tuple[int, int, int, int, int]]", extra: "list[tuple[int, int, int, int, int]]"
) -> "list[tuple[int, int, int, int, int]]":
    """``plain`` (sorted, apart) and each of ``extra`` that overlaps nothing kept before it."""
    kept = list(plain)
    starts = [f[0] for f in kept]
    for fragment in sorted(extra):
        at = bisect.bisect_left(starts, fragment[0])
        if at < len(kept) and kept[at][0] < fragment[1]:
            continue
        if at > 0 and kept[at - 1][1] > fragment[0]:
            continue
        kept.insert(at, fragment)
        starts.insert(at, fragment[0])
    return kept


class _Offsets:
    """Offsets in a text from offsets in it without its separators: one entry per run of
    separators, so a text with few of them costs little."""

    def __init__(self, text: str) -> None:
        self._marks: list[int] = []  # where each run of separators is, without separators
        self._shifts: list[int] = []  # separators up to the end of that run
        total = 0
        for match in _SEPARATOR_RUNS.finditer(text):
            self._marks.append(match.start() - total)
            total += match.end() - match.start()
            self._shifts.append(total)

    def raw(self, at: int) -> int:
        run = bisect.bisect_right(self._marks, at) - 1
        return at + (self._shifts[run] if run >= 0 else 0)


def _common(text: str, at: int, form: str, start: int, known: int) -> int:
    """How many characters ``text[at:]`` and ``form[start:]`` share, given the first
    ``known`` are shared (by halving: C-speed comparisons, no loop per character in Python)."""
    top = min(len(text) - at, len(form) - start)
    if text.startswith(form[start : start + top], at):
        return top
    lo, hi = known, top  # text shares lo characters, not hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if text.startswith(form[start : start + mid], at):
            lo = mid
        else:
            hi = mid
    return lo


def hide(text: str, table: Spellings, mark: "Callable[[str], str] | None" = None) -> str:
    """``text`` with every fragment and every :attr:`Spellings.whole` spelling replaced by
    ``mark(name)`` (default ``${NAME}``): what a reproducer prints and what an error message
    may say. Files get :mod:`probegate.models.redaction`'s placeholders instead."""
    mark = mark or (lambda name: "${" + name + "}")
    parts: list[str] = []
    cursor = 0
    for start, end, form, _lo, _hi in table.find(text):
        parts.append(_hide_whole(text[cursor:start], table, mark))
        parts.append(mark(table.forms[form][0]))
        cursor = end
    parts.append(_hide_whole(text[cursor:], table, mark))
    return "".join(parts)


def _hide_whole(text: str, table: Spellings, mark: "Callable[[str], str]") -> str:
    for name, _how, spelled in sorted(table.whole, key=lambda form: -len(form[2])):
        text = text.replace(spelled, mark(name))
    return text
