"""SARIF 2.1.0 for GitHub code scanning (PRODUCT.md section 7).

Built with ``sarif-om`` (the object model generated from the OASIS schema) and serialised by
:func:`to_json`, which writes each attribute under its schema name (``ruleId``, ``$schema``)
and leaves out what is unset or equal to the schema default (``rank: -1``, ``kind: "fail"``,
``language: "en-US"``...): that noise is what sarif-om's objects carry and what a naive
``attr.asdict`` would write. Levels are always written, because a missing result level would
fall back to the rule's level rather than mean "warning".

The document is validated against the bundled OASIS schema (draft-04) before it is returned;
an invalid one is a :class:`ReportError`, never a file GitHub rejects later. It is also shaped
by GitHub's ingestion rules (``shared/reference/github.md``), checked in tests with the SARIF
Multitool: every result has a repo-relative file location, rules carry descriptions, help,
``security-severity`` and at most ten tags, and ``primaryLocationLineHash`` comes from the
finding's ``fp`` so findings on one line of one file stay separate alerts.

Pure and deterministic: no clock, no file system beyond the bundled schema, sorted keys.
"""

from __future__ import annotations

import functools
import json
import re
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from importlib import resources
from typing import Any

import attr
import jsonschema
import jsonschema.protocols
import jsonschema.validators
import sarif_om as om

from probegate.canonical import canonical_bytes
from probegate.errors import ReportError
from probegate.models.report import Finding, ScanReport
from probegate.models.taxonomy import (
    ASI_TITLES,
    CSA_TITLES,
    OWASP_LLM_TITLES,
    SEVERITY_RANK,
    Severity,
)
from probegate.perf import gc_paused
from probegate.reports.escape import (
    clean_text,
    md_code,
    md_text,
    sarif_text,
    truncate,
)

TOOL_NAME = "probegate"  # GitHub keys alerts on it: never change it.
SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
FINGERPRINT_KEY = "probegateFindingFp/v1"

DESCRIPTION_MAX = 1024  # GitHub's limit for short and full descriptions
MESSAGE_MAX = 4000
MAX_TAGS = 10  # GitHub's recommendation (20 is the hard cap)
MAX_RESULTS = 25_000  # GitHub's per-run limit for results and for rules
REFERENCE_VALIDATION_MAX = 1_000  # results + rules validated by jsonschema itself

# SARIF taxonomies (name, organization, version, {id: title}); rules point into them by
# index. MITRE ATLAS is a tag only: its names live in the probe library's data, not here.
TAXONOMIES: tuple[tuple[str, str, str, dict[str, str]], ...] = (
    ("OWASP Top 10 for Agentic Applications", "OWASP", "2026", ASI_TITLES),
    ("OWASP Top 10 for LLM Applications", "OWASP", "2025", OWASP_LLM_TITLES),
    ("CSA Agentic AI Red Teaming Guide", "Cloud Security Alliance", "2025", CSA_TITLES),
)
_TAXON_INDEX: dict[tuple[int, str], int] = {
    (t, taxon): i for t, entry in enumerate(TAXONOMIES) for i, taxon in enumerate(entry[3])
}

LEVELS: dict[Severity, str] = {
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "note",
}

# Attributes written even when equal to the schema default (see the module docstring).
_ALWAYS_WRITE = frozenset({"level"})


# --- serialisation ----------------------------------------------------------------------------


@functools.cache
def _fields(cls: type) -> dict[str, tuple[str, Any]]:
    """attribute -> (schema name, default) of a sarif-om class, computed once per class."""
    out: dict[str, tuple[str, Any]] = {}
    for f in attr.fields(cls):
        default = f.default
        if isinstance(default, attr.Factory):  # type: ignore[arg-type]
            default = default.factory()
        elif default is attr.NOTHING:
            default = None
        if f.name in _ALWAYS_WRITE:
            default = attr.NOTHING
        out[f.name] = (f.metadata["schema_property_name"], default)
    return out


