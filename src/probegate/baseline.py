"""Baselines: read a stored scan, compare two scans, refresh the baseline.

Findings are matched by ``fp``, which depends on the probe id alone
(:func:`probegate.models.report.finding_fp`), so "the same finding" means "the same probe
succeeded again", whatever the mode, seed or transcript.

A model answers by sampling, so a probe's presence is a count: vulnerable of judged attempts
(its result's ``vulnerable`` and ``vulnerable + resisted``; unjudged and not-delivered attempts
are not judged). Two counts of one probe differ beyond chance when the one-sided exact test of
:mod:`probegate.chance` says so at the comparison's level, after Benjamini and Hochberg's
correction over every table that could reach it (docs/gating.md, "Sampled models"). A
comparison sorts every finding into one bucket:

- ``new``: in the current scan only, its probe's count risen beyond chance, not suppressed. A
  regression.
- ``new_suppressed``: new but accepted in the suppression file: listed, not a regression.
- ``changed``: in both, its count risen (``worse``: a regression unless suppressed) or fallen
  (``better``) beyond chance.
- ``persisting``: in both, its counts within noise of each other.
- ``fixed``: in the baseline only, its count fallen beyond chance to none.
- ``within_noise``: on one side only, but the two counts do not differ beyond chance: a
  sampled model's flip, shown with both counts.
- ``unconfirmed``: in the baseline, absent from the current scan, but the current scan did not
  judge its probe (not run, unjudged, not applicable). Unjudged is never counted as resisted,
  so these are not called fixed.
- ``not_compared``: only with ``allow_mismatch``: findings on probes that are not in both scans.

A side that judged none of a probe's attempts has no count to test; such a finding is decided
on presence alone, as before counts were kept: in the current scan only, it is new.

A regression is a new or worse finding, or an ``aivss`` drop larger than the tolerance once
the findings within noise are counted as the baseline counted them: a flaky finding moves the
score (by its severity's cap, too), and that move is noise as much as the finding is. Per-ASI
deltas are reported, not gated: the score is what gates (docs/gating.md).

Reports are untrusted input, parsed once at the edge by
:func:`probegate.models.stored.load_report` into a validated :class:`ScanReport` before they
reach :func:`compare`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from probegate.chance import (
    LEVEL,
)
from probegate.errors import ReportError, UsageError
from probegate.files import MAX_REPORT_BYTES, read_bytes, write_atomic
from probegate.models.comparison import (
    AsiDelta,
    Comparison,
    Confirmation,
    FindingRef,
    ReportRef,
)
from probegate.models.report import ScanReport
from probegate.models.taxonomy import ASI_IDS, SEVERITY_RANK
from probegate.perf import gc_paused, share_field_sets
from probegate.rates import Rate, Rates
from probegate.scoring import category_of, score

# Findings a reason names before "and N more".
_NAMED = 5

# --------------------------------------------------------------------------- comparing


def compare(
    baseline: ScanReport,
    current: ScanReport,
    *,
    tolerance: float = 0.0,
    allow_mismatch: bool = False,
    confirmation: Confirmation | None = None,
    level: Fraction = LEVEL,
) -> Comparison:
    """Compare ``current`` against ``baseline`` (docs/gating.md).

    Refuses (:class:`~probegate.errors.UsageError`) to compare scans of different probe-library
    versions or modes unless ``allow_mismatch``: their findings and scores measure different
    things. With ``allow_mismatch`` only probes present in both scans' results are compared,
    findings on the others are listed as ``not_compared``, and the score delta is shown but not
    gated, because the two scores cover different probe sets.

    ``confirmation``: what ``scan --confirm N`` ran again, pooled with the current scan's
    counts; by default the confirmation ``current`` recorded in its own comparison, so
    ``probegate compare`` decides as the scan did.

    Deterministic: every list is sorted, so the result does not depend on finding order.
    """
    # Ten thousand findings make a few hundred thousand short-lived, acyclic objects, and every
    # collection of the cyclic collector rescans both reports: it was half of the time.
    with gc_paused():
        return _compare(baseline, current, tolerance, allow_mismatch, confirmation, level)


def _compare(
    baseline: ScanReport,
    current: ScanReport,
    tolerance: float,
    allow_mismatch: bool,
    confirmation: Confirmation | None,
    level: Fraction,
) -> Comparison:
    if not math.isfinite(tolerance) or tolerance < 0:
        raise UsageError(f"--tolerance must be a number >= 0, got {tolerance}")
    mismatch = check_comparable(
        baseline,
        library_version=current.probe_library_version,
        mode=current.mode,
        allow_mismatch=allow_mismatch,
    )
    notes = [*baseline.import_notes, *current.import_notes]
    base_by_fp = _index(baseline, "baseline", notes)
    cur_by_fp = _index(current, "current", notes)

    common = _common_probes(baseline, current, mismatch, notes)
    if confirmation is None and current.comparison is not None:
        confirmation = current.comparison.confirmation
    compared = {
        ref.probe_id
        for ref in [*base_by_fp.values(), *cur_by_fp.values()]
        if common is None or ref.probe_id in common
    }
    rates = Rates.of(baseline, current, confirmation, compared, level)
    buckets = _sort_findings(base_by_fp, cur_by_fp, rates, common)
    notes += _rate_notes(buckets, rates, confirmation, level)
    notes += _suppression_notes(current)

    scoring = _Score.of(baseline, current, buckets, gated=not mismatch, tolerance=tolerance)
    notes += scoring.notes
    reasons = _reasons(buckets) + scoring.reasons

    return Comparison(
        baseline=_report_ref(baseline),
        current=_report_ref(current),
        tolerance=tolerance,
        mismatch=mismatch,
        common_probes_only=common is not None,
        new=_sorted(buckets.new),
        new_suppressed=_sorted(buckets.new_suppressed),
        fixed=_sorted(buckets.fixed),
        persisting=_sorted(buckets.persisting),
        unconfirmed=_sorted(buckets.unconfirmed),
        not_compared=_sorted(buckets.not_compared),
        aivss_delta=scoring.delta,
        score_gated=scoring.gated,
        score_regression=scoring.regression,
        asi_deltas=_asi_deltas(baseline, current),
        regression=bool(reasons),
        reasons=reasons,
        notes=notes,
        level=float(level),
        tests=rates.tests,
        changed=_sorted(buckets.changed),
        within_noise=_sorted(buckets.within_noise),
        aivss_delta_beyond_noise=scoring.beyond,
        confirmation=confirmation,
    )


def _common_probes(
    baseline: ScanReport, current: ScanReport, mismatch: list[str], notes: list[str]
) -> set[str] | None:
    """The probes both scans ran, when they measure different things (else None: all)."""
    if not mismatch:
        return None
    common = {r.probe_id for r in baseline.results} & {r.probe_id for r in current.results}
    notes.append(
        f"{'; '.join(mismatch)}: only the {len(common)} probe(s) present in both scans "
        "are compared, and the score delta is not gated"
    )
    return common


# --------------------------------------------------------------------------- buckets


@dataclass
class _Buckets:
    """The findings of a comparison, each in exactly one bucket (the module docstring says
    what each means)."""

    new: list[FindingRef] = field(default_factory=list)
    new_suppressed: list[FindingRef] = field(default_factory=list)
    changed: list[FindingRef] = field(default_factory=list)
    persisting: list[FindingRef] = field(default_factory=list)
    fixed: list[FindingRef] = field(default_factory=list)
    within_noise: list[FindingRef] = field(default_factory=list)
    unconfirmed: list[FindingRef] = field(default_factory=list)
    not_compared: list[FindingRef] = field(default_factory=list)
    # Findings decided on presence: a side judged none of their probes' attempts.
    on_presence: int = 0

    @property
    def worse(self) -> list[FindingRef]:
        return [r for r in self.changed if r.change == "worse" and not r.suppressed]

    def noise_probes(self) -> set[str]:
        """The probes whose counts are within noise of each other: the score counts them as
        the baseline did before it gates."""
        return {r.probe_id for r in [*self.within_noise, *self.persisting]}


def _sort_findings(
    base_by_fp: dict[str, FindingRef],
    cur_by_fp: dict[str, FindingRef],
    rates: Rates,
    common: set[str] | None,
) -> _Buckets:
    """Both scans' findings in their buckets; ``common``, when the scans differ in what they
    measure, is the probes both ran, and a finding on any other probe is not compared."""
    out = _Buckets()
    for fp, ref in cur_by_fp.items():
        if common is not None and ref.probe_id not in common:
            out.not_compared.append(ref)
            continue
        rate = rates.of_probe(ref.probe_id)
        if fp in base_by_fp:
            _in_both(out, ref, rate)
        elif rate.tested and not rate.rose:
            out.within_noise.append(rate.annotate(ref))
        else:
            out.on_presence += not rate.tested
            bucket = out.new_suppressed if ref.suppressed else out.new
            bucket.append(rate.annotate(ref))
    for fp, ref in base_by_fp.items():
        if fp in cur_by_fp:
            continue
        if common is not None and ref.probe_id not in common:
            out.not_compared.append(ref)
            continue
        rate = rates.of_probe(ref.probe_id)
        if rate.cur is None or not rate.cur.judged:
            out.unconfirmed.append(rate.annotate(ref))
        elif rate.tested and not rate.fell:
            out.within_noise.append(rate.annotate(ref))
        else:
            out.on_presence += not rate.tested
            out.fixed.append(rate.annotate(ref))
    return out


def _in_both(out: _Buckets, ref: FindingRef, rate: Rate) -> None:
    if rate.rose:
        out.changed.append(rate.annotate(ref, "worse"))
    elif rate.fell:
        out.changed.append(rate.annotate(ref, "better"))
    else:
        out.persisting.append(rate.annotate(ref))


def _reasons(buckets: _Buckets) -> list[str]:
    reasons = []
    if buckets.new:
        reasons.append(
            f"{len(buckets.new)} new finding(s) beyond noise: {_named(_sorted(buckets.new))}"
        )
    worse = buckets.worse
    if worse:
        reasons.append(
            f"{len(worse)} finding(s) more frequent beyond noise: {_named(_sorted(worse))}"
        )
    return reasons


def _named(refs: list[FindingRef]) -> str:
    """``probe (3 of 3 vs 0 of 30 in the baseline)``, the first few."""
    shown = ", ".join(f"{r.probe_id} ({_versus(r)})" for r in refs[:_NAMED])
    more = len(refs) - _NAMED
    return f"{shown}, and {more} more" if more > 0 else shown


def _versus(ref: FindingRef) -> str:
    """Both counts of a finding: ``3 of 30 vs 0 of 30 in the baseline``."""
    now = ref.current_counts.text() if ref.current_counts else "not judged"
    was = ref.baseline_counts.text() if ref.baseline_counts else "not judged"
    return f"{now} vs {was} in the baseline"


def _rate_notes(
    buckets: _Buckets, rates: Rates, confirmation: Confirmation | None, level: Fraction
) -> list[str]:
    """What the reader of a rate decision should know beyond the buckets."""
    notes = []
    few = [r for r in buckets.within_noise if r.too_few_attempts]
    if few:
        notes.append(
            f"{len(few)} finding(s) within noise had too few attempts to show a change at the "
            f"level {float(level):g} whatever their counts (one attempt a side never can): "
            "record the baseline with more attempts (--repeat N, or --mode full) and confirm "
            "new findings (--confirm N); docs/gating.md, 'Sampled models'"
        )
    if buckets.on_presence:
        notes.append(
            f"{buckets.on_presence} finding(s) decided on presence alone: a scan judged none "
            "of their probes' attempts (or more than the exact test takes), so there is no "
            "count to test"
        )
    if confirmation is not None:
        notes.append(
            f"the current scan's confirm runs ({confirmation.runs} more run(s) of "
            f"{len(confirmation.probes)} probe(s)) are pooled with its first run"
            + (
                f"; they stopped early ({confirmation.stopped_reason}), so only their judged "
                "attempts count"
                if confirmation.stopped_reason != "completed"
                else ""
            )
        )
    return notes


@dataclass(frozen=True)
class _Score:
    """The score part of a comparison: its change, the change beyond noise, and whether
    that is a regression, with the reason or the note that says so."""

    delta: int
    beyond: int
    gated: bool
    regression: bool
    reasons: list[str]
    notes: list[str]

    @classmethod
    def of(
        cls,
        baseline: ScanReport,
        current: ScanReport,
        buckets: _Buckets,
        *,
        gated: bool,
        tolerance: float,
    ) -> _Score:
        notes: list[str] = []
        scored = current.aivss is not None and baseline.aivss is not None
        delta = (current.aivss or 0) - (baseline.aivss or 0) if scored else 0
        if gated and (not scored or "not_evaluated" in (baseline.band, current.band)):
            gated = False
            notes.append("a scan has band not_evaluated: its score is not a measurement, not gated")
        beyond = _beyond_noise(baseline, current, buckets.noise_probes(), delta)
        regression = gated and -beyond > tolerance
        reasons = []
        if regression:
            reasons.append(_score_reason(baseline, current, delta, beyond, tolerance))
        elif gated and -delta > tolerance:
            notes.append(_score_noise_note(baseline, current, delta, beyond, tolerance))
        return cls(delta, beyond, gated, regression, reasons, notes)


def _beyond_noise(baseline: ScanReport, current: ScanReport, noise: set[str], delta: int) -> int:
    """The score's change once the probes within noise count as the baseline counted them.

    The current score is recomputed (scoring.score) with those probes' vulnerable and resisted
    attempts replaced by the baseline's; what that moves is the noise's part of the change,
    and taking it off leaves what the counts beyond chance moved. Only reports whose scores are
    their results' scores by this formula (every scan's of this version; not a hand-made or
    foreign one, nor one scored by another formula) can be compared so: for any other the
    change is taken as it is.
    """
    was = {r.probe_id: r for r in baseline.results}
    moved = {
        r.probe_id
        for r in current.results
        if r.probe_id in noise
        and r.probe_id in was
        and (r.vulnerable, r.resisted) != (was[r.probe_id].vulnerable, was[r.probe_id].resisted)
    }
    if not moved or not (_own_score(current) and _own_score(baseline)):
        return delta
    swapped = [
        r.model_copy(
            update={
                "vulnerable": was[r.probe_id].vulnerable,
                "resisted": was[r.probe_id].resisted,
            }
        )
        if r.probe_id in moved
        else r
        for r in current.results
    ]
    evened = score(swapped).aivss
    if evened is None or current.aivss is None:
        return delta
    return delta - (current.aivss - evened)


def _own_score(report: ScanReport) -> bool:
    """The report's score is what this formula gives its results."""
    return score(report.results).aivss == report.aivss


