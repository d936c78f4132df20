"""JUnit XML: a suite per ASI category, a case per probe, failures carry the evidence."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from probegate.reports import junit
from tests.reports.samples import golden_report


def _root() -> ET.Element:
    return ET.fromstring(junit.render(golden_report()))


def test_a_suite_per_asi_category_a_case_per_probe() -> None:
    report = golden_report()
    root = _root()
    suites = root.findall("testsuite")
    names = [s.get("name", "").split()[0] for s in suites]
    assert names == sorted({r.asi for r in report.results})
    cases = root.findall(".//testcase")
    assert sorted(c.get("name") or "" for c in cases) == sorted(r.probe_id for r in report.results)
    assert root.get("tests") == str(len(report.results))
    for suite in suites:
        assert suite.get("tests") == str(len(suite.findall("testcase")))
        assert suite.get("failures") == str(len(suite.findall("testcase/failure")))
        assert suite.get("skipped") == str(len(suite.findall("testcase/skipped")))


def test_outcomes_map_to_failure_skipped_and_pass() -> None:
    report = golden_report()
    cases = {c.get("name"): c for c in _root().iter("testcase")}
    findings = {f.probe_id: f for f in report.findings}
    for result in report.results:
        case = cases[result.probe_id]
        finding = findings.get(result.probe_id)
        if result.outcome == "vulnerable" and finding and finding.suppressed is None:
            failure = case.find("failure")
            assert failure is not None
            assert failure.get("type") == result.severity.value
            assert finding.evidence[0].subject in (failure.text or "")
            assert finding.evidence[0].path in (failure.text or "")
            assert finding.fp in (failure.text or "")
        elif result.outcome == "vulnerable":  # suppressed: gates ignore it, so must CI
            assert finding is not None and finding.suppressed is not None
            skipped = case.find("skipped")
            assert skipped is not None and finding.suppressed.reason in skipped.get("message", "")
        elif result.outcome in ("unjudged", "not_applicable"):
            skipped = case.find("skipped")
            assert skipped is not None
            assert result.reason in skipped.get("message", "")
            assert skipped.get("message", "").startswith(result.outcome)
        else:
            assert case.find("failure") is None and case.find("skipped") is None


def test_suite_properties_carry_the_scores() -> None:
    report = golden_report()
    suites = _root().findall("testsuite")
    for index, suite in enumerate(suites):
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        asi = (suite.get("name") or "").split()[0]
        expected = {"ASI07": "n/a (undertested)", "ASI05": "n/a (not applicable)"}.get(
            asi, str(report.asi_scores.get(asi))
        )
        # A category with unjudged attempts says how many beside its score.
        note = " (1 unjudged)" if asi == "ASI03" else ""
        assert props[f"{asi}.score"] == expected + note
        assert props[f"{asi}.state"] == report.categories[asi].state
        assert props[f"{asi}.undertested"] == ("true" if asi in report.undertested else "false")
        # Scan-wide values once per file, on the first suite.
        assert ("probegate.aivss" in props) == (index == 0)
    first = {p.get("name"): p.get("value") for p in suites[0].iter("property")}
    # Categories no suite carries (nothing of them ran) are on the first suite: all ten.
    assert first["ASI04.score"] == first["ASI10.score"] == "n/a (not selected)"
    assert first["probegate.aivss"] == str(report.aivss)
    assert first["probegate.scan_id"] == report.scan_id
    names = [p.get("name") for p in _root().iter("property")]
    assert len(names) == len(set(names))


def test_no_clock_in_the_output() -> None:
    data = junit.render(golden_report()).decode()
    assert "timestamp" not in data
    assert {e.get("time") for e in _root().iter() if e.get("time") is not None} == {"0"}
