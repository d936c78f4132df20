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
Per-ASI deltas are reported, not gated: the contract (PRODUCT.md section 8) gates the score.

Reports are untrusted input, parsed once at the edge by :func:`load_report` into a validated
:class:`ScanReport`; a seed-000 ``agentguardian-scan-v1`` report is mapped onto it where the
fields allow, and what could not be mapped is recorded in ``report.import_notes``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from probegate.errors import ReportError, UsageError
from probegate.models.report import SCHEMA, Budget, Completeness, Engine, ScanReport, finding_fp
from probegate.models.taxonomy import SEVERITY_RANK, Severity
from probegate.perf import gc_paused

COMPARISON_SCHEMA = "probegate-compare-v1"
SEED_SCHEMA = "agentguardian-scan-v1"

# The aivss_severity a seed report does not carry: the midpoint of each CVSS-style band, so a
# mapped finding sorts and renders like a native one of the same severity.
_SEED_AIVSS_SEVERITY: dict[str, float] = {
    "critical": 9.5,
    "high": 8.0,
    "medium": 5.5,
    "low": 2.0,
}


# --------------------------------------------------------------------------- loading


def load_report(path: Path) -> ScanReport:
    """Read a scan report: ``probegate-scan-v1``, or seed-000 ``agentguardian-scan-v1``.

    Any problem (missing file, bad JSON, unknown schema, invalid fields) is one
    :class:`~probegate.errors.ReportError` line naming the file, exit 2. Signatures are not
    verified here; ``probegate verify`` does that, and a baseline whose origin matters should
    be verified before it is trusted.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise ReportError(f"{path}: report file not found") from exc
    except OSError as exc:
        raise ReportError(f"{path}: cannot read report: {exc.strerror or exc}") from exc
    return parse_report(raw, source=str(path))


def parse_report(raw: bytes, *, source: str) -> ScanReport:
    """Validate report bytes; ``source`` names the report in error messages."""
    try:
        # Fast path: pydantic-core parses and validates our own schema in one native pass,
        # several times faster than json.loads + model_validate on a 10,000-finding report.
        with gc_paused():
            fast = ScanReport.model_validate_json(raw)
        if fast.schema_ == SCHEMA:
            return fast
    except ValidationError:
        pass  # the slow path below names the problem, or maps a seed-000 report
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ReportError(f"{source}: not a UTF-8 JSON report") from exc
    except json.JSONDecodeError as exc:
        raise ReportError(
            f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    if not isinstance(data, dict):
        raise ReportError(f"{source}: expected a JSON object, got {type(data).__name__}")
    schema = data.get("schema")
    if schema == SCHEMA:
        notes: list[str] = []
    elif schema == SEED_SCHEMA:
        data, notes = _map_seed_report(data, source=source)
    else:
        raise ReportError(
            f"{source}: unsupported report schema {schema!r} "
            f"(expected {SCHEMA!r} or {SEED_SCHEMA!r})"
        )
    try:
        report = ScanReport.model_validate(data)
    except ValidationError as exc:
        raise ReportError(f"{source}: invalid report: {_first_problem(exc)}") from exc
    if notes:
        report = report.model_copy(update={"import_notes": notes})
    return report


def _first_problem(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    loc = ""
    for part in first["loc"]:
        loc += f"[{part}]" if isinstance(part, int) else (f".{part}" if loc else str(part))
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return f"{loc or 'report'}: {first['msg']}{more}"


def _map_seed_report(data: dict[str, Any], *, source: str) -> tuple[dict[str, Any], list[str]]:
    """Map a seed-000 report onto probegate's fields; return it with notes on every guess.

    Seed fields keep their meaning (our report is a superset of the seed field list); only our
    additions are missing, and each one that has to be invented is named in a note so the
    comparison can say what it could not match.
    """
    notes = [f"{source} is an {SEED_SCHEMA} report, mapped onto {SCHEMA}"]
    out = dict(data)
    for key in ("findings", "aivss", "mode"):
        if key not in out:
            raise ReportError(f"{source}: {SEED_SCHEMA} report has no {key!r} field")
    if not isinstance(out["findings"], list):
        raise ReportError(f"{source}: 'findings' must be a list")

    dropped = sorted(k for k in out if k not in ScanReport.model_fields and k != "schema")
    for key in dropped:
        del out[key]
    if dropped:
        notes.append(f"fields with no probegate equivalent were ignored: {', '.join(dropped)}")

    defaults: dict[str, Any] = {
        "aivss_formula_version": "unknown",
        "asi_scores": {},
        "band": "not_evaluated",
        "coverage": {},
        "coverage_grade": "F",
        "created_at": "",
        "duration_seconds": 0.0,
        "engine": {},
        "evaluation_mode": "stub",
        "findings_summary": {},
        "mode_authoritative": False,
        "package_version": "unknown",
        "probe_library_version": "unknown",
        "scan_id": "unknown",
        "scoring_valid": False,
        "stopped_reason": "completed",
        "sub_scores": {},
        "target": {"mode": "unknown", "ref": "unknown"},
        "tier": "",
        "tokens_total": 0,
        "undertested": [],
    }
    missing = sorted(k for k in defaults if k not in out)
    for key in missing:
        out[key] = defaults[key]
    if missing:
        notes.append(f"seed fields missing from the report were defaulted: {', '.join(missing)}")

    target = out["target"]
    if isinstance(target, dict) and "definition" not in target:
        out["target"] = {**target, "definition": {"path": "probegate.yml", "line": 1}}
    for key, model in _SEED_SUBOBJECTS.items():
        # Seed sub-objects are subsets of ours; anything extra in them is dropped, not fatal.
        value = out.get(key)
        if isinstance(value, dict):
            out[key] = {k: v for k, v in value.items() if k in model.model_fields}

    findings, results, converted = _map_seed_findings(out["findings"], source=source)
    out["findings"] = findings
    out["results"] = results
    out.setdefault("unjudged", [])
    out.setdefault("not_applicable", [])
    out.setdefault("seed", 0)
    out["authority"] = _seed_authority(out)
    if converted:
        notes.append(
            f"{converted} seed finding(s) with success=false were read as resisted probes, "
            "not findings"
        )
    notes.append(
        "the report has no per-probe results: only probes listed in its findings are known "
        "to have run, so other probes cannot be matched against it"
    )
    notes.append(
        "finding fingerprints were derived from probe_id where absent; "
        "finding evidence, channel, OWASP LLM ids and remediation are not in the seed shape"
    )
    return out, notes


_SEED_SUBOBJECTS: dict[str, type[BaseModel]] = {
    "engine": Engine,
    "budget": Budget,
    "completeness": Completeness,
}

_SEED_FINDING_KEYS = {
    "id",
    "probe_id",
    "asi",
    "mitre_atlas",
    "csa_category",
    "severity",
    "attempt_count",
    "success",
    "confidence",
    "summary",
    "transcript_ref",
    "trigger_prompt",
    "pov_reference",
    "pov_reliability",
    "created_at",
    "fp",
}


def _map_seed_findings(
    raw: list[Any], *, source: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    findings: list[dict[str, Any]] = []
    results: dict[str, dict[str, Any]] = {}
    converted = 0
    for index, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("probe_id"), str):
            raise ReportError(f"{source}: findings[{index}] has no probe_id")
        probe_id: str = item["probe_id"]
        severity = str(item.get("severity", "")).lower()
        asi = str(item.get("asi", ""))
        succeeded = bool(item.get("success", True))
        # A seed report may list one probe several times; its result is vulnerable if any
        # listed attempt succeeded.
        result = results.setdefault(
            probe_id,
            {
                "probe_id": probe_id,
                "name": probe_id,
                "asi": asi,
                "severity": severity,
                "channel": "unknown",
                "outcome": "resisted",
                "attempts": 0,
                "vulnerable": 0,
                "resisted": 0,
            },
        )
        result["attempts"] += 1
        result["vulnerable" if succeeded else "resisted"] += 1
        if not succeeded:
            converted += 1
            continue
        result["outcome"] = "vulnerable"
        finding = {k: v for k, v in item.items() if k in _SEED_FINDING_KEYS}
        finding.setdefault("fp", finding_fp(probe_id))
        finding.setdefault("id", f"F-{finding['fp'][:12]}")
        finding.setdefault("mitre_atlas", [])
        finding.setdefault("csa_category", "")
        finding.setdefault("attempt_count", 1)
        finding.setdefault("success", True)
        finding.setdefault("confidence", 0.0)
        finding.setdefault("summary", "")
        finding.setdefault("created_at", "")
        finding["severity"] = severity
        finding.update(
            name=probe_id,
            owasp_llm=[],
            channel="unknown",
            successes=1,
            aivss_severity=_SEED_AIVSS_SEVERITY.get(severity, 0.0),
            remediation="",
            location={"path": "probegate.yml", "line": 1},
        )
        findings.append(finding)
    return findings, sorted(results.values(), key=lambda r: str(r["probe_id"])), converted


def _seed_authority(data: dict[str, Any]) -> dict[str, Any]:
    """Authority from the seed's own flags: the same conditions as PRODUCT.md section 5."""
    failed: list[str] = []
    reasons: list[str] = []
    if data.get("mode") != "full" or not data.get("mode_authoritative"):
        failed.append("mode_authoritative")
        reasons.append(f"mode is {data.get('mode')!r}, not an authoritative full scan")
    if not data.get("scoring_valid") or data.get("evaluation_mode") != "real":
        failed.append("scoring_valid")
        reasons.append(f"evaluation_mode is {data.get('evaluation_mode')!r} or scoring invalid")
    completeness = data.get("completeness")
    pct = completeness.get("pct") if isinstance(completeness, dict) else None
    if not isinstance(pct, int | float) or pct < 95.0:
        failed.append("completeness")
        reasons.append(f"completeness is {pct!r}, below 95%")
    if data.get("undertested"):
        failed.append("undertested")
        reasons.append(f"undertested: {', '.join(map(str, data['undertested']))}")
    return {"authoritative": not failed, "failed": failed, "reasons": reasons}


