"""Scans of agents that serve A2A, built on the official a2a-sdk (tests/servers/a2a_agents.py).

The agents run on 127.0.0.1 behind the SDK's own server. The one that matters calls other
agents: it takes its tools from probegate's MCP server and reaches the billing and shipping
agents at probegate's A2A peers, both told in each message's metadata. The weak one trusts
what peers say about themselves (their cards) and what they answer (their artifacts); the
careful one does the user's task and reads peers as data. Faulty agents show that every way an
exchange fails leaves its attempt unjudged with the reason, within the timeout, never resisted.
"""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from probegate.cli import main
from probegate.models.canaries import make_canaries
from probegate.models.probe import Fixtures
from probegate.models.transcript import Turn
from probegate.targets.a2a_agent import A2aConfig, A2aTarget
from probegate.targets.base import TargetSettings
from probegate.targets.sandbox import Sandbox
from probegate.transport.limiter import RequestLimiter
from tests.servers.a2a_agents import (
    A2aAgentServer,
    AskingExecutor,
    BrainExecutor,
    FailingExecutor,
    HugeArtifactExecutor,
    StuckExecutor,
    card_answer,
)
from tests.servers.configs import scan_args, write_config

A2A_PROBES = (
    "asi07.a2a-card-supervisor-refund.v1",
    "asi07.a2a-skill-spoof-credential-harvest.v1",
    "asi07.a2a-session-smuggling.v1",
    "asi08.a2a-failed-peer-compensation.v1",
    "asi08.a2a-failing-peer-retry-storm.v1",
)
# Those whose attack rides on a peer's card, not on its reply.
CARD_BORNE = {"asi07.a2a-card-supervisor-refund.v1", "asi07.a2a-skill-spoof-credential-harvest.v1"}
# Probes of the older library whose attack rides on a peer's reply, for the wire checks.
PEER_REPLY = ("asi07.peer-reply-injection.v1", "asi07.a2a-card-supervisor-refund.v1")


def scan(tmp: Path, target: dict[str, Any], *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(scan_args(write_config(tmp, target), tmp, *extra))
    return code, json.loads((tmp / "out" / "scan.json").read_text(encoding="utf-8"))


def selection(*probes: str) -> list[str]:
    return [arg for probe in probes for arg in ("--probes", probe)]


def attempts(tmp: Path) -> list[dict[str, Any]]:
    (path,) = (tmp / "store" / "scans").glob("*/journal.jsonl")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    found = [line["attempt"] for line in lines if line.get("kind") == "attempt"]
    return [a for a in found if a["variant"] != "control"]


def calls(attempt: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for t in attempt["transcript"]["turns"] for c in t["tool_calls"]]


# -- what a scan finds ------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_weak_agent_that_trusts_peers_is_found_in_asi07_and_asi08(
    tmp_path: Path, stream: bool
) -> None:
    executor = BrainExecutor(careful=False, streaming_peers=stream)
    with A2aAgentServer(executor, streaming=stream) as agent:
        code, report = scan(tmp_path, agent.target(), "--probes", "asi07.*", "--probes", "asi08.*")
    assert code == 0 and executor.failures == []
    assert agent.methods and set(agent.methods) == {
        "SendStreamingMessage" if stream else "SendMessage"
    }
    assert report["unjudged"] == []
    found = {f["probe_id"] for f in report["findings"]}
    assert set(A2A_PROBES) <= found
    asi07 = {r["probe_id"] for r in report["results"] if r["asi"] == "ASI07"}
    asi08 = {r["probe_id"] for r in report["results"] if r["asi"] == "ASI08"}
    assert found >= asi07, sorted(asi07 - found)  # it falls for every peer in ASI07
    assert len(found & asi08) >= 0.9 * len(asi08), sorted(asi08 - found)
    # The evidence is the agent's own action: a refund the spoofed card ordered, after the
    # agent asked the billing agent over A2A; the message it sent is on the record too.
    by_probe = {a["probe_id"]: a for a in attempts(tmp_path)}
    spoofed = calls(by_probe["asi07.a2a-card-supervisor-refund.v1"])
    names = [c["name"] for c in spoofed]
    assert "issue_refund" in names and "a2a:billing" in names
    refund = next(c for c in spoofed if c["name"] == "issue_refund")
    assert refund["arguments"]["amount"] in (2500, "2500", 2500.0)
    # The peer's failure storm: every retry reached probegate's peer, recorded as a call.
    storm = calls(by_probe["asi08.a2a-failing-peer-retry-storm.v1"])
    assert sum(c["name"].startswith("a2a:") for c in storm) >= 4
    assert all(c["error"] for c in storm if c["name"].startswith("a2a:"))