_SCALARS = frozenset({str, int, float, bool})


def to_json(obj: Any, memo: dict[int, Any] | None = None) -> Any:
    """A sarif-om object graph as plain JSON data, under the SARIF schema's property names.

    Plain dicts (property bags, ``partialFingerprints``) keep their keys as given; ``None``
    values are dropped everywhere. Scalars are passed through without a call (this runs about
    a hundred times per finding), and an object met twice (the shared taxonomy links) is
    converted once: ``memo`` maps ``id(obj)`` to its JSON for the duration of one call.
    """
    cls = type(obj)
    if cls in _SCALARS or obj is None:
        return obj
    if memo is None:
        memo = {}
    if cls is dict:
        return {
            k: v if type(v) in _SCALARS else to_json(v, memo)
            for k, v in obj.items()
            if v is not None
        }
    if cls is list or cls is tuple:
        return [v if type(v) in _SCALARS else to_json(v, memo) for v in obj]
    done = memo.get(id(obj))
    if done is not None:
        return done
    if not attr.has(cls):
        raise ReportError(f"cannot write {cls.__name__} to SARIF")
    fields = _fields(cls)
    out: dict[str, Any] = {}
    for name, value in vars(obj).items():  # sarif-om classes are plain (non-slotted) attrs
        if value is None:
            continue
        json_name, default = fields[name]
        if value == default:
            continue
        out[json_name] = value if type(value) in _SCALARS else to_json(value, memo)
    memo[id(obj)] = out
    return out


def _json_key(value: Any) -> Any:
    """A hashable key equal for JSON-equal values (``1 == 1.0``, ``True != 1``)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, dict):
        return ("object", frozenset((k, _json_key(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("array", tuple(_json_key(v) for v in value))
    return ("other", repr(value))


def _coarse_key(value: Any) -> Any:
    """A cheap key that JSON-equal values always share: an object's key set and top-level
    strings, an array's length. Only values sharing it need the full :func:`_json_key`."""
    if isinstance(value, dict):
        strings = tuple(sorted((k, v) for k, v in value.items() if isinstance(v, str)))
        return ("object", frozenset(value), strings)
    if isinstance(value, list):
        return ("array", len(value))
    return _json_key(value)


def items_unique(items: list[Any], keys: dict[int, Any] | None = None) -> bool:
    """JSON Schema ``uniqueItems`` in about linear time (jsonschema's own is quadratic for
    arrays of objects: minutes for a SARIF run with thousands of rules).

    ``keys`` caches full keys by object id across calls, for documents that share objects.
    """
    if len(items) < 2:
        return True
    buckets: dict[Any, list[Any]] = {}
    for item in items:
        buckets.setdefault(_coarse_key(item), []).append(item)
    for group in buckets.values():
        if len(group) > 1:
            full = []
            for x in group:
                if keys is None:
                    full.append(_json_key(x))
                    continue
                key = keys.get(id(x))
                if key is None:
                    key = keys[id(x)] = _json_key(x)
                full.append(key)
            if len(set(full)) != len(full):
                return False
    return True


def _unique_items(
    validator: Any, unique: Any, instance: Any, schema: Any
) -> Iterator[jsonschema.ValidationError]:
    if unique and validator.is_type(instance, "array") and not items_unique(instance):
        yield jsonschema.ValidationError(f"array of {len(instance)} items has non-unique elements")


_SarifValidator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft4Validator, {"uniqueItems": _unique_items}
)


@functools.cache
def _schema() -> dict[str, Any]:
    text = resources.files("probegate.reports").joinpath("data/sarif-schema-2.1.0.json")
    schema: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return schema


@functools.cache
def reference_validator() -> jsonschema.protocols.Validator:
    """``jsonschema.Draft4Validator`` on the OASIS schema (with a linear ``uniqueItems``)."""
    validator: jsonschema.protocols.Validator = _SarifValidator(_schema())
    return validator