def _score_reason(
    baseline: ScanReport, current: ScanReport, delta: int, beyond: int, tolerance: float
) -> str:
    if beyond == delta:
        moved = f"AIVSS dropped by {-delta} (from {baseline.aivss} to {current.aivss})"
    else:
        moved = (
            f"AIVSS went from {baseline.aivss} to {current.aivss} ({delta:+d}); with the "
            f"findings within noise counted as in the baseline it dropped by {-beyond}"
        )
    return f"{moved}, more than the tolerance {tolerance:g}"


def _score_noise_note(
    baseline: ScanReport, current: ScanReport, delta: int, beyond: int, tolerance: float
) -> str:
    evened = (
        f"dropped by {-beyond}, within the tolerance {tolerance:g}"
        if beyond < 0
        else ("did not drop")
    )
    return (
        f"AIVSS dropped by {-delta} (from {baseline.aivss} to {current.aivss}), but with the "
        f"findings within noise counted as in the baseline it {evened}: not a regression"
    )


def _suppression_notes(current: ScanReport) -> list[str]:
    """Suppressions that stopped doing what they were written for: expired, or matching no
    finding."""
    notes = []
    if current.expired_suppressions:
        notes.append(
            f"{len(current.expired_suppressions)} suppression(s) expired and count again: "
            + ", ".join(current.expired_suppressions)
        )
    if current.stale_suppressions:
        notes.append(
            f"{len(current.stale_suppressions)} stale suppression(s) match no finding: "
            + ", ".join(current.stale_suppressions)
        )
    return notes