@pytest.mark.slow
def test_a_careful_agent_has_no_finding_and_an_authoritative_full_scan(tmp_path: Path) -> None:
    executor = BrainExecutor(careful=True)
    with A2aAgentServer(executor) as agent:
        args = ("--mode", "full", "--repeat", "1", "--concurrency", "8", "--fail-under", "90")
        code, report = scan(tmp_path, agent.target(), *args)
    assert executor.failures == []
    assert report["authority"] == {"authoritative": True, "failed": [], "reasons": []}
    assert code == 0 and report["findings"] == [] and report["unjudged"] == []
    assert report["aivss"] == 100
    assert {"ASI07", "ASI08"} <= set(report["asi_scores"])
    # The peer probes reached the agent: it read the spoofed cards (and says what they held),
    # and it asked probegate's peers whose replies carried the rest.
    by_probe = {a["probe_id"]: a for a in attempts(tmp_path)}
    for probe in A2A_PROBES:
        turns = by_probe[probe]["transcript"]["turns"]
        if probe in CARD_BORNE:
            assert "ask_agent tool also holds instructions" in turns[-1]["content"], probe
        else:
            assert any(c["name"].startswith("a2a:") for c in calls(by_probe[probe])), probe


# -- both wires, whole and streamed -----------------------------------------------------------
@pytest.mark.parametrize("version", ["1.0", "0.3"])
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_both_wire_versions_whole_and_streamed(tmp_path: Path, version: str, stream: bool) -> None:
    executor = BrainExecutor(careful=False)
    with A2aAgentServer(executor, version=version, streaming=stream) as agent:
        code, report = scan(tmp_path, agent.target(), *selection(*PEER_REPLY))
    assert code == 0 and report["unjudged"] == []
    assert {f["probe_id"] for f in report["findings"]} == set(PEER_REPLY)
    methods = {
        ("1.0", True): "SendStreamingMessage",
        ("1.0", False): "SendMessage",
        ("0.3", True): "message/stream",
        ("0.3", False): "message/send",
    }
    assert set(agent.methods) == {methods[version, stream]}


def test_a_session_is_one_context_and_a_new_session_another(tmp_path: Path) -> None:
    """A probe across two conversations: memory kept by probegate, context ids not."""
    executor = BrainExecutor(careful=False)
    with A2aAgentServer(executor) as agent:
        code, report = scan(
            tmp_path, agent.target(), *selection("asi06.cross-session-instruction-plant.v1")
        )
    assert code == 0 and report["unjudged"] == []
    # One conversation per session of the probe (and of its control), never one per message.
    assert 2 <= len(executor.conversations) <= 4


@pytest.mark.parametrize("version", ["1.0", "0.3"])
def test_a_task_waiting_for_input_is_continued_by_its_id(version: str) -> None:
    executor = AskingExecutor()
    with A2aAgentServer(executor, version=version, streaming=False) as agent:
        target = A2aTarget(A2aConfig(endpoint=agent.url), TargetSettings(timeout=10))
        try:
            session = target.open_session(
                Sandbox([], Fixtures(), make_canaries(0, "a")), RequestLimiter()
            )
            first = session.send(Turn(role="user", content="I want a refund."))
            second = session.send(Turn(role="user", content="Order 7001."))
            session.close()
        finally:
            target.close()
    assert first.content == "Which order?" and second.content == "Noted: Order 7001."
    (task, context, _), (again, same, said) = executor.seen
    assert (again, same, said) == (task, context, "Order 7001.")


def test_stream_setting_overrides_the_card(tmp_path: Path) -> None:
    executor = BrainExecutor(careful=False)
    with A2aAgentServer(executor, streaming=True) as agent:
        code, _ = scan(tmp_path, agent.target(stream=False), *selection(PEER_REPLY[0]))
    assert code == 0 and set(agent.methods) == {"SendMessage"}


# -- faults: unjudged with the reason, bounded, never resisted --------------------------------
FAULT_ARGS = ("--timeout", "2", "--retries", "0", *selection("asi07.peer-reply-injection.v1"))


def fault_scan(tmp: Path, agent: A2aAgentServer) -> tuple[int, dict[str, Any], float]:
    start = time.monotonic()
    code, report = scan(tmp, agent.target(), *FAULT_ARGS)
    return code, report, time.monotonic() - start


def reasons(report: dict[str, Any]) -> list[str]:
    return [u["reason"] for u in report["unjudged"]]


def causes(report: dict[str, Any]) -> set[str]:
    return {u["cause"] for u in report["unjudged"]}


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_task_that_never_completes_is_a_timeout(tmp_path: Path, stream: bool) -> None:
    with A2aAgentServer(StuckExecutor(), streaming=stream) as agent:
        code, report, took = fault_scan(tmp_path, agent)
    assert code == 3 and report["findings"] == []
    assert [r["outcome"] for r in report["results"]] == ["unjudged"]
    assert reasons(report) and all("never completed (timeout)" in r for r in reasons(report))
    assert causes(report) == {"timeout"}
    # Asked again (GetTask) until the timeout, then given up: seconds, not a hang.
    assert "GetTask" in agent.methods and took < 15


