"""Suite files: good ones load as written; a bad one is one UsageError naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from probegate.errors import UsageError
from probegate.scenarios.loader import Suite, load_suite, load_suites, select
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


def test_a_directory_is_searched_recursively_skipping_hidden_dirs_and_config_files(
    tmp_path: Path,
) -> None:
    (tmp_path / "billing" / "refunds").mkdir(parents=True)
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    write_suite(tmp_path / "billing" / "refunds", "deep", [GOOD])
    write_suite(tmp_path / "billing", "mid", [GOOD])
    write_suite(tmp_path, "top", [GOOD])
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text("on: push\n", "utf-8")
    (tmp_path / "agenticassure.yaml").write_text("adapter: agent.Agent\n", "utf-8")
    (tmp_path / "probegate.yml").write_text("target: {kind: demo}\n", "utf-8")
    assert [s.name for s in load_suites(tmp_path)] == ["mid", "deep", "top"]


def test_the_agenticassure_mapping_form_with_every_field(tmp_path: Path) -> None:
    path = tmp_path / "full.yaml"
    path.write_text(
        """suite:
  name: full-suite
  description: every documented field
  config:
    default_timeout: 12.5
    retries: 2
    default_scorers: [passfail]
    fail_fast: true
scenarios:
  - name: s1
    description: what it checks
    input: hello
    expected_output: world
    expected_tools: [tool_a]
    expected_tool_args: {tool_a: {arg: val}}
    tags: [tag1]
    metadata: {regex_pattern: 'w.rld', exact_normalize: false, owner: qa}
    scorers: [passfail, regex, exact]
    timeout_seconds: 5
