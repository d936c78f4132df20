"""Where a reply quotes and where it holds code, as Markdown renders it: fences, blockquotes,
code spans and quotation marks; and the list items and lines a lead-in line introduces.

Spans are ``(start, end)`` offsets into the reply, sorted; :func:`within` finds the one that
holds a stretch by bisection, so a reply with many matches is read in linear time.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

Span = tuple[int, int]

_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+")
_BLOCKQUOTE = re.compile(r"[ \t]{0,3}>")
_FENCE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})")
_BACKTICKS = re.compile(r"`+")


@dataclass
class Blocks:
    """A reply's quotations and code.

    ``quoted``: everything quoted (blockquotes, fences, code spans, quotation marks), merged;
    ``code``: fences and code spans, merged; ``inline``: the quotations inside one line (code
    spans and quotation marks), each as it stands; ``lead_ins``: (item start, item end,
    lead-in start, lead-in end) of each list item or line after a line that ends with a colon.
    """

    quoted: list[Span] = field(default_factory=list)
    code: list[Span] = field(default_factory=list)
    inline: list[Span] = field(default_factory=list)
    lead_ins: list[tuple[int, int, int, int]] = field(default_factory=list)


@dataclass
class _LeadIns:
    """Which lines a lead-in line introduces: the list items after it (and the lines that
    continue an item), or the one line after a line that ends with a colon. A lead-in
    introduces its list or code block, not the text after them."""

    text: str
    found: list[tuple[int, int, int, int]]
    # The last line of plain text, and whether the lines since it are list items.
    last_plain: Span | None = None
    listing: bool = False

    def fence(self) -> None:
        self.last_plain = None

    def line(self, offset: int, stripped: str) -> None:
        end = offset + len(stripped)
        item = _LIST_ITEM.match(stripped) or (self.listing and stripped[:1] in (" ", "\t"))
        if item:
            self.listing = True
            if self.last_plain is not None:
                self.found.append((offset, end, *self.last_plain))
        elif stripped.strip():
            if self.last_plain is not None and not self.listing and self._colon(self.last_plain):
                # "It says:" on a line of its own introduces the line after it.
                self.found.append((offset, end, *self.last_plain))
            self.last_plain, self.listing = (offset, end), False

    def _colon(self, line: Span) -> bool:
        return self.text[line[0] : line[1]].rstrip().endswith(":")


def read_blocks(text: str, quotation: re.Pattern[str]) -> Blocks:
    """The quotations and code of ``text`` (``quotation``: what quotation marks enclose)."""
    blocks = Blocks()
    lead_ins = _LeadIns(text, blocks.lead_ins)
    quoted: list[Span] = []
    code: list[Span] = []
    offset, fence, fence_start, quote_start = 0, "", 0, -1
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\n")
        opener = _FENCE.match(stripped)
        if fence or opener:
            if not fence:
                fence, fence_start = opener.group(1) if opener else "", offset
                lead_ins.fence()
            elif _closes(opener, fence):
                code.append((fence_start, offset + len(stripped)))
                fence = ""
            offset += len(line)
            continue
        if _BLOCKQUOTE.match(stripped):
            quote_start = offset if quote_start < 0 else quote_start
        elif quote_start >= 0:
            quoted.append((quote_start, offset))
            quote_start = -1
        lead_ins.line(offset, stripped)
        _inline(blocks, stripped, offset, quotation, quoted, code)
        offset += len(line)
    if fence:  # an unclosed fence runs to the end, as Markdown renders it
        code.append((fence_start, len(text)))
    if quote_start >= 0:
        quoted.append((quote_start, len(text)))
    blocks.quoted, blocks.code = _merge(quoted + code), _merge(code)
    blocks.inline.sort()
    return blocks


def _closes(opener: re.Match[str] | None, fence: str) -> bool:
    """The line closes the open fence: the same character, at least as many times."""
    return (
        opener is not None and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence)
    )


def _inline(
    blocks: Blocks,
    line: str,
    offset: int,
    quotation: re.Pattern[str],
    quoted: list[Span],
    code: list[Span],
) -> None:
    """The code spans and quotation marks of one line."""
    for begin, stop in _code_spans(line):
        code.append((offset + begin, offset + stop))
        blocks.inline.append((offset + begin, offset + stop))
    for m in quotation.finditer(line):
        quoted.append((offset + m.start(), offset + m.end()))
        blocks.inline.append((offset + m.start(), offset + m.end()))


def _code_spans(line: str) -> Iterator[Span]:
    """Code spans as Markdown reads them: a run of n backticks opens one and the next run of
    exactly n closes it; a run with no partner is literal text."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(line)]
    partner: list[int] = [-1] * len(runs)
    last_of_length: dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        length = runs[i][1] - runs[i][0]
        partner[i] = last_of_length.get(length, -1)
        last_of_length[length] = i
    i = 0
    while i < len(runs):
        j = partner[i]
        if j < 0:
            i += 1
            continue
        yield runs[i][0], runs[j][1]
        i = j + 1


def _merge(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for begin, stop in sorted(spans):
        if out and begin <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], stop))
        else:
            out.append((begin, stop))
    return out


def within(spans: list[Span], start: int, end: int) -> Span | None:
    """The span of ``spans`` (sorted, not overlapping) that holds ``[start, end)``, if any."""
    i = bisect.bisect_right(spans, (start, sys.maxsize)) - 1
    if i >= 0 and spans[i][0] <= start and end <= spans[i][1]:
        return spans[i]
    return None


def last_in(spans: list[Span], begin: int, stop: int) -> Span | None:
    """The last of the spans (sorted by start) that starts in ``[begin, stop)``."""
    i = bisect.bisect_left(spans, (stop, -1)) - 1
    return spans[i] if i >= 0 and spans[i][0] >= begin else None


def any_in(spans: list[Span], begin: int, stop: int) -> bool:
    """Does any of the spans (sorted by start) start in ``[begin, stop)``?"""
    i = bisect.bisect_left(spans, (begin, -1))
    return i < len(spans) and spans[i][0] < stop
