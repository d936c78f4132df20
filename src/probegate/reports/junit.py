"""JUnit XML: the scan as a test run, for CI test reporters.

One ``<testsuite>`` per OWASP ASI category that has probes, one ``<testcase>`` per probe
(``report.results``). A probe the agent fell for is a ``<failure>`` carrying the finding's
evidence; a resisted probe passes; an unjudged or not-applicable probe is ``<skipped>`` with the
reason, because "could not tell" must never read as "passed". A suppressed finding is skipped
too, with the suppression's reason: gates do not count it, so the test run must not fail on it.

The file is valid under the Jenkins xunit plugin's JUnit schema (``junit-10.xsd``, the strictest
common consumer; docs/report-format.md). That schema fixes three choices: ``<testsuites>`` carries
no ``skipped`` count (each ``<testsuite>`` does); a ``<testcase>`` may not carry ``file=``, so the
file that defines the target is the suite's ``file=``, which reporters fall back to for a case's
location; and no property name repeats anywhere in the file, because readers such as
xunitparser collect every suite's properties into one mapping and reject a second ``aivss``.
Scan-wide properties are therefore on the first suite only, per-category ones are prefixed with
the category id.

Built with ``xml.etree``, which escapes ``&``, ``<`` and ``>`` everywhere (so a ``]]>`` in agent
text is inert), after :func:`escape.xml_text` removed what XML 1.0 cannot hold at all (ANSI
escapes, control characters). No clock: ``time`` attributes are 0 and there is no timestamp, so
the same scan gives the same bytes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from probegate.models.report import Finding, ProbeResult, ScanReport
from probegate.models.taxonomy import ASI_IDS, ASI_TITLES
from probegate.perf import gc_paused
from probegate.reports.escape import (
    log_xml_text,
    marked_lines,
    truncate,
)
from probegate.reports.headline import category_state, category_text, score_text

MESSAGE_MAX = 500
TEXT_MAX = 4000


def render(report: ScanReport) -> bytes:
    with gc_paused():
        root = build(report)
        ET.indent(root)
        body = ET.tostring(root, encoding="unicode", short_empty_elements=True)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n").encode("utf-8")


def build(report: ScanReport) -> ET.Element:
    """The ``<testsuites>`` element for ``report``."""
    findings = {f.probe_id: f for f in report.findings}
    by_asi: dict[str, list[ProbeResult]] = {}
    for result in report.results:
        by_asi.setdefault(result.asi, []).append(result)
    order = [a for a in ASI_IDS if a in by_asi] + sorted(a for a in by_asi if a not in ASI_IDS)

    root = ET.Element("testsuites", _attrs(name=f"probegate {report.scan_id}"))
    totals = {"tests": 0, "failures": 0}
    for index, asi in enumerate(order):
        suite = _suite(report, asi, by_asi[asi], findings, first=index == 0)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
        root.append(suite)
    # No `skipped` here: junit-10.xsd does not allow it on <testsuites> (the suites carry it).
    root.attrib.update(
        _attrs(tests=totals["tests"], failures=totals["failures"], errors=0, time="0")
    )
    return root


def scan_properties(report: ScanReport) -> list[tuple[str, str]]:
    """Scan-wide properties, written once per file (on the first suite), with the properties
    of every category no suite carries (no probe of it ran): all ten are in every file."""
    suited = {r.asi for r in report.results}
    return [
        ("probegate.scan_id", report.scan_id),
        ("probegate.aivss", score_text(report.aivss)),
        ("probegate.band", report.band),
        ("probegate.mode", report.mode),
        ("probegate.authoritative", "true" if report.authority.authoritative else "false"),
        *(p for asi in ASI_IDS if asi not in suited for p in asi_properties(report, asi)),
    ]


def asi_properties(report: ScanReport, asi: str) -> list[tuple[str, str]]:
    """One category's properties, named after it so no name repeats across suites."""
    state = category_state(report, asi)
    return [
        (f"{asi}.score", category_text(state)),
        (f"{asi}.state", state.state),
        (f"{asi}.undertested", "true" if state.state == "undertested" else "false"),
        (f"{asi}.unjudged", str(state.unjudged)),
    ]


