"""Whether two counts of a probe differ beyond chance: the exact test and the correction the
baseline gate decides on (docs/gating.md, "Sampled models").

A model answers by sampling, so one agent can be vulnerable to a probe in some attempts and
not in others; what a scan knows of a probe is a count, vulnerable of judged attempts. Two
counts of one probe are compared with Fisher's exact test, one-sided: given how many of the
two scans' judged attempts were vulnerable in all, how likely is the current scan to hold at
least as many of them as it does (at most, for a decrease) if both scans sampled the same
rate? The test is exact at any count, and scans often hold one to thirty attempts of a probe,
where approximations (a z-test, a chi-square) are wrong; it needs no rate to be known; and
conditioning on the total is what lets a table that cannot reach the level be left out of the
correction (:func:`increase_floor`). The correction for testing every probe of a scan at once
is Benjamini and Hochberg's (:func:`benjamini_hochberg` says why).

Every p-value is a fraction computed with integers, so a p-value equal to the level is decided
the same way on every machine and the decision is the same bytes for the same counts. A table
of more than :data:`EXACT_LIMIT` judged attempts is not tested (:func:`can_test`): a count that
large comes only from a hand-made report, and its test would take seconds.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import TypeVar

# The chance the gate takes, per comparison, of calling an unchanged agent regressed: one pull
# request in a hundred at most (docs/gating.md says why this level).
LEVEL = Fraction(1, 100)
# Judged attempts of one probe on both sides together beyond which no test is made (27 ms
# for the slowest table at this size).
EXACT_LIMIT = 20_000

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Table:
    """One probe's counts in two scans: vulnerable of judged attempts, baseline and current.

    In the terms of the hypergeometric law the test rests on: of ``total`` judged attempts,
    ``vulnerable`` were vulnerable; the current scan drew ``cur_judged`` of them and got
    ``cur_vulnerable``.
    """

    base_vulnerable: int
    base_judged: int
    cur_vulnerable: int
    cur_judged: int

    def __post_init__(self) -> None:
        for got, of in (
            (self.base_vulnerable, self.base_judged),
            (self.cur_vulnerable, self.cur_judged),
        ):
            if not 0 <= got <= of:
                raise ValueError(f"a count of {got} vulnerable of {of} judged attempts")

    @property
    def total(self) -> int:
        return self.base_judged + self.cur_judged

    @property
    def vulnerable(self) -> int:
        return self.base_vulnerable + self.cur_vulnerable

    @property
    def _range(self) -> tuple[int, int]:
        """The fewest and most vulnerable attempts the current scan can hold, given the
        totals."""
        low = max(0, self.cur_judged - (self.total - self.vulnerable))
        return low, min(self.vulnerable, self.cur_judged)


def can_test(table: Table) -> bool:
    """Both scans judged the probe, and the counts are small enough to test exactly."""
    return table.base_judged > 0 and table.cur_judged > 0 and table.total <= EXACT_LIMIT


def increase_p(table: Table) -> Fraction:
    """One-sided p-value of a rise: the chance, were both rates the same, that the current scan
    holds at least ``cur_vulnerable`` of the vulnerable attempts."""
    _, high = table._range
    return _tail(table, table.cur_vulnerable, high)


def decrease_p(table: Table) -> Fraction:
    """One-sided p-value of a fall: the chance that the current scan holds at most
    ``cur_vulnerable`` of the vulnerable attempts."""
    low, _ = table._range
    return _tail(table, low, table.cur_vulnerable)


def increase_floor(table: Table) -> Fraction:
    """The smallest :func:`increase_p` these totals allow (every vulnerable attempt the
    current scan could hold, it holds). Above the level, no count with these totals could
    show a rise: the table is no test, and the correction does not count it (Tarone)."""
    _, high = table._range
    return _tail(table, high, high)


def decrease_floor(table: Table) -> Fraction:
    """The smallest :func:`decrease_p` these totals allow."""
    low, _ = table._range
    return _tail(table, low, low)


@lru_cache(maxsize=1024)
def could_show_change(base_judged: int, cur_judged: int, level: Fraction = LEVEL) -> bool:
    """Whether these numbers of attempts could show a change at ``level`` whatever their
    counts: the most extreme table (none vulnerable on one side, all on the other) has
    p = 1 / C(total, cur_judged). When it cannot, "within noise" means "too few attempts to
    tell", and the fix is more attempts, not a closer look."""
    if base_judged <= 0 or cur_judged <= 0:
        return False
    return math.comb(base_judged + cur_judged, cur_judged) * level >= 1


def benjamini_hochberg(pvalues: Mapping[K, Fraction]) -> dict[K, Fraction]:
    """The Benjamini-Hochberg adjustment: each p-value as the level at which the step-up
    procedure over all of them would reject it (``min over j >= i of m p(j) / j``, in
    ascending order).

    Rejecting those at or below the level keeps the expected share of false rises among the
    rises called at or below it; when nothing changed, every rise called is false, so the
    chance of calling any is at most the level too: the gate's false alarm. That holds for
    independent tests and for positively dependent ones (Benjamini and Yekutieli 2001), as
    the probes of one scan are: one agent and one model, more compliant or less so
    everywhere at once. Unlike a family-wise correction (Holm's), it does not grow stricter
    the more probes regress: 133 probes gone from none of 8 attempts to 8 of 8 are each
    p = 1/12870, which Holm's correction over 133 calls none of, and this calls all of.
    Equal p-values get equal adjusted values (the step-up gives every tie the value of its
    last rank), so the result depends on the p-values alone, never on the mapping's order, and
    it is computed once per distinct value: a comparison of 10,000 findings holds a handful.
    """
    count = len(pvalues)
    # Counted by their integer ratios: a Fraction's hash costs a modular inverse.
    ratios = {key: p.as_integer_ratio() for key, p in pvalues.items()}
    ties = Counter(ratios.values())
    ordered = sorted(ties, key=lambda ratio: Fraction(*ratio))
    last_rank: dict[tuple[int, int], int] = {}
    seen = 0
    for ratio in ordered:
        seen += ties[ratio]
        last_rank[ratio] = seen
    adjusted: dict[tuple[int, int], Fraction] = {}
    running = Fraction(1)
    for ratio in reversed(ordered):
        running = min(running, Fraction(*ratio) * count / last_rank[ratio])
        adjusted[ratio] = running
    return {key: adjusted[ratio] for key, ratio in ratios.items()}


@lru_cache(maxsize=4096)
def _tail(table: Table, first: int, last: int) -> Fraction:
    """P(first <= X <= last) for X the current scan's vulnerable attempts, exactly.

    Each term is C(K, x) C(N - K, n - x); the next one follows from it by a ratio of small
    integers, and the division is exact because every term is an integer.
    """
    low, high = table._range
    first, last = max(first, low), min(last, high)
    if first > last:
        return Fraction(0)
    n, big_k, big_n = table.cur_judged, table.vulnerable, table.total
    term = math.comb(big_k, first) * math.comb(big_n - big_k, n - first)
    total = term
    for x in range(first, last):
        term = term * (big_k - x) * (n - x) // ((x + 1) * (big_n - big_k - n + x + 1))
        total += term
    return Fraction(total, math.comb(big_n, n))
