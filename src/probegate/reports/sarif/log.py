"""The SARIF log: one run of the ``probegate`` tool, its rules, results and invocation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from probegate import PROJECT_URL
from probegate.errors import ReportError
from probegate.models.probe import stable_id
from probegate.models.report import Finding, ScanReport, StopReason
from probegate.reports.escape import clean_text
from probegate.reports.headline import (
    category_states,
    category_text,
    coverage_text,
    score_text,
)
from probegate.reports.sarif import results, rules
from probegate.reports.sarif.omjson import Shared, node, plain

TOOL_NAME = "probegate"  # GitHub keys alerts on it: never change it.
SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
MAX_RESULTS = 25_000  # GitHub's per-run limit for results and for rules


Made = Callable[[], Iterator[Any]]


def build_parts(report: ScanReport) -> tuple[dict[str, Any], Made, Made]:
    """The SARIF log without its rules and results (empty lists), and what makes each of them
    one at a time: a writer that streams never holds a 10,000-finding scan's at once."""
    if len(report.findings) > MAX_RESULTS:
        raise ReportError(
            f"{len(report.findings)} findings exceed GitHub's {MAX_RESULTS} results per "
            "SARIF run; narrow the scan (--asi, --probes) or shard it"
        )
    finding_rules = [stable_id(f.probe_id) for f in report.findings]
    by_rule: dict[str, list[Finding]] = {}
    for rule_id, finding in zip(finding_rules, report.findings, strict=True):
        by_rule.setdefault(rule_id, []).append(finding)
    rule_ids = sorted(by_rule)
    rule_index = {rule_id: i for i, rule_id in enumerate(rule_ids)}
    shared = Shared()
    run = node(
        "Run",
        tool=node(
            "Tool",
            driver=node(
                "ToolComponent",
                name=TOOL_NAME,
                full_name="probegate: red-team AI agents in CI",
                information_uri=PROJECT_URL,
                version=report.package_version,
                semantic_version=report.package_version,
                rules=[],
                supported_taxonomies=rules.supported_taxonomies(),
                properties=plain({"probe_library_version": report.probe_library_version}),
            ),
        ),
        taxonomies=rules.taxonomies(),
        invocations=[_invocation(report)],
        results=[],
        column_kind="unicodeCodePoints",
        properties=plain(_run_properties(report)),
    )

    def rules_of() -> Iterator[Any]:
        for rule_id in rule_ids:
            yield rules.rule(rule_id, by_rule[rule_id], shared)

    def results_of() -> Iterator[Any]:
        for rule_id, f in zip(finding_rules, report.findings, strict=True):
            yield results.result(f, rule_id, rule_index[rule_id], shared)

    document = node("SarifLog", runs=[run], version=SARIF_VERSION, schema_uri=SCHEMA_URI)
    return document, rules_of, results_of


def _invocation(report: ScanReport) -> dict[str, Any]:
    return node(
        "Invocation",
        execution_successful=report.stopped_reason != StopReason.CANCELLED,
        properties=plain(
            {
                "scan_id": report.scan_id,
                "mode": str(report.mode),
                "seed": report.seed,
                "shard": report.shard,
                "stopped_reason": str(report.stopped_reason),
                "evaluation_mode": report.evaluation_mode,
                "created_at": report.created_at,
                "duration_seconds": report.duration_seconds,
                "target": {"kind": report.target.kind, "ref": report.target.ref},
            }
        ),
    )


def _run_properties(report: ScanReport) -> dict[str, Any]:
    states = category_states(report)
    return {
        "aivss": report.aivss,
        # As every other format shows them: "n/a" for a scan too thin to score, and
        # "n/a (undertested)" for a category that has no score (docs/scoring.md).
        "aivss_shown": score_text(report.aivss),
        "band": report.band,
        "covers": coverage_text(report),
        # Whether each attempt's attack reached the agent (docs/scoring.md, "Delivery").
        "delivery": report.delivery.model_dump() if report.delivery is not None else None,
        "tier": report.tier,
        "asi_scores": dict(report.asi_scores),
        "asi_scores_shown": {asi: category_text(state) for asi, state in states.items()},
        # Attempts per category that have no verdict: its score above counted them against it.
        "asi_unjudged": {asi: state.unjudged for asi, state in states.items() if state.unjudged},
        # Every category's state, and why one has no score (docs/scoring.md, "Categories").
        "asi_states": {
            asi: {"state": state.state, "reason": clean_text(state.reason)}
            for asi, state in states.items()
        },
        "aivss_formula_version": report.aivss_formula_version,
        "probe_library_version": report.probe_library_version,
        "scan_id": report.scan_id,
        "mode": str(report.mode),
        "mode_authoritative": report.mode_authoritative,
        "scoring_valid": report.scoring_valid,
        "authoritative": report.authority.authoritative,
        "undertested": list(report.undertested),
        "findings_summary": dict(report.findings_summary),
        "unjudged": len(report.unjudged),
        "not_run": [clean_text(n.probe_id) for n in report.not_run],
        "controls": report.controls.model_dump(),
    }
