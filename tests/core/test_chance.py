"""The exact test and the Benjamini-Hochberg correction, held to brute-force enumeration."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probegate.chance import (
    EXACT_LIMIT,
    LEVEL,
    Table,
    benjamini_hochberg,
    can_test,
    could_show_change,
    decrease_floor,
    decrease_p,
    increase_floor,
    increase_p,
)


def _draws(table: Table) -> list[int]:
    """Every way the current scan could have drawn its judged attempts from both scans'
    attempts, labelled one by one (the first ``vulnerable`` of them vulnerable): how many
    vulnerable attempts each draw holds. Under "same rate" each draw is equally likely."""
    population = range(table.total)
    return [
        sum(1 for a in chosen if a < table.vulnerable)
        for chosen in itertools.combinations(population, table.cur_judged)
    ]


@st.composite
def tables(draw: st.DrawFn, most: int = 7) -> Table:
    base = draw(st.integers(1, most))
    cur = draw(st.integers(1, most))
    return Table(
        draw(st.integers(0, base)),
        base,
        draw(st.integers(0, cur)),
        cur,
    )


@settings(max_examples=300, deadline=None)
@given(tables())
def test_tails_are_the_share_of_draws_as_extreme(table: Table) -> None:
    draws = _draws(table)
    up = Fraction(sum(1 for x in draws if x >= table.cur_vulnerable), len(draws))
    down = Fraction(sum(1 for x in draws if x <= table.cur_vulnerable), len(draws))
    assert increase_p(table) == up
    assert decrease_p(table) == down


@settings(max_examples=300, deadline=None)
@given(tables())
def test_floors_are_the_most_extreme_draw(table: Table) -> None:
    draws = _draws(table)
    most, fewest = max(draws), min(draws)
    assert increase_floor(table) == Fraction(draws.count(most), len(draws))
    assert decrease_floor(table) == Fraction(draws.count(fewest), len(draws))
    assert increase_floor(table) <= increase_p(table)
    assert decrease_floor(table) <= decrease_p(table)


@settings(max_examples=200, deadline=None)
@given(tables())
def test_both_tails_cover_everything_once(table: Table) -> None:
    draws = _draws(table)
    exactly = Fraction(draws.count(table.cur_vulnerable), len(draws))
    assert increase_p(table) + decrease_p(table) - exactly == 1


@settings(max_examples=200, deadline=None)
@given(tables(most=12))
def test_more_vulnerable_now_is_never_less_of_a_rise(table: Table) -> None:
    if table.cur_vulnerable == table.cur_judged:
        return
    more = Table(
        table.base_vulnerable, table.base_judged, table.cur_vulnerable + 1, table.cur_judged
    )
    assert increase_p(more) <= increase_p(table)
    assert decrease_p(more) >= decrease_p(table)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 8), st.integers(1, 8), st.sampled_from([Fraction(1, 100), LEVEL, 0.05]))
def test_could_show_change_is_the_most_extreme_table(base: int, cur: int, level: float) -> None:
    extreme = increase_p(Table(0, base, cur, cur))
    assert extreme == Fraction(1, math.comb(base + cur, cur))
    assert could_show_change(base, cur, Fraction(level)) is (extreme <= level)


def test_the_briefs_examples() -> None:
    # A finding in 1 of 30 attempts against none in 30: a coin toss which side holds it.
    assert increase_p(Table(0, 30, 1, 30)) == Fraction(1, 2)
    assert increase_floor(Table(0, 30, 1, 30)) == Fraction(1, 2) > LEVEL  # never a test
    # 0 of 30 to 18 of 30: a regression at any sensible level.
    assert increase_p(Table(0, 30, 18, 30)) < Fraction(1, 10**6)
    # One attempt each side can never tell; three each, with all of them, only at 5 %.
    assert not could_show_change(1, 1)
    assert increase_p(Table(0, 3, 3, 3)) == Fraction(1, 20)
    assert not could_show_change(3, 3) and could_show_change(3, 3, Fraction(1, 20))
    assert increase_p(Table(0, 4, 4, 4)) == Fraction(1, 70)  # still above 1 in 100
    assert not could_show_change(4, 4)
    assert could_show_change(5, 5)  # 1 in 252


def test_a_p_value_equal_to_the_level_is_decided_exactly() -> None:
    # None of 99 against one of one: exactly one in a hundred, at the level and not above.
    p = increase_p(Table(0, 99, 1, 1))
    assert p == Fraction(1, 100) == LEVEL


def test_a_table_past_the_limit_is_not_tested() -> None:
    half = EXACT_LIMIT // 2
    assert can_test(Table(0, half, half, half))
    assert not can_test(Table(0, half, half, half + 1))
    assert not can_test(Table(0, 0, 3, 3))  # the baseline judged nothing


def test_counts_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError, match="4 vulnerable of 3"):
        Table(0, 3, 4, 3)


def _bh_by_definition(pvalues: dict[str, Fraction], level: Fraction) -> set[str]:
    """The step-up procedure as Benjamini and Hochberg state it: the largest rank k whose
    p-value is at most k/m of the level, and every p-value up to it."""
    ordered = sorted(pvalues.items(), key=lambda kv: (kv[1], repr(kv[0])))
    last = max(
        (rank for rank, (_, p) in enumerate(ordered, 1) if p <= level * rank / len(ordered)),
        default=0,
    )
    return {key for key, _ in ordered[:last]}


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.text("abcdef", min_size=1, max_size=3),
        st.fractions(min_value=0, max_value=1, max_denominator=200),
        max_size=8,
    ),
    st.sampled_from([Fraction(1, 100), Fraction(1, 20), Fraction(1, 5)]),
)
def test_adjusted_values_reject_what_the_step_up_procedure_rejects(
    pvalues: dict[str, Fraction], level: Fraction
) -> None:
    adjusted = benjamini_hochberg(pvalues)
    assert set(adjusted) == set(pvalues)
    assert {k for k, p in adjusted.items() if p <= level} == _bh_by_definition(pvalues, level)
    assert all(pvalues[k] <= p <= 1 for k, p in adjusted.items())


def test_one_test_is_the_test_and_many_regressions_do_not_hide_each_other() -> None:
    assert benjamini_hochberg({"a": Fraction(1, 3)}) == {"a": Fraction(1, 3)}
    assert benjamini_hochberg({}) == {}
    # The demo agent against its hardened twin, 8 attempts a probe: 133 probes at 1/12870.
    same = {f"probe-{i}": increase_p(Table(0, 8, 8, 8)) for i in range(133)}
    assert all(p <= LEVEL for p in benjamini_hochberg(same).values())
