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

Written line by line, each element on its own line indented by two spaces per level, as
``xml.etree``'s ``indent`` lays a tree out (building the tree and serialising it took twice as
long as writing the text). Agent text goes through :func:`escape.log_xml_text`, which removes
what XML 1.0 cannot hold at all (ANSI escapes, control characters) and any workflow command at a
line start, then :func:`escape.xml_chars` or :func:`escape.xml_attribute`, which write ``&``,
``<``, ``>`` (and in attributes the quote and line breaks) as entities everywhere, so a ``]]>``
in agent text is inert. No clock: ``time`` attributes are 0 and there is no timestamp, so the
same scan gives the same bytes.
"""

from __future__ import annotations

from operator import attrgetter

from probegate.models.report import CategoryState, Finding, ProbeResult, ScanReport
from probegate.models.taxonomy import ASI_IDS, ASI_TITLES
from probegate.perf import gc_paused
from probegate.reports.escape import log_xml_text, marked_lines, truncate, xml_attribute, xml_chars
from probegate.reports.headline import (
    category_state,
    category_states,
    category_text,
    coverage_text,
    score_text,
)

MESSAGE_MAX = 500
TEXT_MAX = 4000


def render(report: ScanReport) -> bytes:
    with gc_paused():
        lines = build(report)
        return "\n".join(['<?xml version="1.0" encoding="UTF-8"?>', *lines, ""]).encode("utf-8")


def build(report: ScanReport) -> list[str]:
    """The lines of the ``<testsuites>`` element for ``report``."""
    findings = {f.probe_id: f for f in report.findings}
    by_asi: dict[str, list[ProbeResult]] = {}
    for result in report.results:
        by_asi.setdefault(result.asi, []).append(result)
    order = [a for a in ASI_IDS if a in by_asi] + sorted(a for a in by_asi if a not in ASI_IDS)

    states = category_states(report)  # all ten at once: one pass over results and findings
    lines: list[str] = []
    tests = failures = 0
    for index, asi in enumerate(order):
        suite = _Suite(report, asi, by_asi[asi], findings, states, first=index == 0)
        tests += len(suite.results)
        failures += suite.failures
        lines += suite.lines
    # No `skipped` here: junit-10.xsd does not allow it on <testsuites> (the suites carry it).
    root = _start(
        "testsuites",
        name=f"probegate {report.scan_id}",
        tests=tests,
        failures=failures,
        errors=0,
        time="0",
    )
    if not lines:
        return [root + " />"]
    return [root + ">", *lines, "</testsuites>"]


def scan_properties(report: ScanReport, states: dict[str, CategoryState]) -> list[tuple[str, str]]:
    """Scan-wide properties, written once per file (on the first suite), with the properties
    of every category no suite carries (no probe of it ran): all ten are in every file."""
    suited = {r.asi for r in report.results}
    return [
        ("probegate.scan_id", report.scan_id),
        ("probegate.aivss", score_text(report.aivss)),
        ("probegate.band", report.band),
        ("probegate.covers", coverage_text(report)),
        ("probegate.mode", report.mode),
        ("probegate.authoritative", "true" if report.authority.authoritative else "false"),
        *(p for asi in ASI_IDS if asi not in suited for p in asi_properties(asi, states[asi])),
    ]


def asi_properties(asi: str, state: CategoryState) -> list[tuple[str, str]]:
    """One category's properties, named after it so no name repeats across suites."""
    return [
        (f"{asi}.score", category_text(state)),
        (f"{asi}.state", state.state),
        (f"{asi}.undertested", "true" if state.state == "undertested" else "false"),
        (f"{asi}.unjudged", str(state.unjudged)),
    ]


