"""The one reader of stored scan reports: a file a scan wrote, parsed back into a ScanReport.

Reports are untrusted input (a baseline may come from anywhere), so every command that reads
one (``report``, ``verify``, ``compare``, ``merge``, ``scan --baseline``), the engine's shard
merge and the GitHub Action read it here, the same strict way, into a validated model or one
:class:`~probegate.errors.ReportError` line naming the file (exit 2):

- the bytes must be UTF-8 JSON holding one object, with no key twice in any object (parsers
  disagree on which copy wins, so a file could show one score to a dashboard and another to the
  verifier: docs/signing.md), no ``NaN``/``Infinity`` and no number too large for a float
  (``1e999``), nested at most :data:`MAX_DEPTH` deep (what probegate itself can write), and
  text only: no ``\\ud800`` escape without its other half (a lone surrogate is no character;
  no encoder can write it back, so every format would fail on it);
- ``probegate-scan-v1`` is validated as it is, once a report of an earlier probegate is
  upgraded to what this version writes (:func:`_upgrade`: the one place that knows a report's
  age); one written before a field this reader cannot work out (the controls and the surface
  the scan saw) is refused with one line saying so;
- an ``agentguardian-scan-v1`` report (the field set probegate's report extends) is mapped
  onto it where the fields allow, recording what could not be mapped in
  ``report.import_notes`` (docs/gating.md).

Signatures are not checked here: ``probegate verify`` does that on :func:`load_report_json`'s
plain data, the exact object that was signed. A stored comparison (``compare --output json``,
which the Action reads back) goes through the same strict JSON reader: :func:`load_comparison`.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from probegate.canonical import canonical_bytes
from probegate.errors import ReportError
from probegate.files import MAX_REPORT_BYTES, open_bounded, read_bytes
from probegate.models.causes import Cause
from probegate.models.comparison import COMPARISON_SCHEMA, Comparison
from probegate.models.report import (
    SCHEMA,
    Budget,
    Completeness,
    Engine,
    Finding,
    ProbeResult,
    ScanReport,
    finding_fp,
)
from probegate.models.report_json import MAX_DEPTH as MAX_DEPTH  # what refusals name
from probegate.models.report_json import (
    StrictObjects,
    finite,
    no_constant,
    read_in_one_pass,
)
from probegate.models.taxonomy import ASI_IDS
from probegate.perf import gc_paused, share_field_sets
from probegate.validation import describe

UPSTREAM_SCHEMA = "agentguardian-scan-v1"
SCHEMAS = (SCHEMA, UPSTREAM_SCHEMA)

# The aivss_severity an upstream report does not carry: the midpoint of each CVSS-style band, so a
# mapped finding sorts and renders like a native one of the same severity.
_UPSTREAM_AIVSS_SEVERITY: dict[str, float] = {
    "critical": 9.5,
    "high": 8.0,
    "medium": 5.5,
    "low": 2.0,
}


# --------------------------------------------------------------------------- reading


def load_report(path: Path, *, transcripts: bool = True, evidence: bool = True) -> ScanReport:
    """Read and validate a stored report (either schema), or raise one :class:`ReportError`.

    A probegate report is read in one pass, a piece of the file at a time; whatever that pass
    does not read to the end (a refusal, another schema) is read whole, which says what is
    wrong or maps the report (:func:`parse_report`). With ``transcripts=False`` every
    transcript is read and validated as strictly, then let go (a finding's and its control's
    ``transcript`` is None), and with ``evidence=False`` every finding's and control's
    evidence too (an empty list): for a reader that shows neither, such as ``compare``, which
    holds two reports and compares their findings by fingerprint and counts.
    """
    with gc_paused(keeps=True):  # the report lives on, and reading it makes no cycle
        what = {"what": "report file", "error": ReportError, "max_bytes": MAX_REPORT_BYTES}
        with open_bounded(path, **what) as read:  # type: ignore[arg-type]
            report = _one_pass(read, transcripts, evidence)
        if report is not None:
            return report
        raw = _read(path)
        return parse_report(raw, source=str(path), transcripts=transcripts, evidence=evidence)


def parse_report(
    raw: bytes, *, source: str, transcripts: bool = True, evidence: bool = True
) -> ScanReport:
    """:func:`load_report` for bytes already in memory; ``source`` names them in errors.

    One collector pause over parsing and validation: the parsed data (a million objects for a
    10,000-finding report, read whole) is dropped before the collector resumes, so it never
    scans them; resumed in between, it scanned them up to three times over (first young, then
    old).
    """
    with gc_paused():
        report = _one_pass(io.BytesIO(raw).read, transcripts, evidence)
        if report is not None:
            return report
        report = report_from_data(parse_report_json(raw, source), source=source)
        if transcripts and evidence:
            return report
        findings = [_lean(f, transcripts, evidence) for f in report.findings]
        return report.model_copy(update={"findings": findings})


def _one_pass(read: Callable[[int], bytes], transcripts: bool, evidence: bool) -> ScanReport | None:
    """The report read in one pass (models/report_json.py), or None: it must be read whole.

    Returns only what reading it whole returns: the same checks pass, the same upgrade is made
    (it never touches the lists read item by item), the same models are validated. A report
    without categories fails validation here and is read whole: its categories are worked out
    from its raw results and findings (:func:`_categories`).
    """
    # pydantic's own validators: ``model_validate``'s Python wrapper costs 20,000 calls.
    whole = Finding.__pydantic_validator__.validate_python

    def lean(data: Any) -> Finding:  # validated whole, then the parts not kept let go
        return _lean(whole(data), transcripts, evidence)

    items = {
        "findings": whole if transcripts and evidence else lean,
        "results": ProbeResult.__pydantic_validator__.validate_python,
    }
    data = read_in_one_pass(read, items)
    if data is None or data.get("schema") != SCHEMA or _upgrade(data):
        return None  # the whole read maps it, or refuses a report too old to read
    try:
        report = ScanReport.model_validate(data)
    except ValidationError:
        return None
    share_field_sets(report, skip=items)
    return report


def _lean(finding: Finding, transcripts: bool, evidence: bool) -> Finding:
    """``finding`` without its (and its control's) transcript or evidence, as asked."""
    update: dict[str, Any] = {}
    if not transcripts:
        update["transcript"] = None
    if not evidence:
        update["evidence"] = []
    if finding.control is not None:
        update["control"] = finding.control.model_copy(update=update)
    return finding.model_copy(update=update)


def load_report_json(path: Path) -> dict[str, Any]:
    """The report file as plain JSON data, strictly parsed but not validated (``verify``)."""
    return parse_report_json(_read(path), str(path))


def parse_report_json(raw: bytes, source: str = "report") -> dict[str, Any]:
    """Strict JSON: UTF-8, one object, no duplicate key, finite numbers, bounded nesting."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ReportError(f"{source}: not a UTF-8 JSON report") from None
    # A 10,000-finding report is a million objects for the collector: it would rescan them all.
    with gc_paused():
        try:
            data = json.loads(
                text,
                object_pairs_hook=StrictObjects().read,
                parse_float=finite,
                parse_constant=no_constant,
            )
        except json.JSONDecodeError as exc:
            raise ReportError(
                f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from None
        except ValueError as exc:  # the hooks' refusals, and integers too long to read
            raise ReportError(f"{source}: invalid JSON: {exc}") from None
        except RecursionError:
            raise ReportError(
                f"{source}: invalid JSON: nested more than {MAX_DEPTH} deep"
            ) from None
        if not isinstance(data, dict):
            raise ReportError(f"{source}: expected a JSON object, got {type(data).__name__}")
    if "\\ud" in text or "\\uD" in text:  # a surrogate escape: fine in a pair, not alone
        try:
            canonical_bytes(data)
        except UnicodeEncodeError:
            raise ReportError(
                f"{source}: invalid JSON: a \\u escape is half of a surrogate pair, not text"
            ) from None
    return data


def report_from_data(data: dict[str, Any], *, source: str) -> ScanReport:
    """Validate parsed report data of either schema into a :class:`ScanReport`."""
    schema = data.get("schema")
    unworkable: list[str] = []
    if schema == SCHEMA:
        notes: list[str] = []
        unworkable = _upgrade(data)
    elif schema == UPSTREAM_SCHEMA:
        data, notes = _map_upstream_report(data, source=source)
    else:
        raise ReportError(
            f"{source}: unsupported report schema {schema!r} "
            f"(expected {SCHEMA!r} or {UPSTREAM_SCHEMA!r})"
        )
    try:
        with gc_paused():
            report = ScanReport.model_validate(data)
    except ValidationError as exc:
        if unworkable and _only_missing(exc, unworkable):
            raise _too_old(data, unworkable, source) from None
        raise ReportError(f"{source}: invalid report: {describe(exc, top='report')}") from None
    if unworkable:
        raise _too_old(data, unworkable, source)
    if notes:
        report = report.model_copy(update={"import_notes": notes})
    return report


def load_comparison(path: Path) -> Comparison:
    """A stored comparison (``probegate compare --output json``), read as strictly as a report."""
    source = str(path)
    raw = read_bytes(path, what="comparison file", error=ReportError, max_bytes=MAX_REPORT_BYTES)
    data = parse_report_json(raw, source)
    if data.get("schema") != COMPARISON_SCHEMA:
        raise ReportError(
            f"{source}: unsupported comparison schema {data.get('schema')!r} "
            f"(expected {COMPARISON_SCHEMA!r})"
        )
    try:
        return Comparison.model_validate(data)
    except ValidationError as exc:
        raise ReportError(
            f"{source}: invalid comparison: {describe(exc, top='comparison')}"
        ) from None


def _read(path: Path) -> bytes:
    return read_bytes(path, what="report file", error=ReportError, max_bytes=MAX_REPORT_BYTES)


# ------------------------------------------------------- upstream (agentguardian-scan-v1) reports


def _map_upstream_report(data: dict[str, Any], *, source: str) -> tuple[dict[str, Any], list[str]]:
    """Map an ``agentguardian-scan-v1`` report onto probegate's fields, with a note per guess.

    Its fields keep their meaning (probegate's report is a superset of its field list); only
    probegate's additions are missing, and each one that has to be invented is named in a note
    so a comparison can say what it could not match.
    """
    notes = [f"{source} is an {UPSTREAM_SCHEMA} report, mapped onto {SCHEMA}"]
    out = dict(data)
    for key in ("findings", "aivss", "mode"):
        if key not in out:
            raise ReportError(f"{source}: {UPSTREAM_SCHEMA} report has no {key!r} field")
    if not isinstance(out["findings"], list):
        raise ReportError(f"{source}: 'findings' must be a list")

    notes += _drop_foreign_fields(out)
    notes += _default_missing_fields(out)
    target = out["target"]
    if isinstance(target, dict) and "definition" not in target:
        out["target"] = {**target, "definition": {"path": "probegate.yml", "line": 1}}
    if isinstance(target, dict) and not set(_SURFACE) <= set(target):
        notes.append(
            f"the agent's surface is not in {UPSTREAM_SCHEMA} (secrets declared or planted, "
            "probegate's sandbox): read as none declared and none planted"
        )
    for key, model in _UPSTREAM_SUBOBJECTS.items():
        # Its sub-objects are subsets of ours; anything extra in them is dropped, not fatal.
        value = out.get(key)
        if isinstance(value, dict):
            out[key] = {k: v for k, v in value.items() if k in model.model_fields}

    findings, results, converted = _map_upstream_findings(out["findings"], source=source)
    out["findings"] = findings
    out["results"] = results
    out.setdefault("unjudged", [])
    out.setdefault("not_applicable", [])
    out.setdefault("seed", 0)
    out["authority"] = _upstream_authority(out)
    categories = _categories(out)
    if categories is not None:
        out["categories"] = categories
    if converted:
        notes.append(
            f"{converted} {UPSTREAM_SCHEMA} finding(s) with success=false were read as resisted "
            "probes, not findings"
        )
    notes.append(
        "the report has no per-probe results: only probes listed in its findings are known "
        "to have run, so other probes cannot be matched against it"
    )
    notes.append(
        "its categories were derived from its asi_scores, undertested list and findings "
        "(it counts no unjudged attempt)"
    )
    notes.append(
        "finding fingerprints were derived from probe_id where absent; "
        f"finding evidence, channel, OWASP LLM ids and remediation are not in {UPSTREAM_SCHEMA}"
    )
    return out, notes


_UPSTREAM_SUBOBJECTS: dict[str, type[BaseModel]] = {
    "engine": Engine,
    "budget": Budget,
    "completeness": Completeness,
}

_UPSTREAM_FINDING_KEYS = {
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


# What probegate's report has that an upstream one may lack, and what it is read as.
_UPSTREAM_DEFAULTS: dict[str, Any] = {
    "aivss_formula_version": "unknown",
    "asi_scores": {},
    "band": "not_evaluated",
    # An upstream scan checks no verdict against a control.
    "controls": {"enabled": False},
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


def _drop_foreign_fields(out: dict[str, Any]) -> list[str]:
    """Drop the signatures (they cover the original file) and fields probegate has no
    equivalent of; a note for each kind dropped."""
    notes = []
    if out.pop("signatures", None) is not None:
        # They sign the file as it is, not this mapping: carried over, they could only fail.
        notes.append("its signatures cover the original file (check them with probegate verify)")
    dropped = sorted(k for k in out if k not in ScanReport.model_fields and k != "schema")
    for key in dropped:
        del out[key]
    if dropped:
        notes.append(f"fields with no probegate equivalent were ignored: {', '.join(dropped)}")
    return notes


def _default_missing_fields(out: dict[str, Any]) -> list[str]:
    missing = sorted(k for k in _UPSTREAM_DEFAULTS if k not in out)
    for key in missing:
        out[key] = _UPSTREAM_DEFAULTS[key]
    if not missing:
        return []
    return [
        f"{UPSTREAM_SCHEMA} fields missing from the report were defaulted: {', '.join(missing)}"
    ]


def _map_upstream_findings(
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
        # An upstream report may list one probe several times; its result is vulnerable if any
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
        finding = {k: v for k, v in item.items() if k in _UPSTREAM_FINDING_KEYS}
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
            aivss_severity=_UPSTREAM_AIVSS_SEVERITY.get(severity, 0.0),
            remediation="",
            location={"path": "probegate.yml", "line": 1},
        )
        findings.append(finding)
    return findings, sorted(results.values(), key=lambda r: str(r["probe_id"])), converted


def _upstream_authority(data: dict[str, Any]) -> dict[str, Any]:
    """Authority from the upstream report's own flags: the same conditions as docs/scoring.md."""
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


def _categories(data: dict[str, Any]) -> dict[str, Any] | None:
    """All ten categories as a report's own scores, undertested list, results and findings say
    them, for a report written without them (an earlier probegate, or agentguardian-scan-v1):
    a score where it has one, else undertested where it says so, else not applicable where it
    ran probes of the category, else not selected. A category's missing evidence is what the
    scoring counts (scoring.py, missing_evidence); a report that counts none has none. None
    when the results or findings are malformed: validation then names what is wrong."""
    results, findings = data.get("results"), data.get("findings")
    if not isinstance(results, list) or not isinstance(findings, list):
        return None
    if not all(isinstance(item, dict) for item in results + findings):
        return None
    scores = data.get("asi_scores")
    scores = scores if isinstance(scores, dict) else {}
    undertested = data.get("undertested")
    undertested = undertested if isinstance(undertested, list) else []
    probes = Counter(r.get("asi") for r in results)
    found = Counter(f.get("asi") for f in findings)
    missing: Counter[Any] = Counter()
    for r in results:
        if r.get("outcome") not in ("not_applicable", "not_run"):
            counts = [r.get(k, 0) for k in ("unjudged", "not_delivered", "not_started")]
            if all(isinstance(n, int) for n in counts):
                missing[r.get("asi")] += counts[0] - counts[1] + counts[2]
    out: dict[str, Any] = {}
    for asi in ASI_IDS:
        state: dict[str, Any]
        if asi in scores:
            state = {"state": "tested", "score": scores[asi], "value": scores[asi]}
        elif asi in undertested:
            state = {"state": "undertested", "reason": "too few of its probes could be judged"}
        elif probes[asi]:
            state = {
                "state": "not_applicable",
                "reason": "none of its probes applies to this target",
            }
        else:
            state = {"state": "not_selected", "reason": "not in this scan's selection"}
        out[asi] = {
            **state,
            "probes": probes[asi],
            "unjudged": missing[asi],
            "findings": found[asi],
        }
    return out


# ------------------------------------------------- probegate reports older than a field

# What a report says of the agent's surface (models/report.py TargetInfo): seen by the scan.
_SURFACE = ("declared_secrets", "planted_secrets", "uses_sandbox")


def _upgrade(data: dict[str, Any]) -> list[str]:
    """A report of an earlier probegate, in place, as this version writes it: the one place
    that knows a report's age (nothing downstream branches on it). Returns the fields it lacks
    that cannot be worked out from it, which are never guessed: the report is refused."""
    _upgrade_causes(data)
    _upgrade_mcp(data)
    if "categories" not in data:
        categories = _categories(data)
        if categories is not None:
            data["categories"] = categories
    return _unworkable(data)


def _unworkable(data: dict[str, Any]) -> list[str]:
    """The fields of a report written before them that this reader cannot fill in: its
    controls and its surface (what the scan saw; a guess would be a claim about the agent).
    probegate was not released before it wrote them, so only a development build's report
    lacks one."""
    missing = ["controls"] if "controls" not in data else []
    target = data.get("target")
    if isinstance(target, dict):
        missing += [f"target.{key}" for key in _SURFACE if key not in target]
    return missing


def _only_missing(exc: ValidationError, unworkable: list[str]) -> bool:
    """The report is invalid only for lacking the fields an earlier probegate did not write."""
    return all(e["type"] == "missing" and str(e["loc"][0]) in unworkable for e in exc.errors())


def _too_old(data: dict[str, Any], unworkable: list[str], source: str) -> ReportError:
    version = data.get("package_version")
    return ReportError(
        f"{source}: a report of an earlier probegate ({version!r}) without "
        f"{', '.join(unworkable)}, which this version cannot work out from it; scan again to "
        "read the result with this version"
    )


def _upgrade_mcp(data: dict[str, Any]) -> None:
    """The MCP section before traffic without a token was counted apart: none was."""
    mcp = data.get("mcp")
    if isinstance(mcp, dict) and "unauthenticated" not in mcp:
        mcp["unauthenticated"] = {}


def _upgrade_causes(data: dict[str, Any]) -> None:
    """Give each unjudged attempt of a report written before causes existed the cause its
    reason's words name: the one place a cause is read back from words (models/causes.py)."""
    items = data.get("unjudged")
    if not isinstance(items, list):
        return
    for item in items:
        if isinstance(item, dict) and "cause" not in item and isinstance(item.get("reason"), str):
            item["cause"] = legacy_cause(item["reason"]).value


def _has(*needles: str) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(n) for n in needles), re.IGNORECASE)


