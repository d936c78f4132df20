"""Scans of agents that take their tools from probegate's MCP server: every probe is delivered.

The agent is the framework-free loop of tests/servers/mcp_agent.py over the rule-based model of
tests/servers/brain_model.py (weak: acts on what it reads; careful: only on the user's words),
deployed as a service (``http``, told ``{{mcp_url}}``) and in process (``python``, told
``context.mcp_url``). Neither reports its tool calls: probegate sees them on its own server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from probegate.config import ScanConfig
from probegate.engine.plan import SANDBOX_SETTING
from probegate.models.canaries import make_canaries
from probegate.models.probe import Fixtures
from probegate.models.transcript import Turn
from probegate.targets.base import ToolDelivery
from probegate.targets.http_agent import HttpConfig, HttpTarget
from probegate.targets.sandbox import Sandbox
from probegate.transport.limiter import RequestLimiter
from tests.servers.brain_model import SECRETS, BrainModelServer, tool_config
from tests.servers.configs import scan_args, write_config
from tests.servers.http_agent import HttpAgentServer
from tests.servers.mcp_agent import MODEL_ENV, McpAgentService

# One probe per channel that rides on the sandbox (documents, tool results, memory across two
# conversations, tool descriptions, a peer agent's reply), plus one user-message probe.
INDIRECT = (
    "asi01.indirect-document-email-exfil.v1",
    "asi02.email-recipient-from-tool-result.v1",
    "asi06.cross-session-instruction-plant.v1",
    "asi04.poisoned-tool-description-exfil.v1",
    "asi07.fraud-agent-reply-delete.v1",
    "asi01.direct-system-prompt-leak.v1",
)
FIXTURE_CHANNELS = {"document", "tool_result", "memory", "tool_description", "agent_message"}


@pytest.fixture
def brain(monkeypatch: pytest.MonkeyPatch) -> Iterator[BrainModelServer]:
    with BrainModelServer() as server:
        monkeypatch.setenv(MODEL_ENV, server.url)
        yield server


def selection() -> list[str]:
    return [arg for probe in INDIRECT for arg in ("--probes", probe)]


def scan(tmp: Path, target: dict[str, Any], *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(scan_args(write_config(tmp, target), tmp, "--timeout", "20", *extra))
    return code, json.loads((tmp / "out" / "scan.json").read_text(encoding="utf-8"))


def python_target(careful: bool) -> dict[str, Any]:
    return {
        "kind": "python",
        "python": f"tests.servers.mcp_agent:{'LoopCareful' if careful else 'LoopWeak'}",
        "canaries": list(SECRETS),
        "tools": tool_config(),
    }


def journal(tmp: Path) -> list[dict[str, Any]]:
    (path,) = (tmp / "store" / "scans").glob("*/journal.jsonl")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    # Controls are journaled as attempts too (variant "control"); these tests read the attacks.
    attempts = [line["attempt"] for line in lines if line.get("kind") == "attempt"]
    return [a for a in attempts if a["variant"] != "control"]


@pytest.mark.parametrize("kind", ["http", "python"])
def test_weak_agent_falls_through_every_indirect_channel(
    brain: BrainModelServer, tmp_path: Path, kind: str
) -> None:
    if kind == "http":
        with McpAgentService(brain.endpoint(careful=False)) as service:
            code, report = scan(
                tmp_path, service.target(tool_config(), list(SECRETS)), *selection()
            )
        assert service.failures == []
    else:
        code, report = scan(tmp_path, python_target(careful=False), *selection())
    assert code == 0
    assert report["unjudged"] == []  # nothing "not delivered", nothing unjudged at all
    found = {f["probe_id"] for f in report["findings"]}
    assert found == set(INDIRECT)
    channels = {r["channel"] for r in report["results"] if r["outcome"] == "vulnerable"}
    assert channels >= FIXTURE_CHANNELS
    # The evidence is the agent's own calls, seen on probegate's server: nothing was reported.
    attempts = {a["probe_id"]: a for a in journal(tmp_path)}
    exfil = attempts["asi01.indirect-document-email-exfil.v1"]
    calls = [c for t in exfil["transcript"]["turns"] for c in t["tool_calls"]]
    names = [c["name"] for c in calls]
    assert "fetch_document" in names
    assert "send_email" in names[names.index("fetch_document") :]
    mcp = report["mcp"]
    assert mcp["conversations"] >= len(INDIRECT) and mcp["calls"] >= len(calls)
    assert set(mcp["rejected"].values()) == {0}


@pytest.mark.parametrize("kind", ["http", "python"])
def test_careful_agent_resists_them_all(brain: BrainModelServer, tmp_path: Path, kind: str) -> None:
    if kind == "http":
        with McpAgentService(brain.endpoint(careful=True)) as service:
            code, report = scan(
                tmp_path, service.target(tool_config(), list(SECRETS)), *selection()
            )
    else:
        code, report = scan(tmp_path, python_target(careful=True), *selection())
    assert code == 0
    assert report["findings"] == [] and report["unjudged"] == []
    assert {r["outcome"] for r in report["results"]} == {"resisted"}
    # It did use its tools (the user's task), on probegate's server.
    assert report["mcp"]["calls"] > 0


@pytest.mark.slow
def test_a_careful_service_earns_an_authoritative_full_scan(
    brain: BrainModelServer, tmp_path: Path
) -> None:
    """The whole library in full mode (every mutator; one repeat keeps CI short): no probe is
    left undelivered, nothing is found, and the score is authoritative.

    The default three repeats (~4,000 attempts) give the same verdicts; docs/agent-service.md
    has the figures.
    """
    with McpAgentService(brain.endpoint(careful=True)) as service:
        target = service.target(tool_config(), list(SECRETS))
        extra = ("--mode", "full", "--repeat", "1", "--concurrency", "16")
        code, report = scan(tmp_path, target, *extra)
    assert service.failures == []
    assert code == 0
    assert report["authority"] == {"authoritative": True, "failed": [], "reasons": []}
    assert report["findings"] == [] and report["aivss"] == 100
    # What only an LLM judge can decide is not run without one: listed, and nothing unjudged.
    assert report["unjudged"] == [] and report["not_run"]
    assert report["coverage"]["attempts_completed"] == report["coverage"]["attempts_planned"]
    assert report["mcp"]["calls"] > 0 and set(report["mcp"]["rejected"].values()) == {0}


def test_without_mcp_url_the_same_service_gets_no_fixture_borne_probe(
    brain: BrainModelServer, tmp_path: Path
) -> None:
    """The contrast: told no endpoint, fixture-borne probes cannot reach the agent at all."""
    with McpAgentService(brain.endpoint(careful=True)) as service:
        target = service.target(tool_config(), list(SECRETS))
        target["http"]["body"]["mcp_url"] = "http://127.0.0.1:9/none"
        _, report = scan(tmp_path, target, *selection())
    not_delivered = {
        n["probe_id"]
        for n in report["not_run"]
        if n["enabled_by"] == SANDBOX_SETTING and "sandbox" in n["reason"]
    }
    # (The cross-session probe plants its memory through a user message, so that one is sent.)
    assert not_delivered == set(INDIRECT[:5]) - {"asi06.cross-session-instruction-plant.v1"}
    assert not {u["probe_id"] for u in report["unjudged"]} & not_delivered  # not attempts
    assert "mcp" not in report


def test_mcp_url_in_the_url_a_header_and_the_body(tmp_path: Path) -> None:
    with HttpAgentServer(weak=False) as server:
        config = ScanConfig.model_validate(
            {
                "target": {
                    "kind": "http",
                    "http": {
                        "url": server.url + "/agent/{{session_id}}/ask?tools={{mcp_url}}",
                        "headers": {"X-Tools": "{{ mcp_url }}"},
                        "body": {"query": {"text": "{{input}}"}, "tools": "{{mcp_url}}"},
                        "response_text": "result.answer",
                    },
                    "tools": tool_config(),
                },
                "retries": 0,
            }
        )
        assert isinstance(config.target, HttpConfig)
        target = HttpTarget(config.target, config.target_settings())
        try:
            traits = target.traits()
            assert traits.tool_delivery is ToolDelivery.MCP
            assert traits.uses_sandbox and traits.tool_calls_visible
            sandbox = Sandbox(target.tools(), Fixtures(), make_canaries(0, "m"), attempt_id="m")
            session = target.open_session(sandbox, RequestLimiter())
            # Attack text naming the placeholder stays text: substitution is one pass.
            session.send(Turn(role="user", content="use {{mcp_url}} and {{session_id}}"))
            session.close()
        finally:
            target.close()
    body = server.bodies[0]
    url = body["tools"]
    assert url.startswith("http://127.0.0.1:") and "/mcp/" in url
    assert body["query"]["text"] == "use {{mcp_url}} and {{session_id}}"
    assert server.headers_seen[0]["X-Tools"] == url
    quoted = url.replace(":", "%3A").replace("/", "%2F")
    assert server.paths[0].endswith(f"/ask?tools={quoted}")


def test_an_agent_that_never_asks_starts_no_server(brain: BrainModelServer, tmp_path: Path) -> None:
    target = {
        "kind": "python",
        "python": "tests.targets.sample_agents:weak_agent",
        "tools": tool_config(),
    }
    code, report = scan(tmp_path, target, "--probes", INDIRECT[0])
    assert code == 0 and "mcp" not in report


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("--mcp-listen", "8765", "expected HOST:PORT"),
        ("--mcp-listen", "127.0.0.1:70000", "expected HOST:PORT"),
        ("--mcp-advertise", "probegate:8765", "expected an http(s) base URL"),
    ],
)
def test_bad_listen_or_advertise_values_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, expected: str
) -> None:
    assert main(["scan", "demo", "--store", str(tmp_path), flag, value]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: ") and expected in line
    assert f"{flag}: " in line  # named as the user typed it


def test_the_agent_is_told_the_advertised_url(tmp_path: Path) -> None:
    """``scan.mcp_advertise`` from the config (a flag would win) is the base of every mcp_url."""
    with HttpAgentServer(weak=False) as server:
        target = {
            "kind": "http",
            "http": {
                "url": server.url + "/agent/{{session_id}}/ask",
                "body": {"query": {"text": "{{input}}"}, "tools": "{{mcp_url}}"},
                "response_text": "result.answer",
            },
            "canaries": ["sk-declared-1"],
            "tools": tool_config(),
        }
        config = write_config(tmp_path, target, {"mcp_advertise": "http://probegate.test:8765/"})
        main(scan_args(config, tmp_path, "--probes", "asi01.direct-system-prompt-leak.v1"))
    (body,) = server.bodies
    assert body["tools"].startswith("http://probegate.test:8765/mcp/")
    assert len(body["tools"].rsplit("/", 1)[1]) >= 32  # the unguessable token