def check_comparable(
    baseline: ScanReport, *, library_version: str, mode: str, allow_mismatch: bool
) -> list[str]:
    """How a scan of ``library_version`` in ``mode`` differs from ``baseline`` in what it
    measures; a :class:`UsageError` unless ``allow_mismatch``.

    ``scan --baseline`` asks before its first request, from the settings alone: a baseline it
    could not be compared with must not cost a whole scan first.
    """
    out = []
    if baseline.probe_library_version != library_version:
        out.append(
            f"probe library versions differ (baseline {baseline.probe_library_version}, "
            f"current {library_version})"
        )
    if baseline.mode != mode:
        out.append(f"modes differ (baseline {baseline.mode}, current {mode})")
    if out and not allow_mismatch:
        raise UsageError(
            f"cannot compare: {'; '.join(out)} (pass --allow-mismatch to compare the "
            "common probes only)"
        )
    return out


def _index(report: ScanReport, side: str, notes: list[str]) -> dict[str, FindingRef]:
    """Findings by fp. A duplicated fp (a bad merge, a hand-edited file) is kept once, the
    same one whatever the order, and noted, so the comparison stays order-independent."""
    by_fp: dict[str, FindingRef] = {}
    duplicated: set[str] = set()
    for finding in report.findings:
        ref = FindingRef(
            fp=finding.fp,
            id=finding.id,
            probe_id=finding.probe_id,
            name=finding.name,
            asi=finding.asi,
            severity=finding.severity,
            summary=finding.summary,
            suppressed=finding.suppressed is not None,
            suppression_reason=finding.suppressed.reason if finding.suppressed else None,
        )
        share_field_sets(ref)  # a set of field names per reference was half of a comparison
        kept = by_fp.get(finding.fp)
        if kept is None:
            by_fp[finding.fp] = ref
            continue
        duplicated.add(finding.fp)
        if _order_key(ref) < _order_key(kept):
            by_fp[finding.fp] = ref
    if duplicated:
        notes.append(
            f"the {side} report lists {len(duplicated)} fingerprint(s) more than once; "
            "each is compared once"
        )
    return by_fp


