"""``probegate run`` with an adapter whose agent is hostile (docs/targets.md, "Hostile output").

Any Unicode, any depth, any size is stored, scored and rendered in every output; a pattern
that could backtrack on what the agent says is refused before anything runs (exit 2)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from probegate.cli import main
from probegate.models.bounds import TOOL_CALLS_MAX
from tests.reports.inert import (
    assert_html_inert,
    assert_json_inert,
    assert_markdown_inert,
    assert_terminal_inert,
    assert_xml_inert,
)
from tests.scenarios.helpers import AGENTS, write_suite
from tests.servers.hostile import LACE

IMAGE = r"!\[[^\]]*\]\(https?://[^)\s]*evil\.test"
SCENARIOS = [
    {"name": "surrogate", "input": "surrogate", "expected_output": "calm", "scorers": ["exact"]},
    {"name": "deep", "input": "deep", "expected_tools": ["lookup"], "scorers": ["tools"]},
    {"name": "calls", "input": "calls", "expected_tools": ["lookup"], "scorers": ["tools"]},
    {
        "name": "megabyte",
        "input": "megabyte",
        "scorers": ["regex", "similarity"],
        "expected_output": "fine",
        "metadata": {"regex_pattern": IMAGE},
    },
]


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("fmt", ["json", "agenticassure"])
def test_hostile_results_are_stored_scored_and_rendered(in_tmp: Path, fmt: str) -> None:
    write_suite(in_tmp, "s", SCENARIOS)
    start = time.monotonic()
    argv = ["run", "s.yml", "--adapter", f"{AGENTS}:hostile_output", "--output-dir", "."]
    code = main([*argv, "-o", f"{fmt},junit,md,html"])
    assert code == 1 and time.monotonic() - start < 60  # scenarios fail; nothing crashed or hung
    for name in ("junit.xml", "summary.md"):
        assert (in_tmp / name).stat().st_size > 0
    (html,) = in_tmp.glob("report_*.html")
    assert "\ufffd" in html.read_text("utf-8")
    (path,) = in_tmp.glob("results_*.json")
    data = json.loads(path.read_text("utf-8"))
    if fmt != "json":
        return
    results = {r["scenario"]["name"]: r for r in data["scenario_results"]}
    assert all(r["error"] is None for r in results.values())  # judged, every one
    surrogate = results["surrogate"]["agent_result"]
    assert surrogate["output"] == "half an emoji \ufffd and \ufffd"
    assert surrogate["raw_response"] == '{"self": "[cycle]"}'
    deep = results["deep"]["agent_result"]
    assert deep["tool_calls"][0]["arguments"]["_raw"].startswith('{"q": [[[[')
    assert deep["reasoning_trace"][0].startswith("[[[[")
    calls = results["calls"]["agent_result"]
    assert len(calls["tool_calls"]) == TOOL_CALLS_MAX
    assert calls["cuts"] == [
        {"field": "tool_calls", "length": 10_000, "kept": TOOL_CALLS_MAX, "sha256": ""}
    ]
    megabyte = results["megabyte"]
    (cut,) = megabyte["agent_result"]["cuts"]
    assert (cut["field"], cut["length"]) == ("output", 1_000_000)
    assert {s["scorer_name"]: s["passed"] for s in megabyte["scores"]}["regex"] is False


@pytest.mark.parametrize("pattern", [r"(a+)\1", r"refund(?=ed)", r"(?<!not )approved"])
def test_a_pattern_that_needs_backtracking_is_refused_at_load(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], pattern: str
) -> None:
    scenario = {
        "name": "r",
        "input": "x",
        "scorers": ["regex"],
        "metadata": {"regex_pattern": pattern},
    }
    write_suite(in_tmp, "s", [scenario])
    assert main(["run", "s.yml", "--adapter", f"{AGENTS}:hostile_output"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "metadata.regex_pattern" in err[0] and "RE2" in err[0]
    assert not list(in_tmp.glob("results_*.json"))


def test_a_laced_suite_and_agent_are_inert_in_every_output(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Scenario names and tags from the suite file, and everything the agent returns or raises,
    # carry the lace; the AgenticAssure file holds it as JSON data, every other output inert.
    name = LACE[:200]
    write_suite(
        in_tmp,
        "laced",
        [
            {
                "name": f"n1 {name}",
                "input": "hi",
                "expected_output": f"calm {name}",
                "scorers": ["exact", "similarity"],
                "tags": [name[:50]],
            },
            {"name": f"n2 {name}", "input": "hi", "expected_tools": ["lu"], "scorers": ["tools"]},
            {"name": f"n3 {name}", "input": "raise", "expected_output": "x", "scorers": ["exact"]},
        ],
        description=name,
    )
    argv = ["run", "laced.yml", "--adapter", "tests.servers.hostile:laced_adapter"]
    assert main([*argv, "--output-dir", "out", "-o", "agenticassure,junit,md,html"]) == 1
    captured = capsys.readouterr()
    assert_terminal_inert(captured.out + captured.err)
    assert "ValueError: link 31m" in captured.out  # the raised message, shown and defused
    assert_markdown_inert((in_tmp / "out" / "summary.md").read_text("utf-8"))
    assert_xml_inert((in_tmp / "out" / "junit.xml").read_bytes())
    (html,) = (in_tmp / "out").glob("report_*.html")
    assert_html_inert(html.read_text("utf-8"))
    (results,) = (in_tmp / "out").glob("results_*.json")
    data = json.loads(results.read_text("utf-8"))
    assert data["scenario_results"][0]["agent_result"]["output"] == LACE  # data, verbatim
    assert main([*argv, "--json", "--output-dir", "out2"]) == 1
    summary = assert_json_inert(capsys.readouterr().out)
    assert isinstance(summary, dict) and summary["scenarios"] == 3