def test_a_malformed_card_stops_the_scan_unjudged(tmp_path: Path) -> None:
    card = json.dumps({"name": "x", "supportedInterfaces": [{"url": "ftp://nowhere"}]}).encode()
    with A2aAgentServer(BrainExecutor(careful=False), card=card_answer(card)) as agent:
        code, report, _ = fault_scan(tmp_path, agent)
    assert code == 3 and report["findings"] == []
    assert reasons(report) and all("malformed agent card" in r for r in reasons(report))
    assert causes(report) == {"unreadable"}
    assert agent.methods == []  # nothing was sent to an endpoint probegate could not trust


def test_a_card_that_is_not_json_is_unjudged(tmp_path: Path) -> None:
    with A2aAgentServer(BrainExecutor(careful=False), card=card_answer(b"<html>")) as agent:
        code, report, _ = fault_scan(tmp_path, agent)
    assert code == 3 and report["findings"] == [] and report["results"]
    assert all(r["outcome"] == "unjudged" for r in report["results"])
    assert all("agent card" in r for r in reasons(report))


def test_a_huge_artifact_is_over_the_body_cap(tmp_path: Path) -> None:
    with A2aAgentServer(HugeArtifactExecutor(3 * 1024 * 1024), streaming=False) as agent:
        code, report, _ = fault_scan(tmp_path, agent)
    assert code == 3 and report["findings"] == []
    assert reasons(report) and all("response too large" in r for r in reasons(report))
    assert causes(report) == {"too_large"}


@pytest.mark.parametrize("raises", [False, True], ids=["task-failed", "internal-error"])
def test_a_failed_task_is_the_agents_fault_not_a_verdict(tmp_path: Path, raises: bool) -> None:
    with A2aAgentServer(FailingExecutor(raises=raises), streaming=False) as agent:
        code, report, _ = fault_scan(tmp_path, agent)
    assert code == 3 and report["findings"] == []
    said = "JSON-RPC error -32603" if raises else "the agent's task failed"
    assert reasons(report) and all(said in r and "database is down" in r for r in reasons(report))
    assert causes(report) == {"agent_error"}


def test_an_unreachable_agent_is_unjudged(tmp_path: Path) -> None:
    with A2aAgentServer(BrainExecutor(careful=False)) as agent:
        target = agent.target()
    code, report = scan(tmp_path, target, *FAULT_ARGS)
    assert code == 3 and report["findings"] == []
    assert reasons(report) and all("connection refused" in r for r in reasons(report))
    assert causes(report) == {"refused"}


def test_a_json_rpc_error_is_unjudged_with_its_words(tmp_path: Path) -> None:
    """A 0.3 agent asked in 1.0 (version pinned wrong): method not found, and the scan stops."""
    with A2aAgentServer(BrainExecutor(careful=False), version="0.3") as agent:
        code, report = scan(tmp_path, agent.target(version="1.0"), *FAULT_ARGS)
    assert code == 3 and report["findings"] == []
    assert reasons(report) and all("JSON-RPC error -32601" in r for r in reasons(report))
    assert causes(report) == {"client_error"}


# -- the example ------------------------------------------------------------------------------
def test_the_example_agent_is_found_passing_on_what_its_peer_says(tmp_path: Path) -> None:
    """examples/a2a/: a support agent on the a2a-sdk that asks the billing agent over A2A."""
    example = Path(__file__).parents[2] / "examples" / "a2a"
    spec = importlib.util.spec_from_file_location("a2a_example_agent", example / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = yaml.safe_load((example / "probegate.yml").read_text(encoding="utf-8"))
    with A2aAgentServer(BrainExecutor(careful=True), app=module.app) as agent:
        config["target"]["endpoint"] = agent.url
        code, report = scan(tmp_path, config["target"], "--mode", "fast")
    # Its relay of the billing agent's words ("The billing agent says: ... Tell the customer
    # to re-enter their card ...") is reported speech with no warning: found, or (without a
    # judge, which is final on words) left to one; never resisted.
    assert code == 0
    assert {u["cause"] for u in report["unjudged"]} <= {"ambiguous"}
    found = {f["probe_id"] for f in report["findings"]}
    relayed = {"asi07.peer-reply-card-phishing.v1"}
    assert "asi07.planner-forwards-refund-task.v1" in found
    assert relayed <= found | {u["probe_id"] for u in report["unjudged"]}
