"""probegate against AgenticAssure 0.4 itself: same suites, same agent, same verdicts.

AgenticAssure is a test-only dependency. Its own command-line program runs the suites (its
``init`` template, suites written here in its format covering every field it documents, and
probegate's example suite), and so does probegate's; :mod:`tests.scenarios.agreement` pairs the
verdicts. The files each tool writes are then read by the other: AgenticAssure's models load
probegate's ``--output agenticassure`` results unchanged, and AgenticAssure's results are a
``--compare`` baseline that compares like with like.
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from agenticassure.reports import CLIReporter, JSONReporter
from agenticassure.results import AgentResult as AAAgentResult
from agenticassure.results import RunResult as AARunResult
from agenticassure.results import ScenarioRunResult as AAScenarioRunResult
from agenticassure.results import ScoreResult as AAScoreResult
from agenticassure.scenario import Scenario as AAScenario
from rich.console import Console

from probegate.cli import main
from tests.scenarios import agreement
from tests.scenarios.agreement import (
    AGENT,
    BIN,
    EXAMPLES,
    agenticassure_run,
    probegate_run,
    verdict,
    verdicts,
    write_suites,
)

# Scenario names that only run through the same code path when both tools agree on selection.
NOT_RUN_AFTER_FAIL_FAST = ("fail-fast-aa", "third_never_runs")


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[agreement.Row]:
    return agreement.all_rows(tmp_path_factory.mktemp("agreement"))


def test_every_suite_shape_loads_and_runs_in_both_tools(rows: list[agreement.Row]) -> None:
    shapes = {r.shape for r in rows}
    assert shapes == {"written for these tests", "agenticassure init", "probegate example"}
    keys = {(r.suite, r.scenario) for r in rows}
    assert ("example-agent-tests", "basic_greeting") in keys  # AgenticAssure's init template
    assert ("minimal", "no_suite_block") in keys  # found in a subdirectory, named by its file
    assert len([r for r in rows if r.suite == "support-aa"]) == 17
    assert not [r for r in rows if "not run" in (r.agenticassure, r.probegate)]
    assert NOT_RUN_AFTER_FAIL_FAST not in keys  # fail_fast stopped both before it


def test_every_comparable_verdict_agrees(rows: list[agreement.Row]) -> None:
    differ = [r for r in rows if not r.note and not r.agrees]
    assert differ == [], agreement.markdown(differ)
    # the scenarios that used to flip, and every verdict kind, are among them
    by_name = {r.scenario: r.probegate for r in rows}
    assert by_name["blank_answer"] == "FAIL" and by_name["answer_only"] == "PASS"
    assert by_name["exact_ignores_case_and_space"] == "PASS"
    assert by_name["only_first_call_counts"] == "FAIL"
    assert by_name["nested_arguments_must_be_equal"] == "FAIL"
    assert by_name["regex_email"] == "PASS"
    assert by_name["regex_pattern_not_in_expected_output"] == "FAIL"
    assert by_name["tool_args_not_a_mapping"] == "ERROR" and by_name["no_scorers"] == "FAIL"


def test_similarity_is_the_one_scorer_not_comparable_offline_and_says_so(
    rows: list[agreement.Row],
) -> None:
    (row,) = [r for r in rows if r.note]
    assert row.scenario == "similarity_offline" and row.agenticassure == "ERROR"
    assert "probegate used its token-overlap fallback" in row.note


@pytest.mark.slow
def test_exit_codes_match(tmp_path: Path) -> None:
    suites = write_suites(tmp_path / "suites")
    assert agenticassure_run(suites, AGENT, tmp_path / "aa")[0] == 1
    assert probegate_run(suites, AGENT, tmp_path / "pg")[0] == 1
    init = agreement.init_template(tmp_path / "init")
    assert agenticassure_run(init, AGENT, tmp_path / "aa-init")[0] == 0
    assert probegate_run(init, AGENT, tmp_path / "pg-init")[0] == 0


@pytest.mark.parametrize("flags", [["-t", "smoke"], ["-s", "fail-fast-aa"], ["--tag", "tools"]])
def test_selection_flags_pick_the_same_scenarios(tmp_path: Path, flags: list[str]) -> None:
    suites = write_suites(tmp_path / "suites")
    aa = agreement.run_tool(
        [str(BIN / "agenticassure"), "run", str(suites), "-a", AGENT, "-o", "json", *flags],
        tmp_path / "aa",
    )[1]
    pg = probegate_run(suites, AGENT, tmp_path / "pg", *flags)[1]
    # AgenticAssure writes an empty results file for a suite with no scenario left
    aa_picked = {k: verdict(v) for k, v in verdicts(aa).items()}
    pg_picked = {k: verdict(v) for k, v in verdicts(pg).items()}
    assert pg_picked and aa_picked == pg_picked


def aa_reads(path: Path) -> AARunResult:
    data = path.read_bytes()
    parsed = AARunResult.model_validate_json(data)
    assert parsed.model_dump(mode="json") == json.loads(data)  # nothing added, nothing lost
    return parsed


def test_agenticassure_reads_probegates_results_unchanged(tmp_path: Path) -> None:
    suites = write_suites(tmp_path / "suites")
    code, results, _ = probegate_run(suites, AGENT, tmp_path / "pg")
    assert code == 1 and len(results) == 3
    for path in sorted((tmp_path / "pg").glob("results_*.json")):
        run = aa_reads(path)
        assert run.model_info == {"name": "both-agent", "version": "1"}
        ids = {sr.scenario.id for sr in run.scenario_results}
        assert len(ids) == len(run.scenario_results)  # AgenticAssure keys scores by scenario id
        assert all(
            score.scenario_id == sr.scenario.id
            for sr in run.scenario_results
            for score in sr.scores
        )
        shown = io.StringIO()
        CLIReporter(Console(file=shown, width=200)).report(run)  # its own terminal report
        assert run.suite_name in shown.getvalue()


def test_the_agenticassure_format_is_reproducible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suites = write_suites(tmp_path / "suites")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    files = []
    for out in ("a", "b"):
        argv = ["run", str(suites), "-a", AGENT, "-o", "agenticassure", "--retry-delay", "0"]
        assert main([*argv, "--output-dir", str(tmp_path / out)]) == 1
        files.append({p.name: p.read_bytes() for p in (tmp_path / out).iterdir()})
    assert files[0] == files[1] and len(files[0]) == 3
    run = aa_reads(tmp_path / "a" / sorted(files[0])[0])
    assert run.timestamp.isoformat() == "2023-11-14T22:13:20+00:00"


def test_agenticassure_validates_probegates_example_suite() -> None:
    done = subprocess.run(
        [str(BIN / "agenticassure"), "validate", str(EXAMPLES)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout
    assert "All 1 file(s) valid" in done.stdout


def test_an_agenticassure_baseline_compares_like_with_like(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    suites = write_suites(tmp_path / "suites")
    agenticassure_run(suites / "support.yaml", AGENT, tmp_path / "aa")
    (baseline,) = (tmp_path / "aa").glob("results_*.json")
    monkeypatch.chdir(tmp_path)
    argv = ["run", str(suites / "support.yaml"), "-a", AGENT, "--retry-delay", "0"]
    argv += ["--output-dir", "pg", "--fail-under-pass-rate", "0", "--compare", str(baseline)]
    assert main(argv) == 0, capsys.readouterr().out  # same agent: no regression at all
    assert "REGRESSION" not in capsys.readouterr().out
    # the baseline is really read: a scenario it says passed and that fails now is one
    data = json.loads(baseline.read_text("utf-8"))
    for sr in data["scenario_results"]:
        if sr["scenario"]["name"] == "blank_answer":
            sr["passed"] = True
    baseline.write_text(json.dumps(data), "utf-8")
    assert main(argv) == 1
    assert "REGRESSION: support-aa/blank_answer was passing, now failing" in (
        capsys.readouterr().out
    )


def embedding_baseline(path: Path, passed: bool, details: dict[str, Any]) -> Path:
    """A results file written by AgenticAssure's own models and JSON reporter."""
    scenario = AAScenario(
        name="similar", input="Hi", expected_output="Greetings, traveller", scorers=["similarity"]
    )
    score = AAScoreResult(
        scenario_id=scenario.id,
        scorer_name="similarity",
        score=0.91 if passed else 0.2,
        passed=passed,
        explanation="Cosine similarity: 0.910 (threshold: 0.7)",
        details=details,
    )
    result = AAScenarioRunResult(
        scenario=scenario,
        agent_result=AAAgentResult(output="Hello! How can I help you today?"),
        scores=[score],
        passed=passed,
    )
    run = AARunResult(suite_name="sim", scenario_results=[result])
    run.compute_aggregates()
    JSONReporter().report(run, output_path=path)
    return path


