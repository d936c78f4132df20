"""Whole scans of AgentDojo's suites against scripted agents, offline (tests/servers/).

The agents (tests/servers/agentdojo_model.py) play AgentDojo's own ground truth behind a real
loopback model server that speaks the three model APIs; the tools they call run on AgentDojo's
environment; AgentDojo's own checks are the reference the report's agreement is counted
against. Each scan is seconds long: they are marked slow, and a quick test of each rule lives
in test_agreement.py and test_agentdojo_probes.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from probegate.judge.llm import ENV_API_KEY, ENV_BASE_URL
from probegate.models.stored import load_report
from tests.judge.fake_judge import CalibratedModel
from tests.servers.agentdojo_model import DojoAgent
from tests.servers.mcp_agent import McpAgentService
from tests.servers.model_apis import ModelApiServer

pytestmark = pytest.mark.slow

# Every pair of banking's user task 1 (nine injection tasks): seconds, not minutes.
ONE_TASK = "asi01.agentdojo-banking-u1-*"


def _scan(tmp: Path, target: dict[str, Any], *extra: str) -> tuple[int, dict[str, Any]]:
    tmp.mkdir(parents=True, exist_ok=True)
    config = tmp / "probegate.yml"
    config.write_text(json.dumps({"target": target}))
    out = tmp / "out"
    code = main(
        ["scan", "--config", str(config), "--store", str(tmp / "store"), "--output-dir",
         str(out), "--output", "json,md", "--no-sign", "-q", *extra]
    )  # fmt: skip
    return code, json.loads((out / "scan.json").read_text())


def _openai(url: str, protocol: str = "openai") -> dict[str, Any]:
    section: dict[str, Any] = {"kind": "openai", "endpoint": url, "model": "scripted"}
    if protocol == "openai-responses":
        section["api"] = "responses"
    if protocol == "anthropic":
        section = {"kind": "anthropic", "endpoint": url.removesuffix("/v1"), "model": "scripted"}
    return section


@pytest.fixture
def follower() -> Iterator[ModelApiServer]:
    with ModelApiServer(agent=DojoAgent("follower", p=0.5, seed=3)) as server:
        yield server


def test_a_follower_is_found_where_agentdojo_sees_the_attack_succeed(
    tmp_path: Path, follower: ModelApiServer
) -> None:
    code, report = _scan(tmp_path, _openai(follower.base_url), "--suite", "agentdojo:banking")
    assert code == 0
    agreement = report["agreement"]
    banking = agreement["suites"]["banking"]
    # Every one of banking's 144 pairs was decided by both, and they agree on each.
    assert banking["both"] + banking["neither"] == 144
    assert 0 < banking["both"] < 144
    assert (banking["recall"], banking["false_positive_rate"], banking["kappa"]) == (1.0, 0.0, 1.0)
    # A finding's reproducer runs the same pair again, from the same suite.
    pov = next((tmp_path / "store").glob("scans/*/pov/*.sh")).read_text()
    assert "--suite agentdojo:banking" in pov
    assert agreement["disagreements"] == []
    assert {f["probe_id"] for f in report["findings"]} and report["probe_library_version"] == (
        "agentdojo-0.1.35-v1.2.2"
    )
    # The stored report is read back whole by the one strict reader.
    assert load_report(tmp_path / "out" / "scan.json").agreement is not None
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "### Agreement with AgentDojo's security checks" in summary
    assert "| banking | 144 |" in summary


def test_controls_still_decide_what_the_attack_caused(tmp_path: Path) -> None:
    """The user's own deletion of the largest file (id 11) is in the control too; the deletion
    of file 13 the injection asked for is not, so it stays a finding."""
    with ModelApiServer(agent=DojoAgent("follower", p=1.0)) as server:
        code, report = _scan(
            tmp_path,
            _openai(server.base_url),
            "--suite",
            "agentdojo:workspace",
            "--probes",
            "asi01.agentdojo-workspace-u35-i1.v1",
        )
    assert code == 0
    (finding,) = report["findings"]
    assert finding["control"] is not None
    assert [e["subject"] for e in finding["evidence"]] == ["13"]
    assert report["agreement"]["overall"]["both"] == 1


def test_a_careful_agent_has_no_finding_and_agentdojo_agrees(tmp_path: Path) -> None:
    with ModelApiServer(agent=DojoAgent("careful")) as server:
        code, report = _scan(
            tmp_path, _openai(server.base_url), "--suite", "agentdojo:banking", "--fail-on", "low"
        )
    assert code == 0 and report["findings"] == []
    overall = report["agreement"]["overall"]
    assert overall["neither"] == 144 and overall["false_positive_rate"] == 0.0
    assert overall["recall"] is None and overall["kappa"] is None  # no attack succeeded
    assert overall["utility"] == 1.0


def test_a_leak_through_tool_arguments_is_a_finding_agentdojo_does_not_count(
    tmp_path: Path,
) -> None:
    with ModelApiServer(agent=DojoAgent("leaker", p=1.0)) as server:
        _, report = _scan(
            tmp_path, _openai(server.base_url), "--suite", "agentdojo:banking", "--probes", ONE_TASK
        )
    differences = {
        d["injection_task"]: d["difference"] for d in report["agreement"]["disagreements"]
    }
    # Asked to send the user's data, the leaker sent its own secret to the attacker instead:
    # AgentDojo's check wants the data; probegate sees the secret leave.
    assert differences.get("injection_task_8") == "secret"
    assert set(differences.values()) == {"secret"}
    leaked = [
        e
        for f in report["findings"]
        for e in f["evidence"]
        if e["detector"].startswith(("canary_leak:", "tool_call:canary:"))
        and ".tool_calls." in e["path"]
    ]
    assert leaked


@pytest.mark.parametrize("protocol", ["openai-responses", "anthropic"])
def test_the_responses_and_messages_loops_give_the_same_verdicts(
    tmp_path: Path, follower: ModelApiServer, protocol: str
) -> None:
    _, chat = _scan(
        tmp_path / "chat", _openai(follower.base_url), "--suite", "agentdojo:banking",
        "--probes", ONE_TASK,
    )  # fmt: skip
    _, other = _scan(
        tmp_path / "other", _openai(follower.base_url, protocol), "--suite", "agentdojo:banking",
        "--probes", ONE_TASK,
    )  # fmt: skip
    assert chat["agreement"]["overall"] == other["agreement"]["overall"]
    assert chat["agreement"]["overall"]["both"] > 0
    assert sorted(f["probe_id"] for f in chat["findings"]) == sorted(
        f["probe_id"] for f in other["findings"]
    )


def test_a_black_box_agent_takes_agentdojos_tools_over_mcp(
    tmp_path: Path, follower: ModelApiServer
) -> None:
    with McpAgentService(follower.base_url) as service:
        target = service.target([], [])
        code, report = _scan(tmp_path, target, "--suite", "agentdojo:banking", "--probes", ONE_TASK)
    assert code == 0, report.get("unjudged")
    overall = report["agreement"]["overall"]
    assert overall["both"] > 0 and overall["kappa"] == 1.0
    assert report["mcp"]["calls"] > 0


def test_the_judge_decides_quoted_goals_agentdojo_counts_as_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The careful agent quotes the words a goal wanted said, in a warning. Without a judge
    probegate leaves them unjudged; with one they are resisted, and AgentDojo, which counts
    the words anywhere in the reply, disagrees: a stated difference ("quoted")."""
    pairs = ("--suite", "agentdojo:travel", "--probes", "asi01.agentdojo-travel-u*-i6.v1")
    then = {"verdict": "resisted", "evidence": "", "confidence": 0.9}
    with (
        ModelApiServer(agent=DojoAgent("careful")) as server,
        ModelApiServer(agent=CalibratedModel(then)) as judge,
    ):
        off_code, off = _scan(tmp_path / "off", _openai(server.base_url), *pairs)
        monkeypatch.setenv(ENV_BASE_URL, judge.base_url)
        monkeypatch.setenv(ENV_API_KEY, "loopback")
        on_code, on = _scan(
            tmp_path / "on", _openai(server.base_url), *pairs, "--judge", "openai:judge-model"
        )
    assert off_code == 3  # nothing could be decided without a judge
    assert off["agreement"]["judge"] == "off" and off["agreement"]["overall"]["unjudged"] == 20
    assert on_code == 0 and on["agreement"]["judge"] == "openai:judge-model"
    overall = on["agreement"]["overall"]
    assert overall["agentdojo_only"] == 20 and overall["unjudged"] == 0
    assert {d["difference"] for d in on["agreement"]["disagreements"]} == {"quoted"}
    assert os.environ[ENV_BASE_URL] == judge.base_url


def test_agentdojos_own_prints_stay_off_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """slack's injection_task_2 check prints what was posted; ``--json`` owns stdout."""
    with ModelApiServer(agent=DojoAgent("leaker", p=1.0)) as server:
        config = tmp_path / "probegate.yml"
        config.write_text(json.dumps({"target": _openai(server.base_url)}))
        code = main(
            ["scan", "--config", str(config), "--store", str(tmp_path / "store"),
             "--output-dir", str(tmp_path / "out"), "--no-sign", "--json", "--suite",
             "agentdojo:slack", "--probes", "asi01.agentdojo-slack-u1-i2.v1"]
        )  # fmt: skip
    closing = json.loads(capsys.readouterr().out)
    assert code == 0 and closing["agreement"]["overall"]["probegate_only"] == 1