def _suite(
    report: ScanReport,
    asi: str,
    results: list[ProbeResult],
    findings: dict[str, Finding],
    *,
    first: bool,
) -> ET.Element:
    title = ASI_TITLES.get(asi, asi)
    suite = ET.Element("testsuite", _attrs(name=f"{asi} {title}"))
    props = ET.SubElement(suite, "properties")
    for name, value in [*(scan_properties(report) if first else []), *asi_properties(report, asi)]:
        ET.SubElement(props, "property", _attrs(name=name, value=value))

    failures = skipped = 0
    for result in sorted(results, key=lambda r: r.probe_id):
        case = ET.SubElement(
            suite,
            "testcase",
            _attrs(name=result.probe_id, classname=f"probegate.{asi}", time="0"),
        )
        finding = findings.get(result.probe_id)
        if result.outcome == "vulnerable":
            if finding is not None and finding.suppressed is not None:
                skipped += 1
                reason = f"suppressed: {marked_lines(finding.suppressed.reason)}"
                ET.SubElement(case, "skipped", _attrs(message=truncate(reason, MESSAGE_MAX)))
                _system_out(case, _finding_text(finding, result))
                continue
            failures += 1
            summary = marked_lines(finding.summary) if finding else f"{result.name}: vulnerable"
            failure = ET.SubElement(
                case,
                "failure",
                _attrs(message=truncate(summary, MESSAGE_MAX), type=result.severity.value),
            )
            failure.text = log_xml_text(_finding_text(finding, result))
        elif result.outcome in ("unjudged", "not_applicable", "not_run"):
            skipped += 1
            reason = marked_lines(result.reason) or result.outcome.replace("_", " ")
            message = truncate(f"{result.outcome}: {reason}", MESSAGE_MAX)
            ET.SubElement(case, "skipped", _attrs(message=message))
        else:
            _system_out(
                case,
                f"{result.name}: resisted {result.resisted} of {result.attempts} attempt(s)"
                + (f", {result.unjudged} unjudged" if result.unjudged else "")
                + (f"; {result.reason}" if result.reason else ""),
            )
    suite.attrib.update(
        _attrs(tests=len(results), failures=failures, errors=0, skipped=skipped, time="0")
    )
    if report.target.definition is not None:
        suite.attrib.update(_attrs(file=report.target.definition.path))
    return suite


def _finding_text(finding: Finding | None, result: ProbeResult) -> str:
    lines = [
        f"{result.name} ({result.probe_id})",
        f"severity: {result.severity.value}; attempts: {result.attempts}, "
        f"vulnerable: {result.vulnerable}, resisted: {result.resisted}, "
        f"unjudged: {result.unjudged}",
    ]
    if finding is not None:
        lines.append(f"summary: {marked_lines(finding.summary)}")
        lines.append(f"fp: {finding.fp}")
        lines.append(f"location: {finding.location.path}:{finding.location.line}")
        for ev in finding.evidence:
            lines.append(
                f"evidence: {ev.detector} [{ev.category}] at {ev.path} [{ev.start}:{ev.end}]: "
                f"{marked_lines(ev.subject)}"
            )
        if finding.control is not None:
            lines.append(
                f"control: {finding.control.attempt_id} (the same conversation without the "
                f"attack): {marked_lines(finding.control.summary)}"
            )
        if finding.trigger_prompt:
            lines.append(f"trigger prompt: {truncate(marked_lines(finding.trigger_prompt), 1000)}")
        lines.append(f"remediation: {finding.remediation}")
    return truncate("\n".join(lines), TEXT_MAX)


def _system_out(case: ET.Element, text: str) -> None:
    ET.SubElement(case, "system-out").text = log_xml_text(text)


def _attrs(**values: object) -> dict[str, str]:
    # A reporter prints names and messages to the log too: no workflow command in any of them.
    return {k: log_xml_text(str(v)) for k, v in values.items()}