def _http(codes: str) -> re.Pattern[str]:
    return re.compile(rf"\bHTTP (?:{codes})\b")


# How the reasons of earlier versions said each cause, in the order they were tried: the
# specific before the general, first match wins.
_LEGACY_WORDS: tuple[tuple[Cause, re.Pattern[str]], ...] = (
    (Cause.CONTROL, _has("its control ")),
    (Cause.AMBIGUOUS, re.compile(r"^needs a judge:")),
    (Cause.NEEDS_JUDGE, _has("needs an LLM judge", "needs a judge")),
    (Cause.NOT_DELIVERED, _has("not delivered:")),
    (Cause.NOTHING_TO_LEAK, _has("nothing to leak")),
    (Cause.TOOL_CALLS_HIDDEN, _has("does not expose its tool calls")),
    (Cause.INTERRUPTED, _has("scan stopped (cancelled)")),
    (Cause.STOPPED, _has("scan stopped (")),
    (Cause.BUDGET, _has("budget of", "exhausted", "cut short")),
    (Cause.DNS, _has("cannot resolve host")),
    (Cause.REFUSED, _has("connection refused")),
    (Cause.AUTH, _http("401|403|407")),
    (Cause.RATE_LIMITED, _http("429")),
    (Cause.SERVER_ERROR, _http(r"5\d\d")),
    (Cause.CLIENT_ERROR, _http(r"4\d\d")),
    (Cause.TIMEOUT, _has("timeout", "timed out", "did not answer within")),
    (Cause.DROPPED, _has("connection dropped")),
    (
        Cause.UNREADABLE,
        _has("unreadable reply", "not a chat completion", "reply is", "reply has no", "not json"),
    ),
    (Cause.AGENT_ERROR, _has("agent raised", "constructor raised", "returned none")),
    (Cause.GUARD, _has("guard")),
    (Cause.RECORDING, _has("recording")),
)


def legacy_cause(reason: str) -> Cause:
    """The cause an earlier version's ``reason`` names (``Cause.OTHER`` when none does)."""
    return next((cause for cause, words in _LEGACY_WORDS if words.search(reason)), Cause.OTHER)
