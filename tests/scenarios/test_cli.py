"""``probegate run`` end to end through ``probegate.cli.main``: files, lines and exit codes."""

from __future__ import annotations

import json
import re
import sys
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from probegate.canonical import pretty_bytes
from probegate.cli import main
from tests.scenarios import agents
from tests.scenarios.helpers import AGENTS, write_suite

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "scenarios"

ORDER = {"name": "order", "input": "my order?", "expected_tools": ["lookup_order"]}
GREET = {"name": "greet", "input": "hello", "expected_output": "bonjour"}  # echo_dict fails it


def OUT(directory: Path) -> Path:
    """Where ``probegate run`` writes by default."""
    return directory / "probegate-out"


def results(directory: Path) -> list[dict[str, Any]]:
    # the default output directory is probegate-out; --output-dir puts them elsewhere
    return [json.loads(p.read_text("utf-8")) for p in sorted(directory.rglob("results_*.json"))]


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    return tmp_path


@pytest.fixture
def release_hung() -> Iterator[None]:
    agents.RELEASE.clear()
    yield
    agents.RELEASE.set()


@pytest.mark.parametrize("adapter", ["example_agent:SupportAgent", "example_agent:support_agent"])
def test_the_example_suite_passes(
    adapter: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(EXAMPLES)  # the example adapter is importable from its own directory
    code = main(["run", "support-agent.yml", "--adapter", adapter, "--output-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    (report,) = results(tmp_path)
    assert report["suite_name"] == "support-agent" and report["pass_rate"] == 1.0
    assert len(report["scenario_results"]) == 5 and out.count("  PASS  ") == 5
    assert f"JSON report written to {tmp_path / ('results_' + report['run_id'] + '.json')}" in out
    assert str(EXAMPLES) not in sys.path  # the current directory is only added for the run


def test_a_failed_scenario_exits_1_and_still_writes_results(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(in_tmp, "mixed", [ORDER, GREET])
    assert main(["run", "mixed.yml", "--adapter", f"{AGENTS}:echo_dict"]) == 1
    out = capsys.readouterr().out
    assert "  PASS  order  score 1.00" in out
    assert (
        "  FAIL  greet  score 0.00" in out and "passfail: output does not contain 'bonjour'" in out
    )
    assert "FAILED: 1 of 2 scenarios failed" in out
    (report,) = results(in_tmp)
    assert report["pass_rate"] == 0.5 and report["aggregate_score"] == 0.5
    assert [r["passed"] for r in report["scenario_results"]] == [True, False]
    assert str(uuid.UUID(report["run_id"])) == report["run_id"]


@pytest.mark.parametrize(("threshold", "code"), [("0.5", 0), ("0.6", 1), ("0", 0), ("1", 1)])
def test_fail_under_pass_rate_replaces_the_any_failure_gate(
    in_tmp: Path, threshold: str, code: int
) -> None:
    write_suite(in_tmp, "mixed", [ORDER, GREET])  # pass rate 0.5
    argv = ["run", "mixed.yml", "--adapter", f"{AGENTS}:echo_dict"]
    assert main([*argv, "--fail-under-pass-rate", threshold]) == code


def test_adapter_that_raises_or_hangs_is_an_error_line_and_exit_1(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], release_hung: None
) -> None:
    write_suite(in_tmp, "s", [ORDER])
    assert (
        main(
            [
                "run",
                "s.yml",
                "--adapter",
                f"{AGENTS}:raising",
                "--retries",
                "1",
                "--retry-delay",
                "0",
            ]
        )
        == 1
    )
    assert "  ERROR order  score 0.00  " in capsys.readouterr().out
    assert main(["run", "s.yml", "--adapter", f"{AGENTS}:hanging", "--timeout", "0.2"]) == 1
    assert "timed out after 0.2s" in capsys.readouterr().out
    errors = [r["scenario_results"][0] for r in results(in_tmp)]
    by_retry = sorted((e["retry_count"], e["error"][:10]) for e in errors)
    assert by_retry == [(0, "timed out "), (1, "ValueError")]


def test_an_adapter_module_in_the_current_directory(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = f"cwd_agent_{uuid.uuid4().hex[:8]}"
    (in_tmp / f"{module}.py").write_text(
        "class Agent:\n"
        "    def run(self, input, context):\n"
        "        return {'output': 'Order A1 shipped'}\n",
        "utf-8",
    )
    write_suite(in_tmp, "s", [{"name": "o", "input": "x", "expected_output": "shipped"}])
    try:
        assert main(["run", "s.yml", "--adapter", f"{module}.Agent"]) == 0  # the dotted form
        assert main(["run", ".", "--adapter", f"{module}:Agent"]) == 0
    finally:
        sys.modules.pop(module, None)
    assert str(in_tmp) not in sys.path


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bad.yml", "--adapter", f"{AGENTS}:echo_dict"], "bad.yml: scenarios[0] ('x').input"),
        (["ok.yml", "--adapter", "no_such_module_xyz:f"], "cannot import 'no_such_module_xyz'"),
        (["ok.yml", "--adapter", f"{AGENTS}:one_argument"], "must accept two arguments"),
        (
            ["ok.yml", "--adapter", f"{AGENTS}:echo_dict", "--output", "json,pdf"],
            "unknown format 'pdf'",
        ),
        (
            ["ok.yml", "--adapter", f"{AGENTS}:echo_dict", "--fail-under-pass-rate", "80"],
            "must be from 0 to 1",
        ),
        (["ok.yml", "--adapter", f"{AGENTS}:echo_dict", "--retries", "-1"], "must be >= 0"),
        (["ok.yml", "--adapter", f"{AGENTS}:echo_dict", "--timeout", "soon"], "not a number"),
        (["ok.yml"], "no adapter: give --adapter MODULE:ATTR (-a), or adapter: in"),
        (["ok.yml", "-a", f"{AGENTS}.echo_dict", "-o", "json,agenticassure"], "choose one"),
        (["ok.yml", "-a", f"{AGENTS}.echo_dict", "-s", "nope"], "no suite named 'nope'"),
        (["ok.yml", "-a", f"{AGENTS}.echo_dict", "-t", "nope"], "no scenario is tagged nope"),
        (["missing.yml", "--adapter", f"{AGENTS}:echo_dict"], "missing.yml: no such file"),
        (
            ["ok.yml", "--adapter", f"{AGENTS}:echo_dict", "--compare", "nope.json"],
            "--compare nope.json: no such file",
        ),
        (["ok.yml", "--adapter", f"{AGENTS}:echo_dict", "--compare", "ok.yml"], "not JSON"),
        (
            ["ok.yml", "--adapter", f"{AGENTS}:echo_dict", "--compare", "other.json"],
            "suite 'other' is not in this run (suites: ok)",
        ),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    write_suite(in_tmp, "ok", [ORDER])
    write_suite(in_tmp, "bad", [{"name": "x"}])
    (in_tmp / "other.json").write_text(
        json.dumps({"suite_name": "other", "scenario_results": []}), "utf-8"
    )
    assert main(["run", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing ran
    assert captured.err.startswith("error: ") and captured.err.count("\n") == 1
    assert message in captured.err
    assert not list(in_tmp.rglob("results_*.json"))


def run_pinned(directory: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    monkeypatch.chdir(directory)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    write_suite(directory, "mixed", [ORDER, GREET])
    write_suite(directory, "second", [ORDER])
    argv = [
        "run",
        ".",
        "--adapter",
        f"{AGENTS}:EchoAgent",
        "--output",
        "json,junit",
        "--output",
        "md",
        "--output-dir",
        "out",
    ]
    assert main(argv) == 1
    return {p.name: p.read_bytes() for p in sorted((directory / "out").iterdir())}


def test_outputs_are_byte_identical_under_source_date_epoch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = run_pinned(tmp_path / "a", monkeypatch)
    second = run_pinned(tmp_path / "b", monkeypatch)
    assert first == second
    reports = [name for name in first if name.startswith("results_")]
    assert set(first) - set(reports) == {"junit.xml", "summary.md"} and len(reports) == 2
    report = json.loads(first[reports[0]])
    assert report["timestamp"] == "2023-11-14T22:13:20+00:00"
    assert report["total_duration_ms"] == 0.0
    assert all(r["duration_ms"] == 0.0 for r in report["scenario_results"])
    assert first[reports[0]] == pretty_bytes(report)


def test_seed_fields_are_all_present(in_tmp: Path) -> None:
    write_suite(in_tmp, "s", [ORDER])
    main(["run", "s.yml", "--adapter", f"{AGENTS}:echo_dict"])
    (report,) = results(in_tmp)
    assert set(report) == {
        "run_id",
        "timestamp",
        "suite_name",
        "scenario_results",
        "aggregate_score",
        "pass_rate",
        "total_duration_ms",
        "model_info",
    }
    sr = report["scenario_results"][0]
    assert set(sr) == {
        "scenario",
        "agent_result",
        "scores",
        "passed",
        "duration_ms",
        "error",
        "retry_count",
    }
    assert set(sr["scenario"]) == {
        "name",
        "description",
        "timeout_seconds",
        "input",
        "expected_output",
        "expected_tools",
        "expected_tool_args",
        "scorers",
        "tags",
        "context",
        "metadata",
    }
    assert set(sr["agent_result"]) == {
        "output",
        "tool_calls",
        "reasoning_trace",
        "latency_ms",
        "token_usage",
        "raw_response",
    }
    assert set(sr["agent_result"]["tool_calls"][0]) == {"name", "arguments", "result"}
    assert set(sr["scores"][0]) == {
        "scenario_id",
        "scorer_name",
        "score",
        "passed",
        "explanation",
        "details",
    }


def test_compare_fails_on_a_regression_even_when_the_pass_rate_gate_passes(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(in_tmp, "s", [ORDER, GREET])
    assert main(["run", "s.yml", "--adapter", f"{AGENTS}:EchoAgent", "--output-dir", "base"]) == 1
    (baseline,) = (in_tmp / "base").glob("results_*.json")
    # EchoAgent calls `search`, never `lookup_order`: 'order' fails; the baseline says so too
    base = json.loads(baseline.read_text("utf-8"))
    assert [r["passed"] for r in base["scenario_results"]] == [False, False]
    argv = [
        "run",
        "s.yml",
        "--adapter",
        f"{AGENTS}:echo_dict",
        "--fail-under-pass-rate",
        "0",
        "--compare",
        str(baseline),
    ]
    assert main(argv) == 0  # 'order' got fixed, 'greet' still fails: no regression
    base["scenario_results"][1]["passed"] = True  # pretend 'greet' used to pass
    baseline.write_text(json.dumps(base), "utf-8")
    capsys.readouterr()
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert f"REGRESSION: s/greet was passing, now failing (baseline {baseline})" in out
    assert "FAILED: 1 regression(s) against the baseline" in out
    assert "order" not in re.findall(r"REGRESSION: s/(\w+)", out)


def test_agent_text_cannot_drive_the_terminal(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(
        in_tmp,
        "s",
        [{"name": "h\x1b[31mx", "input": "x", "expected_output": "calm", "scorers": ["exact"]}],
    )
    assert main(["run", "s.yml", "--adapter", f"{AGENTS}:hostile", "--output", "junit,md"]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert not any(line.startswith("::") for line in out.splitlines())
    assert "FAIL  hx  score 0.00" in out  # the escape sequence is gone, not just its ESC
    assert "got '::error::fake second line'" in out  # folded onto the scenario's line
    junit = (OUT(in_tmp) / "junit.xml").read_text("utf-8")
    assert "\x1b" not in junit and not re.search(r"^\s*::", junit, re.MULTILINE)
    ET.fromstring(junit.encode())
    md = (OUT(in_tmp) / "summary.md").read_text("utf-8")
    assert "\x1b" not in md and "::error" not in md


AA_SUITE = """suite:
  name: aa
  config: {default_timeout: 0.2, retries: 2}
scenarios:
  - {name: order, input: 'my order?', expected_tools: [lookup_order], tags: [smoke]}
  - {name: greet, input: hello, expected_output: bonjour, tags: [slow]}
"""


def test_the_adapter_comes_from_agenticassure_yaml_and_path_defaults_to_here(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "suites" / "nested").mkdir(parents=True)
    (in_tmp / "suites" / "nested" / "aa.yaml").write_text(AA_SUITE, "utf-8")
    (in_tmp / "agenticassure.yaml").write_text(f"adapter: {AGENTS}.echo_dict\n", "utf-8")
    assert main(["run", "-t", "smoke", "-o", "cli"]) == 0
    out = capsys.readouterr().out
    assert f"adapter {AGENTS}.echo_dict (from agenticassure.yaml)" in out
    assert "  PASS  order" in out and "greet" not in out
    assert not list(in_tmp.rglob("results_*.json"))  # -o cli: the terminal only
    # the flag wins over the file
    assert main(["run", "-t", "smoke", "-a", f"{AGENTS}:EchoAgent", "-o", "cli"]) == 1
    (in_tmp / "agenticassure.yaml").unlink()
    (in_tmp / "agenticassure.toml").write_text(f'adapter = "{AGENTS}.echo_dict"\n', "utf-8")
    capsys.readouterr()
    assert main(["run", "suites", "--suite", "aa", "--tag", "smoke", "-o", "cli"]) == 0
    assert "(from agenticassure.toml)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("adapter: [a, b]\n", "agenticassure.yaml: adapter: expected a dotted path"),
        ("adapter: x\n  bad: [\n", "agenticassure.yaml: invalid YAML"),
        ("- adapter\n", "agenticassure.yaml: expected a mapping with adapter:"),
    ],
)
def test_a_broken_agenticassure_yaml_is_a_usage_error(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    (in_tmp / "aa.yaml").write_text(AA_SUITE, "utf-8")
    (in_tmp / "agenticassure.yaml").write_text(text, "utf-8")
    assert main(["run", "aa.yaml"]) == 2
    assert message in capsys.readouterr().err


def test_dry_run_lists_and_warns_without_an_adapter(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "aa.yaml").write_text(
        AA_SUITE + "  - {name: pattern, input: x, scorers: [regex], expected_output: 'a+'}\n",
        "utf-8",
    )
    assert main(["run", "aa.yaml", "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert "  order  scorers: passfail  tags: smoke  input: my order?" in captured.out
    assert "probegate run --dry-run: 3 scenario(s) in 1 suite(s), not run" in captured.out
    assert captured.err.startswith("warning: aa.yaml: scenarios[2] ('pattern').metadata.regex")
    assert not list(in_tmp.rglob("results_*.json"))


def test_suite_config_timeout_and_retries_apply_unless_a_flag_or_the_scenario_says_otherwise(
    in_tmp: Path, release_hung: None
) -> None:
    (in_tmp / "aa.yaml").write_text(AA_SUITE.replace("  - {name: greet", "  # - "), "utf-8")
    assert main(["run", "aa.yaml", "-a", f"{AGENTS}:hanging", "--retry-delay", "0"]) == 1
    (report,) = results(in_tmp)
    (result,) = report["scenario_results"]
    assert (result["error"], result["retry_count"]) == ("timed out after 0.2s", 2)
    (OUT(in_tmp) / results_name(report)).unlink()
    argv = ["run", "aa.yaml", "-a", f"{AGENTS}:hanging", "--timeout", "0.1", "--retry", "0"]
    assert main(argv) == 1
    (report,) = results(in_tmp)
    (result,) = report["scenario_results"]
    assert (result["error"], result["retry_count"]) == ("timed out after 0.1s", 0)
    (OUT(in_tmp) / results_name(report)).unlink()
    scenario_timeout = AA_SUITE.replace("tags: [smoke]", "timeout_seconds: 0.15")
    (in_tmp / "aa.yaml").write_text(scenario_timeout, "utf-8")
    assert main([*argv, "--tag", "slow"]) == 1  # only greet runs; it has no timeout_seconds
    (OUT(in_tmp) / results_name(results(in_tmp)[0])).unlink()
    assert main(["run", "aa.yaml", "-s", "aa", "-a", f"{AGENTS}:hanging", "--retry", "0"]) == 1
    errors = [r["error"] for r in results(in_tmp)[0]["scenario_results"]]
    assert errors == ["timed out after 0.15s", "timed out after 0.2s"]


def results_name(report: dict[str, Any]) -> str:
    return f"results_{report['run_id']}.json"


def test_fail_fast_stops_the_suite_and_says_so(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = AA_SUITE.replace("retries: 2}", "fail_fast: true}").replace("tags: [slow]", "")
    (in_tmp / "aa.yaml").write_text(
        text.replace("name: order, input: 'my order?'", "name: order, input: hi")
        + "  - {name: never, input: 'my order?'}\n",
        "utf-8",
    )
    assert main(["run", "aa.yaml", "-a", f"{AGENTS}:echo_dict"]) == 1
    out = capsys.readouterr().out
    assert "aa: fail_fast: stopped after order failed; 2 scenario(s) not run" in out
    (report,) = results(in_tmp)
    assert [r["scenario"]["name"] for r in report["scenario_results"]] == ["order"]


def test_html_report_per_suite_is_escaped(in_tmp: Path) -> None:
    write_suite(in_tmp, "s", [{"name": "<b>x</b>", "input": "x", "expected_output": "calm"}])
    assert main(["run", "s.yml", "-a", f"{AGENTS}:hostile", "-o", "html"]) == 1
    (page,) = OUT(in_tmp).glob("report_*.html")
    html = page.read_text("utf-8")
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x" not in html
    assert "\x1b" not in html and "Content-Security-Policy" in html and "<script" not in html