class _Suite:
    """One category's ``<testsuite>``, as indented lines, with the counts its start tag and the
    root's carry (known only once every case is written)."""

    def __init__(
        self,
        report: ScanReport,
        asi: str,
        results: list[ProbeResult],
        findings: dict[str, Finding],
        states: dict[str, CategoryState],
        *,
        first: bool,
    ) -> None:
        self.results = results
        self.failures = 0
        self.skipped = 0
        # A category outside ASI_IDS (a report from another tool) is not among the ten ``states``.
        state = states[asi] if asi in states else category_state(report, asi)
        properties = [
            *(scan_properties(report, states) if first else []),
            *asi_properties(asi, state),
        ]
        body = ["    <properties>"]
        body += [f"      {_start('property', name=k, value=v)} />" for k, v in properties]
        body.append("    </properties>")
        # What every case of the suite carries after its name, written once per suite.
        rest = f"{_attributes(classname=f'probegate.{asi}', time='0')}>"
        for result in sorted(results, key=_PROBE_ID):
            body += self._case(result, findings.get(result.probe_id), rest)
        attributes: dict[str, object] = {
            "name": f"{asi} {ASI_TITLES.get(asi, asi)}",
            "tests": len(results),
            "failures": self.failures,
            "errors": 0,
            "skipped": self.skipped,
            "time": "0",
        }
        if report.target.definition is not None:
            attributes["file"] = report.target.definition.path
        self.lines = [f"  {_start('testsuite', **attributes)}>", *body, "  </testsuite>"]

    def _case(self, result: ProbeResult, finding: Finding | None, rest: str) -> list[str]:
        """A ``<testcase>`` and the one element inside it; ``rest`` ends its start tag (the
        attributes every case of the suite shares)."""
        case = f"    <testcase{_attributes(name=result.probe_id)}{rest}"
        if result.outcome == "vulnerable":
            # The summary as one line, read once: the message and the text both show it.
            summary = marked_lines(finding.summary) if finding is not None else None
            if finding is not None and finding.suppressed is not None:
                self.skipped += 1
                reason = f"suppressed: {marked_lines(finding.suppressed.reason)}"
                inner = [
                    _start("skipped", message=truncate(reason, MESSAGE_MAX)) + " />",
                    _system_out(_finding_text(finding, summary, result)),
                ]
            else:
                self.failures += 1
                message = summary if summary is not None else f"{result.name}: vulnerable"
                failure = _start(
                    "failure", message=truncate(message, MESSAGE_MAX), type=result.severity.value
                )
                inner = [_with_text(failure, "failure", _finding_text(finding, summary, result))]
        elif result.outcome in (
            "undecided",
            "unjudged",
            "not_delivered",
            "not_applicable",
            "not_run",
        ):
            self.skipped += 1
            reason = marked_lines(result.reason) or result.outcome.replace("_", " ")
            message = truncate(f"{result.outcome}: {reason}", MESSAGE_MAX)
            inner = [_start("skipped", message=message) + " />"]
        else:
            inner = [
                _system_out(
                    f"{result.name}: resisted {result.resisted} of {result.attempts} attempt(s)"
                    + (f", {result.unjudged} unjudged" if result.unjudged else "")
                    + (f"; {result.reason}" if result.reason else "")
                )
            ]
        return [case, *[f"      {line}" for line in inner], "    </testcase>"]


def _finding_text(finding: Finding | None, summary: str | None, result: ProbeResult) -> str:
    """The case's text; ``summary`` is the finding's, as :func:`marked_lines` wrote it."""
    lines = [
        f"{result.name} ({result.probe_id})",
        f"severity: {result.severity.value}; attempts: {result.attempts}, "
        f"vulnerable: {result.vulnerable}, resisted: {result.resisted}, "
        f"unjudged: {result.unjudged}",
    ]
    if finding is not None:
        lines.append(f"summary: {summary}")
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


def _system_out(text: str) -> str:
    return _with_text(_start("system-out"), "system-out", text)


def _with_text(start: str, tag: str, text: str) -> str:
    """An element holding text; an empty one is written ``<tag />``, as xml.etree writes it."""
    body = xml_chars(log_xml_text(text))
    return f"{start}>{body}</{tag}>" if body else start + " />"


def _start(tag: str, /, **attributes: object) -> str:
    """A start tag without its closing ``>``, attributes in the order given."""
    return f"<{tag}{_attributes(**attributes)}"


def _attributes(**attributes: object) -> str:
    """Attributes as written in a start tag, each with a space before it, in the order given."""
    # A reporter prints names and messages to the log too: no workflow command in any of them.
    return "".join(f' {k}="{xml_attribute(log_xml_text(str(v)))}"' for k, v in attributes.items())


_PROBE_ID = attrgetter("probe_id")