def test_a_similarity_pass_from_embeddings_is_not_a_regression_of_the_fallback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sim.yaml").write_text(
        "suite: {name: sim}\nscenarios:\n"
        "  - {name: similar, input: Hi, expected_output: 'Greetings, traveller',"
        " scorers: [similarity]}\n",
        "utf-8",
    )
    argv = ["run", "sim.yaml", "-a", AGENT, "-o", "cli", "--fail-under-pass-rate", "0"]
    embedded = embedding_baseline(
        tmp_path / "aa.json", True, {"cosine_similarity": 0.91, "threshold": 0.7}
    )
    assert main([*argv, "--compare", str(embedded)]) == 0
    out = capsys.readouterr().out
    assert "REGRESSION" not in out
    assert (
        "NOT COMPARED: sim/similar passed in the baseline and fails now, but similarity: the "
        "baseline used AgenticAssure's sentence embeddings" in out
    )
    assert "note: similarity in 1 scenario(s): AgenticAssure compares sentence embeddings" in out
    # a baseline judged by the same fallback is like for like: a real regression
    fallback = embedding_baseline(
        tmp_path / "pg.json", True, {"method": "token_overlap", "ratio": 0.9, "threshold": 0.7}
    )
    assert main([*argv, "--compare", str(fallback)]) == 1
    assert "REGRESSION: sim/similar was passing, now failing" in capsys.readouterr().out