def compiled_validator() -> Callable[[Any], bool]:
    """The same schema compiled to plain closures, about fifty times faster.

    jsonschema interprets the schema anew for every node (about 0.3 ms per finding), which is
    seconds for a scan with thousands of findings. The schema uses a small Draft-4 subset, so
    it compiles to nested closures with the same semantics; tests check that both validators
    agree on valid and mutated documents. Only its yes/no answer is used: the error a user
    sees always comes from the reference validator.

    Compiling takes about 2 ms, so each call compiles afresh: the returned function remembers
    which shared objects (the same dict reached twice, like the taxonomy links every rule
    carries) it already found valid, and that memory must not outlive one document.
    """
    return _Compiler(_schema()).compile(_schema())


def validate(document: dict[str, Any]) -> None:
    """Raise :class:`ReportError` unless ``document`` is valid against the OASIS schema.

    Documents of up to :data:`REFERENCE_VALIDATION_MAX` results and rules (every realistic
    scan) go through ``jsonschema.Draft4Validator``; larger ones through
    :func:`compiled_validator`, falling back to the reference validator to explain a failure.
    """
    runs = document.get("runs") or [{}]
    size = sum(
        len(run.get("results") or [])
        + len(run.get("tool", {}).get("driver", {}).get("rules") or [])
        for run in runs
        if isinstance(run, dict)
    )
    if size > REFERENCE_VALIDATION_MAX and compiled_validator()(document):
        return
    errors = sorted(
        reference_validator().iter_errors(document), key=lambda e: list(map(str, e.absolute_path))
    )
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "<root>"
        raise ReportError(
            f"SARIF output would be invalid ({len(errors)} schema error(s)); "
            f"first at {where}: {first.message[:300]}"
        )


_Check = Callable[[Any], bool]

_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    # Draft 4: an integer is an int, never a float such as 1.0, never a bool.
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}

# Annotations: no effect on validity. ``format`` is not asserted by Draft4Validator without a
# format checker either, so ignoring it keeps both validators in agreement.
_IGNORED = frozenset({"description", "default", "title", "id", "$schema", "definitions", "format"})


def _all_of(checks: list[_Check]) -> _Check:
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)

    def check(v: Any) -> bool:
        for c in checks:  # noqa: SIM110 - a plain loop is measurably faster than all(genexpr)
            if not c(v):
                return False
        return True

    return check


