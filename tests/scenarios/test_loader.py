"""Suite files: good ones load as written; a bad one is one UsageError naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from probegate.errors import UsageError
from probegate.scenarios.loader import load_suite, load_suites
from tests.scenarios.helpers import write_suite

GOOD = {"name": "greets", "input": "hi", "expected_output": "hello"}


def error_of(path: Path) -> str:
    with pytest.raises(UsageError) as info:
        load_suites(path)
    message = info.value.message
    assert "\n" not in message and info.value.exit_code == 2
    return message


def test_a_suite_file_loads_with_defaults(tmp_path: Path) -> None:
    path = write_suite(tmp_path, "basic", [GOOD])
    (suite,) = load_suites(path)
    assert suite.name == "basic" and suite.path == path
    scenario = suite.scenarios[0]
    assert scenario.scorers == ["passfail"] and scenario.tags == []
    assert scenario.context is None and scenario.expected_tools is None


def test_name_key_and_file_stem_also_name_the_suite(tmp_path: Path) -> None:
    (tmp_path / "by-name.yml").write_text(
        "name: from-name\nscenarios: [{name: a, input: x, expected_output: y}]\n", "utf-8"
    )
    (tmp_path / "stem.yaml").write_text(
        "scenarios: [{name: a, input: x, expected_output: y}]\n", "utf-8"
    )
    assert [s.name for s in load_suites(tmp_path)] == ["from-name", "stem"]


def test_a_directory_loads_yaml_files_in_name_order_and_ignores_others(tmp_path: Path) -> None:
    write_suite(tmp_path, "b", [GOOD])
    write_suite(tmp_path, "a", [GOOD])
    (tmp_path / "agent.py").write_text("raise SystemExit('never imported')\n", "utf-8")
    assert [s.name for s in load_suites(tmp_path)] == ["a", "b"]


def test_yaml_dates_in_context_become_strings(tmp_path: Path) -> None:
    scenario = {**GOOD, "context": {"since": "2026-01-31"}}
    path = write_suite(tmp_path, "dates", [scenario])
    path.write_text(path.read_text("utf-8").replace("'2026-01-31'", "2026-01-31"), "utf-8")
    assert load_suite(path).scenarios[0].context == {"since": "2026-01-31"}


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ({"name": "a", "expected_output": "y"}, "scenarios[0] ('a').input: Field required"),
        ({**GOOD, "input": ["x"]}, "scenarios[0] ('greets').input: Input should be a valid string"),
        ({**GOOD, "expected_tool": ["x"]}, "scenarios[0] ('greets').expected_tool: unknown field"),
        ({**GOOD, "scorers": []}, "scenarios[0] ('greets').scorers: List should have at least 1"),
        ({**GOOD, "scorers": ["fuzzy"]}, "scorers: unknown scorer 'fuzzy' (known: exact, passfail"),
        (
            {**GOOD, "expected_tools": "lookup"},
            "('greets').expected_tools: Input should be a valid",
        ),
        (
            {"name": "a", "input": "x", "expected_tools": ["t"], "scorers": ["exact"]},
            "scenarios[0] ('a').expected_output: the exact scorer needs expected_output",
        ),
        ({**GOOD, "expected_output": "(", "scorers": ["regex"]}, "not a valid regular expression"),
        (
            {"name": "a", "input": "x", "scorers": ["passfail"]},
            "('a').expected_output: the passfail scorer needs expected_output, expected_tools",
        ),
        (
            {**GOOD, "scorers": ["tools"]},
            "('greets').expected_tools: the tools scorer needs expected_tools",
        ),
        (
            {**GOOD, "scorers": ["similarity"], "metadata": {"similarity_threshold": 1.5}},
            "('greets').metadata.similarity_threshold: must be a number from 0 to 1, got 1.5",
        ),
        (
            {**GOOD, "scorers": ["similarity"], "metadata": {"similarity_threshold": True}},
            "metadata.similarity_threshold: must be a number from 0 to 1, got True",
        ),
    ],
)
def test_bad_scenarios_name_file_scenario_and_field(
    tmp_path: Path, scenario: dict[str, object], expected: str
) -> None:
    path = write_suite(tmp_path, "bad", [scenario])
    message = error_of(path)
    assert message.startswith(f"{path}: ")
    assert expected in message


def test_the_error_names_the_right_scenario_by_index(tmp_path: Path) -> None:
    path = write_suite(tmp_path, "bad", [GOOD, {"name": "second", "input": 3}])
    assert "scenarios[1] ('second').input: Input should be a valid string" in error_of(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "the file is empty; expected a mapping"),
        ("- a\n- b\n", "the file is a list; expected a mapping"),
        ("suite: x\nscenarios: [\n", "invalid YAML: "),
        ("suite: x\nscenarios: []\n", "scenarios: List should have at least 1 item"),
        ("suite: x\n", "scenarios: Field required"),
        (
            "suite: x\nsenarios: []\nscenarios: [{name: a, input: b, expected_output: c}]\n",
            "senarios: unknown field",
        ),
        (
            "suite: x\nname: y\nscenarios: [{name: a, input: b, expected_output: c}]\n",
            "name: 'y' differs from suite: 'x'",
        ),
        (
            "suite: x\nscenarios:\n  - {name: a, input: b, expected_output: c}\n"
            "  - {name: a, input: d, expected_output: e}\n",
            "scenarios[1] ('a').name: duplicate scenario name",
        ),
    ],
)
def test_bad_files_are_one_line_errors(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "suite.yml"
    path.write_text(text, "utf-8")
    message = error_of(path)
    assert message.startswith(f"{path}: ") and expected in message


def test_invalid_yaml_reports_the_line(tmp_path: Path) -> None:
    path = tmp_path / "suite.yml"
    path.write_text("suite: x\nscenarios:\n  - name: a\n   input: b\n", "utf-8")
    assert "(line 4, column" in error_of(path)


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "suite.yml"
    path.write_bytes(b"suite: \xff\n")
    assert error_of(path) == f"{path}: not UTF-8 text"


def test_missing_path_and_empty_directory(tmp_path: Path) -> None:
    assert error_of(tmp_path / "nope.yml") == f"{tmp_path / 'nope.yml'}: no such file or directory"
    assert "no suite files (*.yml, *.yaml)" in error_of(tmp_path)


def test_suite_names_are_unique_across_a_directory(tmp_path: Path) -> None:
    write_suite(tmp_path, "a", [GOOD], suite="same")
    write_suite(tmp_path, "b", [GOOD], suite="same")
    message = error_of(tmp_path)
    assert message.startswith(f"{tmp_path / 'b.yml'}: suite: name 'same' is already used by")
