"""Baselines: read a stored scan, compare two scans, refresh the baseline.

Findings are matched by ``fp``, which depends on the probe id alone
(:func:`probegate.models.report.finding_fp`), so "the same finding" means "the same probe
succeeded again", whatever the mode, seed or transcript. A comparison sorts every finding into
one bucket:

- ``new``: in the current scan, not in the baseline, not suppressed. A regression.
- ``new_suppressed``: new but accepted in the suppression file: listed, not a regression.
- ``persisting``: in both.
- ``fixed``: in the baseline, and the current scan judged its probe and saw it resisted.
- ``unconfirmed``: in the baseline, absent from the current scan, but the current scan did not
  judge its probe (not run, unjudged, not applicable). Unjudged is never counted as resisted,
  so these are not called fixed.
- ``not_compared``: only with ``allow_mismatch``: findings on probes that are not in both scans.

A regression is any ``new`` finding or an overall ``aivss`` drop larger than the tolerance.
Per-ASI deltas are reported, not gated: the score is what gates (docs/gating.md).

Reports are untrusted input, parsed once at the edge by
:func:`probegate.models.stored.load_report` into a validated :class:`ScanReport` before they
reach :func:`compare`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from probegate.errors import ReportError, UsageError
from probegate.files import MAX_REPORT_BYTES, read_bytes, write_atomic
from probegate.models.comparison import AsiDelta, Comparison, FindingRef, ReportRef
from probegate.models.report import ScanReport
from probegate.models.taxonomy import ASI_IDS, SEVERITY_RANK
from probegate.perf import share_field_sets
from probegate.scoring import category_of

# --------------------------------------------------------------------------- comparing


def compare(
    baseline: ScanReport,
    current: ScanReport,
    *,
    tolerance: float = 0.0,
    allow_mismatch: bool = False,
) -> Comparison:
    """Compare ``current`` against ``baseline`` (docs/gating.md).

    Refuses (:class:`~probegate.errors.UsageError`) to compare scans of different probe-library
    versions or modes unless ``allow_mismatch``: their findings and scores measure different
    things. With ``allow_mismatch`` only probes present in both scans' results are compared,
    findings on the others are listed as ``not_compared``, and the score delta is shown but not
    gated, because the two scores cover different probe sets.

    Deterministic: every list is sorted, so the result does not depend on finding order.
    """
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

    common: set[str] | None = None
    if mismatch:
        common = {r.probe_id for r in baseline.results} & {r.probe_id for r in current.results}
        notes.append(
            f"{'; '.join(mismatch)}: only the {len(common)} probe(s) present in both scans "
            "are compared, and the score delta is not gated"
        )
    buckets = _sort_findings(base_by_fp, cur_by_fp, current, common)
    notes += _suppression_notes(current)

    scored = current.aivss is not None and baseline.aivss is not None
    aivss_delta = (current.aivss or 0) - (baseline.aivss or 0) if scored else 0
    score_gated = not mismatch
    if score_gated and (not scored or "not_evaluated" in (baseline.band, current.band)):
        score_gated = False
        notes.append("a scan has band not_evaluated: its score is not a measurement, not gated")
    score_regression = score_gated and -aivss_delta > tolerance

    reasons: list[str] = []
    if buckets.new:
        reasons.append(f"{len(buckets.new)} new finding(s) not in the baseline")
    if score_regression:
        reasons.append(
            f"AIVSS dropped by {-aivss_delta} (from {baseline.aivss} to {current.aivss}), "
            f"more than the tolerance {tolerance:g}"
        )

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
        aivss_delta=aivss_delta,
        score_gated=score_gated,
        score_regression=score_regression,
        asi_deltas=_asi_deltas(baseline, current),
        regression=bool(reasons),
        reasons=reasons,
        notes=notes,
    )


@dataclass
class _Buckets:
    """The findings of a comparison, each in exactly one bucket (the module docstring says
    what each means)."""

    new: list[FindingRef] = field(default_factory=list)
    new_suppressed: list[FindingRef] = field(default_factory=list)
    persisting: list[FindingRef] = field(default_factory=list)
    fixed: list[FindingRef] = field(default_factory=list)
    unconfirmed: list[FindingRef] = field(default_factory=list)
    not_compared: list[FindingRef] = field(default_factory=list)


def _sort_findings(
    base_by_fp: dict[str, FindingRef],
    cur_by_fp: dict[str, FindingRef],
    current: ScanReport,
    common: set[str] | None,
) -> _Buckets:
    """Both scans' findings in their buckets; ``common``, when the scans differ in what they
    measure, is the probes both ran, and a finding on any other probe is not compared."""
    out = _Buckets()
    for fp, ref in cur_by_fp.items():
        if common is not None and ref.probe_id not in common:
            out.not_compared.append(ref)
        elif fp in base_by_fp:
            out.persisting.append(ref)
        elif ref.suppressed:
            out.new_suppressed.append(ref)
        else:
            out.new.append(ref)
    judged_resisted = {r.probe_id for r in current.results if r.outcome == "resisted"}
    for fp, ref in base_by_fp.items():
        if fp in cur_by_fp:
            continue
        if common is not None and ref.probe_id not in common:
            out.not_compared.append(ref)
        elif ref.probe_id in judged_resisted:
            out.fixed.append(ref)
        else:
            out.unconfirmed.append(ref)
    return out


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
