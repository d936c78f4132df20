"""Reading a stored scan report: the file a scan wrote, parsed back into a :class:`ScanReport`.

Reports are untrusted input (a baseline may come from anywhere), parsed once at the edge into
a validated model or one :class:`~probegate.errors.ReportError` line naming the file (exit 2).
:func:`load_report` reads ``probegate-scan-v1`` and maps an older ``agentguardian-scan-v1``
report onto it where the fields allow, recording what could not be mapped in
``report.import_notes`` (docs/gating.md). :func:`load_report_json` is the strict JSON reader
the signature checks need: no duplicate keys, no NaN (docs/signing.md).

Every command that reads a stored report (``compare``, ``merge``, ``report``, ``verify``,
``scan --baseline``) and the engine's shard merge read it through this module, which sits
below all of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from probegate.errors import ReportError
from probegate.models.report import SCHEMA, Budget, Completeness, Engine, ScanReport, finding_fp
from probegate.perf import gc_paused

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
    """Authority from the seed's own flags: the same conditions as docs/scoring.md."""
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


# --------------------------------------------------------------------------- strict JSON


def load_report_json(path: Path) -> dict[str, Any]:
    """Parse a report file strictly: valid UTF-8 JSON, an object, no duplicate keys, no NaN.

    Duplicate keys matter for signatures: parsers disagree on which copy wins, so a file with
    ``"aivss": 99`` before the signed ``"aivss": 42`` could show one number to a dashboard and
    another to the verifier.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ReportError(f"cannot read {path}: {exc.strerror}") from exc
    return parse_report_json(raw, str(path))


def parse_report_json(raw: bytes, source: str = "report") -> dict[str, Any]:
    """:func:`load_report_json` for bytes already in memory."""
    try:
        data = json.loads(
            raw.decode("utf-8"),
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constants,
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise ReportError(f"{source} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ReportError(f"{source} is not a JSON object")
    return data


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in a report")
