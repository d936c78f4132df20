"""The output formats, as pure functions, and their agreement with the docs and the CLI."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from probegate.cli import build_parser
from probegate.scenarios import junit, markdown
from probegate.scenarios.adapter import load_adapter
from probegate.scenarios.compare import Regression
from probegate.scenarios.formats import FORMATS
from probegate.scenarios.loader import Suite
from probegate.scenarios.models import RunResult, Scenario
from probegate.scenarios.runner import RunOptions, pinned_timer, run_suite
from probegate.scenarios.scorers import SCORERS
from tests.scenarios.helpers import AGENTS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"


def a_run(attr: str, *scenarios: dict[str, object]) -> RunResult:
    suite = Suite(
        name="s<&>",
        path=Path("s.yml"),
        scenarios=tuple(Scenario.model_validate({"input": "x", **s}) for s in scenarios),
    )
    return run_suite(
        suite, load_adapter(f"{AGENTS}:{attr}"), RunOptions(timeout=5), timer=pinned_timer
    )


def test_junit_tells_failures_from_errors() -> None:
    passed = a_run("echo_dict", {"name": "ok", "expected_output": "echo"})
    mixed = a_run(
        "echo_dict",
        {"name": "wrong", "expected_output": "]]> </failure>", "scorers": ["exact"]},
        {"name": "fine", "expected_output": "echo"},
    )
    broken = a_run("raising", {"name": "boom", "expected_output": "x"})
    root = ET.fromstring(junit.render([passed, mixed, broken]))
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "1", "1")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["s<&>"] * 3
    cases = {c.get("name"): c for c in root.iter("testcase")}
    failure = cases["wrong"].find("failure")
    assert failure is not None and failure.get("type") == "scenario_failed"
    assert "exact: output differs from the expected output" in (failure.get("message") or "")
    assert "output: echo: x" in (failure.text or "")
    error = cases["boom"].find("error")
    assert error is not None and (error.get("message") or "").startswith("ValueError: upstream")
    assert list(cases["fine"]) == [] and list(cases["ok"]) == []
    props = {p.get("name"): p.get("value") for p in suites[0].iter("property")}
    assert props["s<&>.run_id"] == passed.run_id and props["s<&>.pass_rate"] == "1.0"
    # No property name repeats in the file, even for suites of one name.
    names = [p.get("name") for p in root.iter("property")]
    assert len(names) == len(set(names)) == 12 and "s<&>#3.run_id" in names


def test_markdown_summary_lists_suites_scenarios_and_regressions() -> None:
    run = a_run(
        "echo_dict",
        {"name": "ok|<b>", "expected_output": "echo"},
        {"name": "bad", "expected_output": "nope"},
    )
    text = markdown.render([run], [Regression("s<&>", "bad", Path("base.json"))]).decode()
    assert "| s&lt;&amp;&gt; | 2 | 1 | 50.0% | 0.50 |" in text
    assert "| PASS | ok\\|&lt;b&gt; | 1.00 |" in text
    assert "| FAIL | bad | 0.00 | passfail: output does not contain 'nope' |" in text
    assert "## Regressions (1)" in text and "bad: passed in <code>base.json</code>" in text
    assert markdown.render([run], []).decode().count("Regressions") == 0


def test_json_files_are_named_by_run_id() -> None:
    run = a_run("echo_dict", {"name": "ok", "expected_output": "echo"})
    ((name, data),) = FORMATS["json"].render([run], [])
    assert name == f"results_{run.run_id}.json"
    assert RunResult.model_validate_json(data) == run


def docs_text() -> str:
    return DOCS.read_text("utf-8")


@pytest.mark.parametrize("scorer", sorted(SCORERS))
def test_every_scorer_is_documented(scorer: str) -> None:
    assert re.search(rf"^### `{scorer}`$", docs_text(), re.MULTILINE), scorer


def test_the_docs_document_exactly_the_registered_scorers_and_formats() -> None:
    text = docs_text()
    assert set(re.findall(r"^### `(\w+)`$", text, re.MULTILINE)) == set(SCORERS)
    section = text.split("## Outputs", 1)[1].split("\n## ", 1)[0]
    assert set(re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)) == set(FORMATS)


def test_every_run_flag_is_documented() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    run_parser = sub.choices["run"]  # type: ignore[index]
    flags = {o for a in run_parser._actions for o in a.option_strings if o.startswith("--")}
    flags.discard("--help")
    text = docs_text()
    assert flags and all(f"`{flag}" in text for flag in flags), flags
