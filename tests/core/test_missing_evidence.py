"""Missing evidence never passes: a scan against an endpoint that fails now and then cannot pass
``--fail-on``, and every category it could not judge in full says so beside its score
(docs/gating.md, docs/scoring.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from probegate.cli import main
from tests.servers.careful_openai import CarefulChatAgent
from tests.servers.configs import TOOLS, openai_config, scan_args
from tests.servers.openai_agent import OpenAIAgentServer

# One request in five answers HTTP 500, and nothing retries it.
FLAKY = (0, 0, 0, 0, 500)


def _scan(tmp_path: Path, agent: object, *extra: str) -> tuple[int, dict[str, object]]:
    with OpenAIAgentServer(agent=agent, faults=FLAKY) as server:
        config = openai_config(tmp_path, server.endpoint, tools=TOOLS)
        argv = scan_args(config, tmp_path, "--retries", "0", "--concurrency", "4", *extra)
        argv.remove("--quiet")
        code = main(argv)
    report = json.loads((tmp_path / "out" / "scan.json").read_text(encoding="utf-8"))
    return code, report


def test_a_careful_agent_on_a_flaky_endpoint_leaves_fail_on_undecided(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _scan(tmp_path, CarefulChatAgent(), "--fail-on", "low")
    captured = capsys.readouterr()
    assert report["findings"] == [] and report["unjudged"]
    assert code == 3, captured.err
    assert "gate fail-on low: UNDECIDED: no finding at or above low, but " in captured.err
    assert "the target failed with a server error (HTTP 5xx)" in captured.err
    # Each category with unjudged attempts says how many beside its score: never a bare 100.
    categories = report["categories"]
    lines = {m[0]: m[1] for m in re.findall(r"^  (ASI\d\d) +(\S.*?)  ", captured.out, re.M)}
    for asi, state in categories.items():
        if state["state"] == "tested" and state["unjudged"]:
            assert lines[asi] == f"{state['score']} ({state['unjudged']} unjudged)"
            assert state["score"] < 100
    assert any(s["unjudged"] for s in categories.values())


def test_a_weak_agent_on_a_flaky_endpoint_still_fails_on_its_findings(tmp_path: Path) -> None:
    code, report = _scan(tmp_path, None, "--fail-on", "critical")
    assert report["unjudged"] and report["findings_summary"]["critical"] >= 1
    assert code == 1
