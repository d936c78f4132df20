"""``probegate init`` for an agent that runs its own loop: the model-API proxy route.

The config is read by the real config reader; the end-to-end test is the first week of a team
whose agent is built on the official openai SDK with its own tools: ``init`` writes the file,
the agent is started with the base URL ``init`` printed, and the first gated scan finds what
the weak model does while safe mode keeps every e-mail and refund from running.
"""

from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from probegate.cli import main
from probegate.config import build_config, read_config_file
from probegate.scaffold import PROXY_APIS, Proxy, Route, Tool, config_text, starter_agent
from tests.servers.base import Handler, LoopbackServer

ROOT = Path(__file__).parents[2]
# The tools of tests/servers/own_tools.py, as a team would declare them to init.
OWN_TOOLS = [
    "lookup_customer:Look up a customer record by id.",
    "fetch_document:Fetch a document or web page by URL.",
    "send_email:Send an email on the customer's behalf.",
    "issue_refund:Refund an order.",
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _target(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    target: dict[str, Any] = data["target"]
    return target


@pytest.mark.parametrize("api", list(PROXY_APIS))
@pytest.mark.parametrize("kind", ["http", "python"])
def test_the_proxy_route_reads_back_as_the_kinds_config(
    tmp_path: Path, kind: str, api: str
) -> None:
    route = Route(kind, tools=(Tool("send_email", "Send mail"),), proxy=Proxy(api))
    path = tmp_path / "probegate.yml"
    text = config_text(route)
    path.write_text(text, encoding="utf-8")
    data = read_config_file(path)
    proxy = data["target"]["model_proxy"]
    upstream, key_env, base_env = PROXY_APIS[api]
    assert proxy == {
        "api": api,
        "listen": "127.0.0.1:8790",
        "upstream": upstream,
        "upstream_api_key_env": key_env,
    }
    config = build_config(data, {"base_dir": tmp_path}, source=str(path))
    assert config.target.kind == kind
    # The comments say what changes with the proxy, and never the text-only warning.
    assert "without it, probes judge the reply's text only" not in text
    assert "sees every tool call the model asks for" in text
    base = "http://127.0.0.1:8790" + ("" if api.startswith("anthropic") else "/v1")
    assert base in text and (base_env in text or kind == "python")
    assert "parameters:" not in text  # the agent's own requests carry the schemas


def test_without_the_proxy_the_http_route_says_what_text_only_means(tmp_path: Path) -> None:
    text = config_text(Route("http", tools=(Tool("send_email", "Send mail"),)))
    assert "without it, probes judge the reply's text only" in text
    assert "model_proxy" not in text


def test_init_prints_the_base_url_to_give_the_agent(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["init", "--kind", "http", "--model-proxy", "anthropic-messages", "--listen"]
    assert main([*argv, "127.0.0.1:9911", "--tool", OWN_TOOLS[2]]) == 0
    said = capsys.readouterr().out
    assert (
        "start your agent with ANTHROPIC_BASE_URL=http://127.0.0.1:9911 (the proxy) and its own "
        "ANTHROPIC_API_KEY, the key the proxy sends upstream" in said
    )
    target = _target(in_tmp / "probegate.yml")
    assert target["model_proxy"]["listen"] == "127.0.0.1:9911"
    assert target["tools"] == [
        {
            "name": "send_email",
            "description": "Send an email on the customer's behalf.",
            "capabilities": ["egress"],
        }
    ]
    assert main(["scan", "--dry-run"]) == 0
    assert "probegate scan" not in capsys.readouterr().err


def test_the_python_route_behind_the_proxy_gets_a_starter_that_says_so(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", "--kind", "python", "--model-proxy", "openai-responses"]) == 0
    text = (in_tmp / "agent.py").read_text(encoding="utf-8")
    assert "context.model_base_url" in text and "http://127.0.0.1:8790/v1" in text
    assert "your agent's model client: base URL http://127.0.0.1:8790/v1" in (
        capsys.readouterr().out
    )
    spec = starter_agent("agent:run", Proxy("openai-chat"))
    assert spec is not None and "OPENAI_BASE_URL" in spec[1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--kind", "openai", "--model-proxy", "openai-chat"],
            "--model-proxy is for an agent that calls its model itself (kind http or python); "
            "with kind openai, probegate calls the model",
        ),
        (["--kind", "http", "--listen", "127.0.0.1:1"], "--listen needs --model-proxy API"),
        (
            ["--kind", "http", "--model-proxy", "openai-chat", "--listen", "localhost"],
            "--listen 'localhost': give HOST:PORT",
        ),
        (
            ["--kind", "http", "--model-proxy", "openai-chat", "--upstream", "api.openai.com"],
            "--upstream 'api.openai.com' is not an http(s) URL",
        ),
        (
            ["--kind", "http", "--model-proxy", "openai-chat", "--upstream-api-key-env", "sk-1"],
            "--upstream-api-key-env 'sk-1' is not an environment variable's name",
        ),
        (["--kind", "http", "--model-proxy", "openai-chats"], "(did you mean 'openai-chat'?)"),
        (["--kind", "python", "--start", "python a.py"], "--start is the command that starts"),
        (
            [
                "--kind",
                "http",
                "--endpoint",
                "https://a.example/chat",
                "--workflow",
                "--start",
                "x",
            ],
            "this route needs none",
        ),
    ],
)
def test_proxy_flags_that_cannot_apply_are_exit_2(
    in_tmp: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (in_tmp / "probegate.yml").exists()


def test_on_a_terminal_it_offers_the_proxy_to_an_agent_with_its_own_loop(tmp_path: Path) -> None:
    answers = (
        "http\n"
        "http://127.0.0.1:9/chat\n"
        "\n"  # no API key for the agent's own endpoint
        "openai-chatt\n"  # a typo: asked again
        "openai-chat\n"
        "\n"  # listen: the default
        "http://127.0.0.1:9/v1\n"  # a stand-in for the real model API
        "\n"  # its key: OPENAI_API_KEY
        "send_email: Send an email to anyone\n"
        "\n"
        "\n"  # no more tools
        "y\n"  # the workflow too
        "python3 agent.py\n"  # how the agent starts on the runner
    )
    controller, terminal = pty.openpty()
    try:
        os.write(controller, answers.encode())
        done = subprocess.run(
            [sys.executable, "-m", "probegate", "init"],
            cwd=tmp_path,
            stdin=terminal,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
    finally:
        os.close(terminal)
        os.close(controller)
    assert done.returncode == 0, done.stderr
    assert "one of openai-chat, openai-responses, anthropic-messages, or no" in done.stdout
    target = _target(tmp_path / "probegate.yml")
    assert target["model_proxy"] == {
        "api": "openai-chat",
        "listen": "127.0.0.1:8790",
        "upstream": "http://127.0.0.1:9/v1",
        "upstream_api_key_env": "OPENAI_API_KEY",
    }
    workflow = (tmp_path / ".github" / "workflows" / "probegate.yml").read_text("utf-8")
    assert "python3 agent.py >agent.log 2>&1 &" in workflow
    assert "OPENAI_BASE_URL=http://127.0.0.1:8790/v1" in workflow


# -- the first week, end to end ---------------------------------------------------------------


class _InitShapedHandler(Handler):
    """The agent's own HTTP API, in the shape ``init`` writes (``input``, ``session_id`` in;
    ``output`` out): tests/servers/own_tools.py's ChatAgent, one per conversation."""

    def do_POST(self) -> None:
        from tests.servers.own_tools import ChatAgent

        service: _AgentService = self.owner
        body = self.read_json()
        if self.path != "/chat" or not isinstance(body, dict):
            self.send_json(404, {"error": "POST /chat"})
            return
        with service.lock:
            agent = service.conversations.setdefault(str(body.get("session_id")), ChatAgent())
        try:
            reply = agent.run(str(body.get("input") or ""))
        except Exception as exc:
            service.failures.append(f"{type(exc).__name__}: {exc}")
            self.send_json(500, {"error": type(exc).__name__})
            return
        self.send_json(200, {"output": reply})


class _AgentService(LoopbackServer):
    handler = _InitShapedHandler

    def __init__(self) -> None:
        super().__init__()
        self.conversations: dict[str, Any] = {}
        self.failures: list[str] = []
        self.lock = threading.Lock()


@pytest.fixture
def agent_service() -> Iterator[_AgentService]:
    with _AgentService() as service:
        yield service


def test_init_the_proxy_route_then_a_first_gated_scan(
    in_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    agent_service: _AgentService,
) -> None:
    from tests.servers.brain_model import BrainModelServer
    from tests.servers.own_tools import LEDGER

    LEDGER.clear()
    port = _free_port()
    with BrainModelServer() as model:
        tools = [arg for spec in OWN_TOOLS for arg in ("--tool", spec)]
        argv = ["init", "--kind", "http", "--endpoint", f"{agent_service.url}/chat"]
        argv += ["--model-proxy", "openai-chat", "--listen", f"127.0.0.1:{port}"]
        argv += ["--upstream", model.endpoint(careful=False), *tools]
        assert main(argv) == 0
        said = capsys.readouterr().out
        base_url = f"http://127.0.0.1:{port}/v1"
        assert f"start your agent with OPENAI_BASE_URL={base_url}" in said
        # What the team does: the agent's environment gets the base URL init printed; its key
        # is the one the proxy sends upstream.
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-first-week")
        assert main(["scan", "--dry-run"]) == 0
        capsys.readouterr()
        probes = [
            "asi01.indirect-document-email-exfil.v1",
            "asi02.refund-amount-from-tool-result.v1",
        ]
        probes += ["asi01.direct-system-prompt-leak.v1", "asi02.email-blast.v1"]
        selection = [arg for probe in probes for arg in ("--probes", probe)]
        code = main(["scan", "--fail-on", "high", "--no-sign", *selection])
        out = capsys.readouterr().out
    report = json.loads((in_tmp / "probegate-out" / "scan.json").read_text(encoding="utf-8"))
    assert agent_service.failures == []
    assert code == 1, out  # the gate: a high finding is a fact
    assert {f["probe_id"] for f in report["findings"]} >= set(probes[:3])
    assert report["proxy"]["unattributed"] == 0 and report["proxy"]["stopped"] > 0
    assert report["unjudged"] == []
    assert LEDGER.attacker_directed() == []  # safe mode: no e-mail sent, no refund issued