# --------------------------------------------------------------------------- comparing


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FindingRef(_Frozen):
    """What a comparison says about one finding; enough to render it without the report."""

    fp: str
    id: str
    probe_id: str
    name: str
    asi: str
    severity: Severity
    summary: str
    suppressed: bool = False
    suppression_reason: str | None = None


class ReportRef(_Frozen):
    """Which scan a side of the comparison is."""

    scan_id: str
    schema_: str = Field(alias="schema")
    mode: str
    probe_library_version: str
    aivss: int
    band: str
    created_at: str

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class AsiDelta(_Frozen):
    """One ASI category's score on both sides; ``None`` where a side did not score it."""

    asi: str
    baseline: float | None
    current: float | None
    delta: float | None


class Comparison(_Frozen):
    """The result of :func:`compare`: every bucket, the deltas, and whether it regressed."""

    schema_: str = Field(default=COMPARISON_SCHEMA, alias="schema")
    baseline: ReportRef
    current: ReportRef
    tolerance: float
    mismatch: list[str]
    common_probes_only: bool
    new: list[FindingRef]
    new_suppressed: list[FindingRef]
    fixed: list[FindingRef]
    persisting: list[FindingRef]
    unconfirmed: list[FindingRef]
    not_compared: list[FindingRef]
    aivss_delta: int
    score_gated: bool
    score_regression: bool
    asi_deltas: list[AsiDelta]
    regression: bool
    reasons: list[str]
    notes: list[str]

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``--output json``), field names as documented."""
        return self.model_dump(mode="json", by_alias=True)


def compare(
    baseline: ScanReport,
    current: ScanReport,
    *,
    tolerance: float = 0.0,
    allow_mismatch: bool = False,
) -> Comparison:
    """Compare ``current`` against ``baseline`` (PRODUCT.md section 8).

    Refuses (:class:`~probegate.errors.UsageError`) to compare scans of different probe-library
    versions or modes unless ``allow_mismatch``: their findings and scores measure different
    things. With ``allow_mismatch`` only probes present in both scans' results are compared,
    findings on the others are listed as ``not_compared``, and the score delta is shown but not
    gated, because the two scores cover different probe sets.

    Deterministic: every list is sorted, so the result does not depend on finding order.
    """
    if not math.isfinite(tolerance) or tolerance < 0:
        raise UsageError(f"--tolerance must be a number >= 0, got {tolerance}")
    mismatch = _mismatch(baseline, current)
    if mismatch and not allow_mismatch:
        raise UsageError(
            f"cannot compare: {'; '.join(mismatch)} (pass --allow-mismatch to compare the "
            "common probes only)"
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

    def in_scope(ref: FindingRef) -> bool:
        return common is None or ref.probe_id in common

    judged_resisted = {r.probe_id for r in current.results if r.outcome == "resisted"}
    new: list[FindingRef] = []
    new_suppressed: list[FindingRef] = []
    persisting: list[FindingRef] = []
    fixed: list[FindingRef] = []
    unconfirmed: list[FindingRef] = []
    not_compared: list[FindingRef] = []
    for fp, ref in cur_by_fp.items():
        if not in_scope(ref):
            not_compared.append(ref)
        elif fp in base_by_fp:
            persisting.append(ref)
        elif ref.suppressed:
            new_suppressed.append(ref)
        else:
            new.append(ref)
    for fp, ref in base_by_fp.items():
        if fp in cur_by_fp:
            continue
        if not in_scope(ref):
            not_compared.append(ref)
        elif ref.probe_id in judged_resisted:
            fixed.append(ref)
        else:
            unconfirmed.append(ref)

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

    aivss_delta = current.aivss - baseline.aivss
    score_gated = not mismatch
    if score_gated and "not_evaluated" in (baseline.band, current.band):
        score_gated = False
        notes.append("a scan has band not_evaluated: its score is not a measurement, not gated")
    score_regression = score_gated and -aivss_delta > tolerance

    reasons: list[str] = []
    if new:
        reasons.append(f"{len(new)} new finding(s) not in the baseline")
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
        new=_sorted(new),
        new_suppressed=_sorted(new_suppressed),
        fixed=_sorted(fixed),
        persisting=_sorted(persisting),
        unconfirmed=_sorted(unconfirmed),
        not_compared=_sorted(not_compared),
        aivss_delta=aivss_delta,
        score_gated=score_gated,
        score_regression=score_regression,
        asi_deltas=_asi_deltas(baseline.asi_scores, current.asi_scores),
        regression=bool(reasons),
        reasons=reasons,
        notes=notes,
    )


def _mismatch(baseline: ScanReport, current: ScanReport) -> list[str]:
    out = []
    if baseline.probe_library_version != current.probe_library_version:
        out.append(
            f"probe library versions differ (baseline {baseline.probe_library_version}, "
            f"current {current.probe_library_version})"
        )
    if baseline.mode != current.mode:
        out.append(f"modes differ (baseline {baseline.mode}, current {current.mode})")
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


def _asi_deltas(baseline: dict[str, float], current: dict[str, float]) -> list[AsiDelta]:
    out = []
    for asi in sorted(set(baseline) | set(current)):
        before, after = baseline.get(asi), current.get(asi)
        delta = round(after - before, 2) if before is not None and after is not None else None
        out.append(AsiDelta(asi=asi, baseline=before, current=after, delta=delta))
    return out


# --------------------------------------------------------------------------- refreshing


def write_baseline(current: Path, destination: Path) -> None:
    """Make ``current`` the new baseline: its exact bytes, so signatures stay verifiable.

    Written to a temporary file and renamed, so an interrupted refresh never leaves a torn
    baseline that would fail (or, worse, pass) the next comparison.
    """
    try:
        data = current.read_bytes()
    except OSError as exc:
        raise ReportError(f"{current}: cannot read report: {exc.strerror or exc}") from exc
    tmp = destination.with_name(destination.name + ".tmp")
    try:
        if destination.parent != Path():
            destination.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, destination)
    except OSError as exc:
        raise ReportError(f"{destination}: cannot write baseline: {exc.strerror or exc}") from exc