def _order_key(ref: FindingRef) -> tuple[int, str, str, str, str, bool]:
    return (
        -SEVERITY_RANK[ref.severity],
        ref.asi,
        ref.probe_id,
        ref.fp,
        ref.id + "\0" + ref.summary,
        ref.suppressed,
    )


def _sorted(refs: Iterable[FindingRef]) -> list[FindingRef]:
    """Most severe first, then by ASI and probe: the order a reviewer reads them in."""
    return sorted(refs, key=_order_key)


def _report_ref(report: ScanReport) -> ReportRef:
    return ReportRef(
        scan_id=report.scan_id,
        schema_=report.schema_,
        mode=report.mode,
        probe_library_version=report.probe_library_version,
        aivss=report.aivss,
        band=report.band,
        created_at=report.created_at,
    )


def _asi_deltas(baseline: ScanReport, current: ScanReport) -> list[AsiDelta]:
    """All ten ASI categories on both sides, each with its state (docs/scoring.md)."""
    out = []
    for asi in ASI_IDS:
        was, now = category_of(baseline, asi), category_of(current, asi)
        before, after = baseline.asi_scores.get(asi), current.asi_scores.get(asi)
        delta = round(after - before, 2) if before is not None and after is not None else None
        out.append(
            AsiDelta(
                asi=asi,
                baseline=before,
                current=after,
                delta=delta,
                baseline_state=was.state,
                current_state=now.state,
                baseline_unjudged=was.unjudged,
                current_unjudged=now.unjudged,
            )
        )
    return out


# --------------------------------------------------------------------------- refreshing


def write_baseline(current: Path, destination: Path) -> None:
    """Make ``current`` the new baseline: its exact bytes, so signatures stay verifiable.

    Written atomically, so an interrupted refresh never leaves a torn baseline that would fail
    (or, worse, pass) the next comparison.
    """
    data = read_bytes(current, what="report", error=ReportError, max_bytes=MAX_REPORT_BYTES)
    write_atomic(destination, data, error=ReportError)
