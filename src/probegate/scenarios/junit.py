"""JUnit XML for scenario runs: one ``<testsuite>`` per suite, one ``<testcase>`` per scenario.

A scenario that ran and failed a scorer is a ``<failure>`` (the agent answered wrongly); one
whose adapter raised, timed out or returned garbage is an ``<error>`` (no answer to judge), the
distinction CI test reporters already draw. Pure and clock-free: times come from the results,
which are zero under SOURCE_DATE_EPOCH, so the same run gives the same bytes. Agent text goes
through :mod:`probegate.reports.escape` like every other emitter's.

Valid under the Jenkins xunit JUnit schema, like the scan's JUnit (docs/report-format.md): no
``skipped`` on ``<testsuites>``, and property names prefixed with their suite's name (unique in
a run), because xunitparser gathers all suites' properties into one mapping.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from probegate.reports.escape import log_xml_text, marked_lines, number, truncate, xml_text
from probegate.scenarios.models import RunResult, ScenarioRunResult

MESSAGE_MAX = 500
TEXT_MAX = 4000


def render(runs: list[RunResult]) -> bytes:
    root = build(runs)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode", short_empty_elements=True)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n").encode("utf-8")


def build(runs: list[RunResult]) -> ET.Element:
    root = ET.Element("testsuites", {"name": "probegate run"})
    totals = {"tests": 0, "failures": 0, "errors": 0}
    seconds = 0.0
    seen: dict[str, int] = {}
    for run in runs:
        # The CLI refuses two suites of one name; a caller of render() may still pass them.
        seen[run.suite_name] = seen.get(run.suite_name, 0) + 1
        count = seen[run.suite_name]
        suite = _suite(run, run.suite_name if count == 1 else f"{run.suite_name}#{count}")
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
        seconds += run.total_duration_ms / 1000
        root.append(suite)
    root.attrib.update({k: str(v) for k, v in totals.items()})
    root.set("time", _seconds(seconds))
    return root


def _suite(run: RunResult, prefix: str) -> ET.Element:
    errors = sum(r.error is not None for r in run.scenario_results)
    failures = sum(not r.passed and r.error is None for r in run.scenario_results)
    suite = ET.Element(
        "testsuite",
        {
            "name": _text(run.suite_name, MESSAGE_MAX),
            "tests": str(len(run.scenario_results)),
            "failures": str(failures),
            "errors": str(errors),
            "skipped": "0",
            "time": _seconds(run.total_duration_ms / 1000),
        },
    )
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("run_id", run.run_id),
        ("timestamp", run.timestamp),
        ("aggregate_score", number(run.aggregate_score)),
        ("pass_rate", number(run.pass_rate)),
    ):
        qualified = _text(f"{prefix}.{name}", MESSAGE_MAX)
        ET.SubElement(props, "property", {"name": qualified, "value": value})
    for result in run.scenario_results:
        suite.append(_case(run, result))
    return suite


def _case(run: RunResult, result: ScenarioRunResult) -> ET.Element:
    case = ET.Element(
        "testcase",
        {
            "classname": _text(run.suite_name, MESSAGE_MAX),
            "name": _text(result.scenario.name, MESSAGE_MAX),
            "time": _seconds(result.duration_ms / 1000),
        },
    )
    if result.error is not None:
        error = ET.SubElement(
            case, "error", {"type": "adapter_error", "message": _text(result.error, MESSAGE_MAX)}
        )
        error.text = _block(f"{result.error}\nattempts: {result.retry_count + 1}", TEXT_MAX)
    elif not result.passed:
        failed = [s for s in result.scores if not s.passed]
        message = "; ".join(f"{s.scorer_name}: {s.explanation}" for s in failed)
        failure = ET.SubElement(
            case, "failure", {"type": "scenario_failed", "message": _text(message, MESSAGE_MAX)}
        )
        lines = [
            f"{s.scorer_name}: {'pass' if s.passed else 'FAIL'} {number(s.score)} - {s.explanation}"
            for s in result.scores
        ]
        lines.append(f"output: {result.agent_result.output}")
        failure.text = _block("\n".join(lines), TEXT_MAX)
    return case


def _text(text: str, limit: int) -> str:
    """An attribute value: one line, bounded, nothing XML cannot hold."""
    return xml_text(truncate(marked_lines(text), limit))


def _block(text: str, limit: int) -> str:
    """Element text: lines kept, but none may start a GitHub workflow command."""
    return log_xml_text(truncate(text, limit))


def _seconds(value: float) -> str:
    return f"{value:.3f}"
