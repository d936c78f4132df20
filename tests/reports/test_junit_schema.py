"""JUnit files as strict consumers read them: Jenkins' xunit schema and xunitparser.

``junit-10.xsd`` is the Jenkins xunit plugin's schema (the shared reference copy, the one pytest
checks its own output against). xunitparser collects the properties of every suite into one
mapping and asserts on a repeated name, so it fails loudly where others silently keep one value.
Both run on real scans (the demo, the demo with a suppressed finding, an unreachable target whose
every probe is unjudged), the hostile sample, and a real ``probegate run``.
"""

from __future__ import annotations

import io
import json
import textwrap
from functools import cache
from pathlib import Path

import pytest
import xmlschema
import xunitparser

from probegate.cli import main
from probegate.reports import junit
from tests.reference import reference_path
from tests.reports.samples import golden_report, hostile_report, scan_to


@cache
def _schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(reference_path("junit", "junit-10.xsd")))


def assert_jenkins_valid(data: bytes) -> None:
    errors = [f"{e.path}: {e.reason}" for e in _schema().iter_errors(io.BytesIO(data))]
    assert errors == [], errors


def assert_xunitparser_reads(data: bytes) -> xunitparser.TestResult:
    _suite, result = xunitparser.parse(io.BytesIO(data))
    return result


def _scan(tmp_path: Path, *argv: str) -> tuple[int, Path]:
    return scan_to(tmp_path, "json,junit", *argv)


def test_the_schema_rejects_what_it_should() -> None:
    """The check can fail: the old root attribute and a case-level file= are both refused."""
    data = junit.render(golden_report())
    bad_root = data.replace(b'<testsuites name="', b'<testsuites skipped="0" name="', 1)
    assert list(_schema().iter_errors(io.BytesIO(bad_root)))
    bad_case = data.replace(b"<testcase ", b'<testcase file="probegate.yml" ', 1)
    assert list(_schema().iter_errors(io.BytesIO(bad_case)))


def test_demo_scan_junit_is_valid_and_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = _scan(tmp_path, "demo")
    assert code == 0
    data = (out / "junit.xml").read_bytes()
    assert_jenkins_valid(data)
    result = assert_xunitparser_reads(data)
    report = json.loads((out / "scan.json").read_text(encoding="utf-8"))
    assert len(result.failures) == len([f for f in report["findings"] if not f["suppressed"]]) > 0
    assert result.testsRun == len(report["results"])


def test_suppressed_finding_scan_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _, first = _scan(tmp_path / "first", "demo")
    report = json.loads((first / "scan.json").read_text(encoding="utf-8"))
    fp = report["findings"][0]["fp"]
    (tmp_path / ".probegate-suppressions.yml").write_text(
        textwrap.dedent(f"""\
            suppressions:
              - fp: "{fp}"
                reason: "accepted: <b>reviewed</b> & signed off ]]>"
            """),
        encoding="utf-8",
    )
    code, out = _scan(tmp_path, "demo")
    assert code == 0
    data = (out / "junit.xml").read_bytes()
    assert_jenkins_valid(data)
    result = assert_xunitparser_reads(data)
    assert any("reviewed" in (case.message or "") for case, _ in result.skipped)


def test_unjudged_scan_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = _scan(
        tmp_path, "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--retries", "0"
    )
    assert code == 3
    data = (out / "junit.xml").read_bytes()
    assert_jenkins_valid(data)
    result = assert_xunitparser_reads(data)
    assert result.skipped and not result.failures


@pytest.mark.parametrize("make", [golden_report, hostile_report], ids=["golden", "hostile"])
def test_sample_reports_are_valid(make) -> None:  # type: ignore[no-untyped-def]
    data = junit.render(make())
    assert_jenkins_valid(data)
    assert_xunitparser_reads(data)


def test_suites_name_the_file_that_defines_the_target() -> None:
    report = golden_report()
    root = _schema().to_dict(io.BytesIO(junit.render(report)))
    suites = root["testsuite"]
    assert suites and {s["@file"] for s in suites} == {report.target.definition.path}


def test_scenario_run_junit_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.py").write_text(
        "def run(input, context):\n    return {'output': 'order A1 shipped'}\n", encoding="utf-8"
    )
    for name in ("one", "two"):  # two suites: their properties must not collide
        (tmp_path / f"{name}.yml").write_text(
            textwrap.dedent(f"""\
                suite: {name}
                scenarios:
                  - name: shipped
                    input: where is A1?
                    expected_output: shipped
                  - name: refunded
                    input: refund A1
                    expected_output: refunded
                """),
            encoding="utf-8",
        )
    code = main(["run", ".", "--adapter", "agent:run", "--output", "junit"])
    assert code == 1
    data = (tmp_path / "probegate-out" / "junit.xml").read_bytes()  # run's default folder
    assert_jenkins_valid(data)
    result = assert_xunitparser_reads(data)
    assert result.testsRun == 4 and len(result.failures) == 2