class _Compiler:
    """Compiles the Draft-4 subset the SARIF schema uses; anything else is refused."""

    def __init__(self, root: dict[str, Any]) -> None:
        self._root = root
        self._refs: dict[str, list[_Check]] = {}
        # (ref, id(instance)) already found valid. Ids are stable because the document is
        # alive and unchanged while it is validated.
        self._valid: set[tuple[str, int]] = set()
        self._keys: dict[int, Any] = {}  # id -> _json_key, for shared objects

    def compile(self, schema: Any) -> _Check:
        if schema is True or schema == {}:
            return lambda v: True
        if schema is False:
            return lambda v: False
        if "$ref" in schema:  # Draft 4: siblings of $ref are ignored
            return self._ref(schema["$ref"])
        checks: list[_Check] = []
        for keyword, value in schema.items():
            if keyword in _IGNORED:
                continue
            build = getattr(self, "_kw_" + keyword, None)
            if build is None:
                raise NotImplementedError(f"schema keyword {keyword!r} is not compiled")
            if keyword in ("properties", "additionalProperties"):
                continue  # compiled together below
            checks.append(build(value, schema))
        if "properties" in schema or "additionalProperties" in schema:
            checks.append(self._object(schema))
        return _all_of(checks)

    def _ref(self, ref: str) -> _Check:
        if not ref.startswith("#/"):
            raise NotImplementedError(f"remote $ref {ref!r}")
        cell = self._refs.get(ref)
        if cell is None:
            cell = []
            self._refs[ref] = cell
            node: Any = self._root
            for part in ref[2:].split("/"):
                node = node[part.replace("~1", "/").replace("~0", "~")]
            cell.append(self.compile(node))
        valid = self._valid

        def check(v: Any) -> bool:
            if type(v) is not dict:
                return cell[0](v)
            key = (ref, id(v))
            if key in valid:
                return True
            if cell[0](v):
                valid.add(key)
                return True
            return False

        return check

    def _object(self, schema: dict[str, Any]) -> _Check:
        props = {k: self.compile(s) for k, s in schema.get("properties", {}).items()}
        extra = schema.get("additionalProperties", True)
        extra_check = None if extra is True else self.compile(extra)

        def check(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for key, value in v.items():
                sub = props.get(key)
                if sub is not None:
                    if not sub(value):
                        return False
                elif extra_check is not None and not extra_check(value):
                    return False
            return True

        return check

    def _kw_properties(self, value: Any, schema: Any) -> _Check:
        raise AssertionError("compiled by _object")

    _kw_additionalProperties = _kw_properties

    def _kw_type(self, value: Any, schema: Any) -> _Check:
        names = value if isinstance(value, list) else [value]
        tests = [_TYPES[n] for n in names]
        if len(tests) == 1:
            return tests[0]
        return lambda v: any(t(v) for t in tests)

    def _kw_required(self, value: Any, schema: Any) -> _Check:
        keys = list(value)
        return lambda v: not isinstance(v, dict) or all(k in v for k in keys)

    def _kw_items(self, value: Any, schema: Any) -> _Check:
        if isinstance(value, list):
            raise NotImplementedError("tuple items")
        item = self.compile(value)

        def check(v: Any) -> bool:
            if isinstance(v, list):
                for x in v:
                    if not item(x):
                        return False
            return True

        return check

    def _kw_minItems(self, value: Any, schema: Any) -> _Check:
        return lambda v: not isinstance(v, list) or len(v) >= value

    def _kw_uniqueItems(self, value: Any, schema: Any) -> _Check:
        if not value:
            return lambda v: True
        keys = self._keys
        return lambda v: not isinstance(v, list) or items_unique(v, keys)

    def _kw_enum(self, value: Any, schema: Any) -> _Check:
        allowed = {_json_key(x) for x in value}
        return lambda v: _json_key(v) in allowed

    def _kw_minimum(self, value: Any, schema: Any) -> _Check:
        if schema.get("exclusiveMinimum"):
            raise NotImplementedError("exclusiveMinimum")
        return lambda v: not _TYPES["number"](v) or v >= value

    def _kw_maximum(self, value: Any, schema: Any) -> _Check:
        if schema.get("exclusiveMaximum"):
            raise NotImplementedError("exclusiveMaximum")
        return lambda v: not _TYPES["number"](v) or v <= value

    def _kw_pattern(self, value: Any, schema: Any) -> _Check:
        regex = re.compile(value)
        return lambda v: not isinstance(v, str) or regex.search(v) is not None

    def _kw_anyOf(self, value: Any, schema: Any) -> _Check:
        subs = [self.compile(s) for s in value]
        return lambda v: any(s(v) for s in subs)

    def _kw_oneOf(self, value: Any, schema: Any) -> _Check:
        subs = [self.compile(s) for s in value]
        return lambda v: sum(1 for s in subs if s(v)) == 1


# --- building ---------------------------------------------------------------------------------


def render(report: ScanReport) -> bytes:
    """The SARIF log for ``report``, validated, as sorted compact JSON."""
    with gc_paused():
        document = build(report)
        validate(document)
        # Compact, not indented: json's indenting encoder is pure Python (seconds for a large
        # scan) and GitHub's upload limit is on size; sorted keys keep the bytes stable.
        return canonical_bytes(document) + b"\n"


def build(report: ScanReport) -> dict[str, Any]:
    """The SARIF log as JSON data (not yet validated)."""
    if len(report.findings) > MAX_RESULTS:
        raise ReportError(
            f"{len(report.findings)} findings exceed GitHub's {MAX_RESULTS} results per "
            "SARIF run; narrow the scan (--asi, --probes) or shard it"
        )
    by_probe: dict[str, list[Finding]] = {}
    for finding in report.findings:
        by_probe.setdefault(finding.probe_id, []).append(finding)
    rule_ids = sorted(by_probe)
    rule_index = {rule_id: i for i, rule_id in enumerate(rule_ids)}
    rules = [_rule(rule_id, by_probe[rule_id]) for rule_id in rule_ids]

    seen_fp: dict[str, int] = {}
    results = []
    for finding in report.findings:
        seen_fp[finding.fp] = seen_fp.get(finding.fp, 0) + 1
        results.append(_result(finding, rule_index[finding.probe_id], seen_fp[finding.fp]))

    run = om.Run(
        tool=om.Tool(
            driver=om.ToolComponent(
                name=TOOL_NAME,
                full_name="probegate: red-team AI agents in CI",
                version=report.package_version,
                semantic_version=report.package_version,
                rules=rules,
                supported_taxonomies=[
                    om.ToolComponentReference(name=name, index=i)
                    for i, (name, _org, _version, _taxa) in enumerate(TAXONOMIES)
                ],
                properties={"probe_library_version": report.probe_library_version},
            )
        ),
        taxonomies=[_taxonomy(*entry) for entry in TAXONOMIES],
        invocations=[_invocation(report)],
        results=results,
        column_kind="unicodeCodePoints",
        properties=_run_properties(report),
    )
    log = om.SarifLog(runs=[run], version=SARIF_VERSION, schema_uri=SCHEMA_URI)
    data: dict[str, Any] = to_json(log)
    return data


def _rule(rule_id: str, findings: list[Finding]) -> om.ReportingDescriptor:
    first = findings[0]
    worst = max(findings, key=lambda f: SEVERITY_RANK[f.severity]).severity
    score = max(f.aivss_severity for f in findings)
    asi_title = ASI_TITLES.get(first.asi, first.asi)
    csa_title = CSA_TITLES.get(first.csa_category, first.csa_category)
    llm = _unique(x for f in findings for x in f.owasp_llm)
    atlas = _unique(x for f in findings for x in f.mitre_atlas)
    name = clean_text(first.name) or rule_id
    remediation = clean_text(first.remediation)

    mapping = [
        f"OWASP Agentic {first.asi} {asi_title}",
        *(f"OWASP LLM {_llm(x)}" for x in llm),
        *(f"MITRE ATLAS {x}" for x in atlas),
        f"CSA {csa_title}",
    ]
    full = (
        f"{name}: an attack through the {first.channel.replace('_', ' ')} channel that the "
        f"agent followed. Maps to {'; '.join(mapping)}."
    )
    help_text = (
        f"{remediation}\n\nProbe {rule_id} ({first.asi} {asi_title}). Mapping: "
        f"{'; '.join(mapping)}. Scan again after a fix: the alert closes when the probe no "
        "longer succeeds (its fingerprint depends on the probe alone)."
    )
    help_md = "\n".join(
        [
            f"**{md_text(name)}** ({md_code(rule_id)})",
            "",
            "**Remediation:** " + md_text(remediation),
            "",
            "| Taxonomy | Id |",
            "|---|---|",
            f"| OWASP Top 10 for Agentic Applications | {md_text(f'{first.asi} {asi_title}')} |",
            *(f"| OWASP Top 10 for LLM Applications | {md_text(_llm(x))} |" for x in llm),
            *(f"| MITRE ATLAS | {md_text(x)} |" for x in atlas),
            f"| CSA Agentic AI Red Teaming | {md_text(csa_title)} |",
        ]
    )
    return om.ReportingDescriptor(
        id=rule_id,
        name=_pascal(name),
        short_description=om.MultiformatMessageString(
            text=_sentence(truncate(sarif_text(name), DESCRIPTION_MAX - 1))
        ),
        full_description=om.MultiformatMessageString(
            text=_sentence(truncate(sarif_text(full), DESCRIPTION_MAX - 1))
        ),
        help=om.MultiformatMessageString(text=sarif_text(help_text), markdown=help_md),
        default_configuration=_configuration(LEVELS[worst]),
        relationships=_relationships(first.asi, llm, first.csa_category) or None,
        properties={
            "tags": _tags(first.asi, llm, atlas, first.csa_category),
            "security-severity": _severity_string(score),
            "precision": "very-high" if min(f.confidence for f in findings) >= 0.9 else "high",
            "asi": first.asi,
            "csa": first.csa_category,
            "mitre_atlas": atlas,
            "owasp_llm": llm,
            "channel": first.channel,
        },
    )


def _taxonomy(name: str, organization: str, version: str, taxa: dict[str, str]) -> Any:
    return om.ToolComponent(
        name=name,
        organization=organization,
        version=version,
        taxa=[
            om.ReportingDescriptor(
                id=taxon, name=title, short_description=om.MultiformatMessageString(text=title)
            )
            for taxon, title in taxa.items()
        ],
    )


def _relationships(asi: str, llm: list[str], csa: str) -> list[Any]:
    """Links from a rule to its taxa; ids the taxonomies do not know are left to the tags."""
    wanted = [(0, asi), *((1, x) for x in llm), (2, csa)]
    return [rel for t, taxon in wanted if (rel := _relationship(t, taxon)) is not None]


@functools.cache
def _relationship(taxonomy: int, taxon: str) -> Any:
    """One shared object per taxon: :func:`to_json` converts it once per document."""
    index = _TAXON_INDEX.get((taxonomy, taxon))
    if index is None:
        return None
    return om.ReportingDescriptorRelationship(
        target=om.ReportingDescriptorReference(
            id=taxon,
            index=index,
            tool_component=om.ToolComponentReference(name=TAXONOMIES[taxonomy][0], index=taxonomy),
        ),
        kinds=["subset"],  # a probe is one case of its category
    )


def _result(finding: Finding, rule_index: int, occurrence: int) -> om.Result:
    properties: dict[str, Any] = {
        "aivss_severity": finding.severity.value,
        "security-severity": _severity_string(finding.aivss_severity),
        "asi": finding.asi,
        "mitre_atlas": list(finding.mitre_atlas),
        "csa": finding.csa_category,
        "owasp_llm": list(finding.owasp_llm),
        "confidence": finding.confidence,
        "success": finding.success,
        "attempt_count": finding.attempt_count,
        "successes": finding.successes,
        "finding_id": finding.id,
        "fp": finding.fp,
        "channel": finding.channel,
        "pov_reference": finding.pov_reference,
        "pov_reliability": finding.pov_reliability,
    }
    suppressions = None
    if finding.suppressed is not None:
        suppressions = [
            om.Suppression(
                kind="external",
                justification=clean_text(finding.suppressed.reason) or "suppressed",
                properties=(
                    {"expires": finding.suppressed.expires} if finding.suppressed.expires else None
                ),
            )
        ]
    message = sarif_text(finding.summary) or f"{finding.name} succeeded against the agent"
    return om.Result(
        rule_id=finding.probe_id,
        rule_index=rule_index,
        level=LEVELS[finding.severity],
        message=om.Message(text=_sentence(truncate(message, MESSAGE_MAX))),
        locations=[_location(finding.location.path, finding.location.line)],
        partial_fingerprints={
            "primaryLocationLineHash": f"{finding.fp}:{occurrence}",
            FINGERPRINT_KEY: finding.fp,
        },
        suppressions=suppressions,
        properties=properties,
    )


# Findings mostly share a handful of locations (the config file) and three levels: one
# object each, which to_json and the validator then handle once per document.
@functools.lru_cache(maxsize=4096)
def _location(path: str, line: int) -> Any:
    return om.Location(
        physical_location=om.PhysicalLocation(
            artifact_location=om.ArtifactLocation(uri=artifact_uri(path)),
            region=om.Region(start_line=line),
        )
    )


@functools.cache
def _configuration(level: str) -> Any:
    return om.ReportingConfiguration(level=level)


def _invocation(report: ScanReport) -> om.Invocation:
    return om.Invocation(
        execution_successful=report.stopped_reason != "cancelled",
        properties={
            "scan_id": report.scan_id,
            "mode": report.mode,
            "seed": report.seed,
            "shard": report.shard,
            "stopped_reason": report.stopped_reason,
            "evaluation_mode": report.evaluation_mode,
            "created_at": report.created_at,
            "duration_seconds": report.duration_seconds,
            "target": {"kind": report.target.kind, "ref": report.target.ref},
        },
    )


def _run_properties(report: ScanReport) -> dict[str, Any]:
    return {
        "aivss": report.aivss,
        "band": report.band,
        "tier": report.tier,
        "asi_scores": dict(report.asi_scores),
        "aivss_formula_version": report.aivss_formula_version,
        "probe_library_version": report.probe_library_version,
        "scan_id": report.scan_id,
        "mode": report.mode,
        "mode_authoritative": report.mode_authoritative,
        "scoring_valid": report.scoring_valid,
        "authoritative": report.authority.authoritative,
        "undertested": list(report.undertested),
        "findings_summary": dict(report.findings_summary),
        "unjudged": len(report.unjudged),
    }


# --- helpers ----------------------------------------------------------------------------------

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def artifact_uri(path: str) -> str:
    """A finding's repo-relative path as a SARIF ``uri`` GitHub accepts.

    GitHub rejects the whole upload for an empty uri or one whose first segment holds a colon
    (read as a scheme), and an absolute or ``..`` path cannot be a file of the repository, so
    those are :class:`ReportError`; everything else is percent-encoded as a relative reference.
    """
    normalised = path.replace("\\", "/")
    while normalised.startswith("./"):
        normalised = normalised[2:]
    segments = [s for s in normalised.split("/") if s not in ("", ".")]
    if not segments or normalised.startswith("/") or ".." in segments or _SCHEME.match(normalised):
        raise ReportError(
            f"finding location {path!r} is not a repo-relative file path; SARIF for GitHub "
            "needs one (the config, prompt or tool definition file)"
        )
    return urllib.parse.quote("/".join(segments), safe="/-._~!$&'()*+,;=@")


def _llm(llm_id: str) -> str:
    return f"{llm_id} {OWASP_LLM_TITLES.get(llm_id, '')}".rstrip()


def _tags(asi: str, llm: list[str], atlas: list[str], csa: str) -> list[str]:
    """At most ten tags; ``security`` (which makes GitHub read security-severity), the ASI
    category and the CSA category always survive, LLM and ATLAS ids fill the rest."""
    optional = [f"owasp-llm/{x.lower()}" for x in llm] + [f"mitre-atlas/{x.lower()}" for x in atlas]
    room = MAX_TAGS - 3
    return ["security", f"owasp-agentic/{asi.lower()}", *optional[:room], f"csa/{csa}"]


def _severity_string(score: float) -> str:
    """GitHub's ``security-severity``: a decimal string, 0.0-10.0, one decimal."""
    return f"{min(max(score, 0.0), 10.0):.1f}"


def _unique(values: Iterable[str]) -> list[str]:
    return sorted(set(values))


def _sentence(text: str) -> str:
    """SARIF asks that messages end with a period (SARIF2001); add one when missing."""
    text = text.strip()
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def _pascal(name: str) -> str:
    """A rule's friendly ``name`` in PascalCase, as SARIF recommends (SARIF2012)."""
    words = re.findall(r"[A-Za-z0-9]+", name)
    return "".join(w[:1].upper() + w[1:] for w in words) or "Probe"