""",
        "utf-8",
    )
    suite = load_suite(path)
    assert (suite.name, suite.description) == ("full-suite", "every documented field")
    config = suite.config
    assert (config.default_timeout, config.retries, config.fail_fast) == (12.5, 2, True)
    assert config.default_scorers == ["passfail"] and suite.warnings == ()
    (scenario,) = suite.scenarios
    assert scenario.description == "what it checks" and scenario.timeout_seconds == 5.0
    assert scenario.metadata == {"regex_pattern": "w.rld", "exact_normalize": False, "owner": "qa"}
    assert scenario.expected_tool_args == {"tool_a": {"arg": "val"}}


def test_default_scorers_is_read_but_not_applied_as_in_agenticassure(tmp_path: Path) -> None:
    path = tmp_path / "defaults.yml"
    path.write_text(
        "suite: {name: d, config: {default_scorers: [exact]}}\n"
        "scenarios:\n  - {name: a, input: b, expected_output: c}\n"
        "  - {name: e, input: f, scorers: [regex], metadata: {regex_pattern: x}}\n",
        "utf-8",
    )
    suite = load_suite(path)
    assert [s.scorers for s in suite.scenarios] == [["passfail"], ["regex"]]
    (note,) = suite.warnings
    assert "default_scorers: ['exact'] is not applied" in note and "1 scenario(s)" in note


def suites_for_selection(tmp_path: Path) -> list[Suite]:
    write_suite(
        tmp_path,
        "one",
        [{**GOOD, "name": "a", "tags": ["smoke"]}, {**GOOD, "name": "b", "tags": ["slow"]}],
    )
    write_suite(tmp_path, "two", [{**GOOD, "name": "c", "tags": ["slow"]}])
    return load_suites(tmp_path)


def test_suite_and_tag_selection(tmp_path: Path) -> None:
    suites = suites_for_selection(tmp_path)
    picked = select(suites, None, ["smoke"])
    assert [(s.name, [x.name for x in s.scenarios]) for s in picked] == [("one", ["a"])]
    picked = select(suites, "two", [])
    assert [s.name for s in picked] == ["two"]
    picked = select(suites, None, ["smoke", "slow"])
    assert [[x.name for x in s.scenarios] for s in picked] == [["a", "b"], ["c"]]
    assert select(suites, None, []) == suites


@pytest.mark.parametrize(
    ("suite", "tags", "message"),
    [
        ("three", [], "--suite: no suite named 'three' (suites: one, two)"),
        (None, ["smok"], "--tag: no scenario is tagged smok"),
        ("two", ["smoke"], "--tag: no scenario is tagged smoke"),
    ],
)
def test_selecting_nothing_is_a_usage_error(
    tmp_path: Path, suite: str | None, tags: list[str], message: str
) -> None:
    with pytest.raises(UsageError) as info:
        select(suites_for_selection(tmp_path), suite, tags)
    assert info.value.message == message


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
        ({**GOOD, "scorers": ["fuzzy"]}, "scorers: unknown scorer 'fuzzy' (known: exact, passfail"),
        (
            {**GOOD, "expected_tools": "lookup"},
            "('greets').expected_tools: Input should be a valid",
        ),
        ({**GOOD, "timeout_seconds": 0}, "('greets').timeout_seconds: Input should be greater"),
        ({**GOOD, "timeout_seconds": "slow"}, "('greets').timeout_seconds: Input should be a"),
        ({**GOOD, "timeout_seconds": True}, "timeout_seconds: must be a number"),
        ({**GOOD, "metadata": ["x"]}, "('greets').metadata: Input should be a valid dictionary"),
    ],
)
def test_bad_scenarios_name_file_scenario_and_field(
    tmp_path: Path, scenario: dict[str, object], expected: str
) -> None:
    path = write_suite(tmp_path, "bad", [scenario])
    message = error_of(path)
    assert message.startswith(f"{path}: ")
    assert expected in message


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ({**GOOD, "scorers": []}, "('greets').scorers: empty; a scenario with no scorer fails"),
        (
            {"name": "a", "input": "x", "expected_tools": ["t"], "scorers": ["exact"]},
            "('a').expected_output: the exact scorer fails without expected_output",
        ),
        (
            {**GOOD, "scorers": ["regex"]},
            "('greets').metadata.regex_pattern: the regex scorer fails without a pattern here "
            "(expected_output is not read as a pattern)",
        ),
        (
            {**GOOD, "scorers": ["regex"], "metadata": {"regex_pattern": "("}},
            "metadata.regex_pattern: not a valid regular expression",
        ),
        (
            {**GOOD, "scorers": ["regex"], "metadata": {"regex_pattern": 7}},
            "metadata.regex_pattern: must be a string, got 7",
        ),
        (
            {**GOOD, "scorers": ["tools"]},
            "('greets').expected_tools: the tools scorer fails without expected_tools",
        ),
        (
            {**GOOD, "scorers": ["similarity"], "metadata": {"similarity_threshold": 1.5}},
            "('greets').metadata.similarity_threshold: is outside 0..1, got 1.5",
        ),
        (
            {**GOOD, "scorers": ["similarity"], "metadata": {"similarity_threshold": True}},
            "metadata.similarity_threshold: must be a number, got True",
        ),
        (
            {**GOOD, "expected_tool_args": {"lookup": "A1"}},
            "('greets').expected_tool_args.lookup: must map argument names to values, got 'A1'",
        ),
    ],
)
def test_scenarios_that_can_never_pass_load_with_a_warning(
    tmp_path: Path, scenario: dict[str, object], expected: str
) -> None:
    path = write_suite(tmp_path, "never", [scenario])
    (suite,) = load_suites(path)
    (warning,) = suite.warnings
    assert warning.startswith(f"{path}: scenarios[0] ") and expected in warning
    assert warning.endswith("; the scenario will fail") or "no scorer" in warning


def test_passfail_with_nothing_expected_is_a_plain_scenario(tmp_path: Path) -> None:
    (suite,) = load_suites(write_suite(tmp_path, "answer", [{"name": "a", "input": "hi"}]))
    assert suite.warnings == () and suite.scenarios[0].scorers == ["passfail"]


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
        ("suite: {description: d}\nscenarios: [{name: a, input: b}]\n", "suite.name: Field"),
        ("suite: {name: x, tags: [a]}\nscenarios: [{name: a, input: b}]\n", "suite.tags: unknown"),
        (
            "suite: {name: x, config: {retries: -1}}\nscenarios: [{name: a, input: b}]\n",
            "suite.config.retries: Input should be greater than or equal to 0",
        ),
        (
            "suite: {name: x, config: {fail_fast: maybe}}\nscenarios: [{name: a, input: b}]\n",
            "suite.config.fail_fast: Input should be a valid boolean",
        ),
        (
            "suite: {name: x, config: {timeout: 3}}\nscenarios: [{name: a, input: b}]\n",
            "suite.config.timeout: unknown field",
        ),
        (
            "suite: {name: x}\nname: y\nscenarios: [{name: a, input: b}]\n",
            "name: write it as suite.name in the suite: mapping",
        ),
        ("suite: 5\nscenarios: [{name: a, input: b}]\n", "suite: Input should be a valid string"),
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
