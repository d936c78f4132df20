"""A probe's counts on both sides of a comparison and what the exact tests say of them
(docs/gating.md, "Sampled models"): the part of :mod:`probegate.baseline` that reads rates.

A model answers by sampling, so a probe's presence is a count (vulnerable of judged attempts);
:class:`Rates` holds every compared probe's counts, the one-sided exact tests of
:mod:`probegate.chance` and their Benjamini-Hochberg adjustment, and :class:`Rate` annotates a
finding with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

from probegate.chance import (
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
from probegate.models.comparison import Change, Confirmation, Counts, FindingRef
from probegate.models.report import ProbeResult, ScanReport
from probegate.perf import share_field_sets


@dataclass(frozen=True)
class Rate:
    """One probe's counts on both sides and what the tests said of them: ``tested`` when both
    sides have a count to test (else its finding is decided on presence), ``rose`` or
    ``fell`` when the change is beyond chance, with its adjusted p-value."""

    base: Counts | None
    cur: Counts | None
    confirm: Counts | None = None
    tested: bool = False
    # Adjusted p-values of a rise and of a fall; None when the table is no such test.
    rise_p: Fraction | None = None
    fall_p: Fraction | None = None
    rose: bool = False
    fell: bool = False
    level: Fraction = LEVEL

    @cached_property
    def direction(self) -> int:
        """+1 when the current rate is higher, -1 lower, 0 the same (or not both known)."""
        if self.base is None or self.cur is None or not self.base.judged or not self.cur.judged:
            return 0
        now = self.cur.vulnerable * self.base.judged
        was = self.base.vulnerable * self.cur.judged
        return (now > was) - (now < was)

    def annotate(self, ref: FindingRef, change: Change = "") -> FindingRef:
        """The finding with its counts, its p-value and what the counts can tell."""
        p = self.rise_p if self.direction > 0 else self.fall_p if self.direction < 0 else None
        few = (
            self.tested
            and not self.rose
            and not self.fell
            and not could_show_change(
                self.base.judged if self.base else 0,
                self.cur.judged if self.cur else 0,
                self.level,
            )
        )
        # Every value is already of its field's type (validated where it was made): a copy
        # that validates again cost a 10,000-finding comparison a second.
        annotated = FindingRef.model_construct(
            **{
                **ref.__dict__,
                "baseline_counts": self.base,
                "current_counts": self.cur,
                "confirm_counts": self.confirm,
                "p_value": None if p is None else float(f"{float(p):.6g}"),
                "change": change,
                "too_few_attempts": few,
            }
        )
        share_field_sets(annotated)  # a set of names per reference: 2 MB of 10,000
        return annotated


@dataclass(frozen=True)
class Rates:
    """Every compared finding probe's counts and tests; ``tests`` is how many tables could
    show a rise at the level (the number the correction of the regressions counts)."""

    by_probe: dict[str, Rate]
    tests: int
    level: Fraction

    def of_probe(self, probe_id: str) -> Rate:
        return self.by_probe.get(probe_id, Rate(None, None, level=self.level))

    @classmethod
    def of(
        cls,
        baseline: ScanReport,
        current: ScanReport,
        confirmation: Confirmation | None,
        probes: set[str],
        level: Fraction,
    ) -> Rates:
        base = counts_of(baseline, probes)
        cur = pooled(counts_of(current, probes), confirmation, probes)
        tables = {
            probe_id: table
            for probe_id in probes
            if probe_id in base
            and probe_id in cur
            and can_test(table := table_of(base[probe_id], cur[probe_id]))
        }
        rises: dict[str, Fraction] = {}
        falls: dict[str, Fraction] = {}
        for probe_id, table in tables.items():
            # A table whose totals could not reach the level even alone is no test: only the
            # totals decide that, so leaving it out of the count keeps the error rate (Tarone).
            if increase_floor(table) <= level:
                rises[probe_id] = increase_p(table)
            if decrease_floor(table) <= level:
                falls[probe_id] = decrease_p(table)
        rise_adj, fall_adj = benjamini_hochberg(rises), benjamini_hochberg(falls)
        confirm = {p.probe_id: p.confirm for p in confirmation.probes} if confirmation else {}
        by_probe = {}
        for probe_id in probes:
            up, down = rise_adj.get(probe_id), fall_adj.get(probe_id)
            by_probe[probe_id] = Rate(
                base.get(probe_id),
                cur.get(probe_id),
                confirm.get(probe_id),
                tested=probe_id in tables,
                rise_p=up,
                fall_p=down,
                rose=up is not None and up <= level,
                fell=down is not None and down <= level,
                level=level,
            )
        return cls(by_probe, len(rises), level)


def pooled(
    cur: dict[str, Counts], confirmation: Confirmation | None, probes: set[str]
) -> dict[str, Counts]:
    """The current counts with the confirm runs' added to the probes they ran."""
    for probe in confirmation.probes if confirmation else []:
        if probe.probe_id in probes:
            cur[probe.probe_id] = plus(cur.get(probe.probe_id), probe.confirm)
    return cur


def table_of(base: Counts, cur: Counts) -> Table:
    return Table(base.vulnerable, base.judged, cur.vulnerable, cur.judged)


def counts_of(report: ScanReport, probes: set[str]) -> dict[str, Counts]:
    """Each probe's count in ``report``: from its result, or, for a finding whose probe has
    no result (a hand-made report), from the finding itself. A probe listed twice (a bad
    merge) is counted once per listing, whatever their order."""
    out: dict[str, Counts] = {}
    for r in report.results:
        if r.probe_id in probes:
            out[r.probe_id] = plus(out.get(r.probe_id), counts_of_result(r))
    for f in report.findings:
        if f.probe_id in probes and f.probe_id not in out:
            judged = max(f.attempt_count - f.unjudged_attempts, 0)
            out[f.probe_id] = Counts(vulnerable=min(max(f.successes, 1), judged), judged=judged)
    return out


def counts_of_result(result: ProbeResult) -> Counts:
    return _counts(result.vulnerable, result.vulnerable + result.resisted)


def plus(a: Counts | None, b: Counts) -> Counts:
    if a is None:
        return b
    return _counts(a.vulnerable + b.vulnerable, a.judged + b.judged)


def _counts(vulnerable: int, judged: int) -> Counts:
    """Counts with the one shared set of field names (a comparison of 10,000 probes makes
    20,000 of them: 8 MB with a set each)."""
    counts = Counts(vulnerable=vulnerable, judged=judged)
    share_field_sets(counts)
    return counts
