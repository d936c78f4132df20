"""``probegate init``: from a blank directory to a config ``probegate scan`` accepts.

Each route is written by ``main(argv)`` and then read by the real scan (``--dry-run``: the plan,
nothing sent); the interactive path runs in a subprocess whose stdin is a real terminal (a pty).
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from probegate.cli import main
from probegate.config import build_config, read_config_file
from probegate.scaffold import KINDS, Route, Tool, config_text, scalar
from probegate.scaffold.capabilities import guess
from probegate.targets.demo.tools import DEMO_TOOLS
from probegate.targets.registry import KINDS as TARGET_KINDS

ROOT = Path(__file__).parents[2]
TOOLS = [
    "send_email:Send an email on the customer's behalf.",
    "lookup_customer:Look up a customer record by id.",
    "fetch_document:Fetch a document or web page by URL.",
]


@pytest.fixture
def no_agent_module() -> Iterator[None]:
    """The python route's starter module is imported in process: forget it afterwards."""
    yield
    sys.modules.pop("agent", None)


def _config(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("kind", KINDS)
def test_init_then_a_dry_run_in_a_blank_directory(
    in_tmp: Path, kind: str, capsys: pytest.CaptureFixture[str], no_agent_module: None
) -> None:
    tools = [arg for spec in TOOLS for arg in ("--tool", spec)]
    assert main(["init", "--kind", kind, *tools]) == 0
    said = capsys.readouterr().out
    assert "wrote probegate.yml" in said
    assert "next: probegate scan --dry-run" in said
    target = _config(in_tmp / "probegate.yml")["target"]
    assert target["kind"] == kind
    assert [(t["name"], t["capabilities"]) for t in target["tools"]] == [
        ("send_email", ["egress"]),
        ("lookup_customer", ["pii_read"]),
        ("fetch_document", ["retrieval"]),
    ]
    assert main(["scan", "--dry-run"]) == 0, capsys.readouterr().err
    plan = capsys.readouterr().out
    assert plan.startswith("plan ") and "ASI02:" in plan  # egress probes apply
    assert sorted(p.name for p in in_tmp.iterdir()) == sorted(
        ["probegate.yml", *(["agent.py"] if kind == "python" else [])]
    )


def test_init_anthropic_then_dry_run_then_scan_through_the_endpoint_flag(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The anthropic route end to end: init writes kind: anthropic, the dry run plans it (no
    key needed), and a scan with only --endpoint replaced talks Messages to a loopback server
    with the file's model, max_tokens and key variable (sent as x-api-key)."""
    from tests.servers.model_apis import ModelApiServer

    assert main(["init", "--kind", "anthropic", "--tool", TOOLS[0]]) == 0
    capsys.readouterr()
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["scan", "--dry-run"]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("plan ")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k-init")
    probe = "asi02.email-blast.v1"
    with ModelApiServer(api_key="k-init") as server:
        argv = ["scan", "--endpoint", server.base_url, "--probes", probe, "--no-sign"]
        code = main(argv)
        err = capsys.readouterr().err
        bodies = server.of("messages")
        headers = server.headers_seen
    assert code == 0, err  # the template leaves fail_on commented out: nothing gates
    assert "replaces target.endpoint (--endpoint)" in err
    assert bodies and {b["model"] for b in bodies} == {"claude-sonnet-4-5"}
    assert {b["max_tokens"] for b in bodies} == {1024}
    assert all(h["x-api-key"] == "k-init" and "Authorization" not in h for h in headers)
    report = json.loads((in_tmp / "probegate-out" / "scan.json").read_text(encoding="utf-8"))
    assert report["target"]["mode"] == "anthropic" and report["unjudged"] == []
    assert [f["probe_id"] for f in report["findings"]] == [probe]  # the weak model blasts


def test_the_python_starter_agent_says_to_connect_the_agent(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], no_agent_module: None
) -> None:
    assert main(["init", "--kind", "python", "--tool", TOOLS[0]]) == 0
    capsys.readouterr()
    assert main(["scan", "--probes", "asi02.email-blast.v1", "--no-sign"]) == 3
    report = json.loads((in_tmp / "probegate-out" / "scan.json").read_text(encoding="utf-8"))
    reasons = [u["reason"] for u in report["unjudged"]]
    assert reasons and all("connect your agent in agent.py" in r for r in reasons)
    # A module of the user's is never replaced, even with --force.
    (in_tmp / "mine.py").write_text("def run(input, context):\n    return 'hi'\n", "utf-8")
    assert main(["init", "--kind", "python", "--python", "mine:run", "--force"]) == 0
    assert (in_tmp / "mine.py").read_text("utf-8").endswith("return 'hi'\n")
    assert _config(in_tmp / "probegate.yml")["target"]["python"] == "mine:run"


def test_every_route_reads_back_as_its_kinds_config(tmp_path: Path) -> None:
    """The real config reader takes every template as its registered kind's config."""
    hostile = Tool("crm", 'Read # a: "profile"\n- kind: demo', None)
    for kind in KINDS:
        route = Route(kind, tools=(Tool("send_email", "Send mail"), hostile))
        path = tmp_path / kind / "probegate.yml"
        path.parent.mkdir()
        path.write_text(config_text(route), encoding="utf-8")
        data = read_config_file(path)
        target = data["target"]
        assert target["kind"] == kind
        assert target["tools"][1]["description"] == hostile.description
        if kind == "anthropic":
            assert {"endpoint", "model", "api_key_env", "max_tokens", "tools"} <= set(target)
        assert kind in TARGET_KINDS.kinds()
        config = build_config(data, {"base_dir": path.parent}, source=str(path))
        assert config.target.kind == kind
        assert config.target.agent_under_test().tools[1].capabilities == [
            c.value for c in guess("crm")
        ]


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_text_is_one_scalar_that_reads_back(text: str) -> None:
    assert yaml.safe_load(f"key: {scalar(text)}\n") == {"key": text}


def test_nothing_is_overwritten_without_force(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "probegate.yml").write_text("target: {kind: demo}\n", encoding="utf-8")
    assert main(["init", "--workflow"]) == 2
    assert capsys.readouterr().err == (
        "error: probegate.yml already exists; nothing was written (--force replaces it)\n"
    )
    assert (in_tmp / "probegate.yml").read_text("utf-8") == "target: {kind: demo}\n"
    assert not (in_tmp / ".github").exists(), "no half of the files"
    assert main(["init", "--workflow", "--force"]) == 0
    assert _config(in_tmp / "probegate.yml")["target"]["kind"] == "openai"
    capsys.readouterr()
    assert main(["init", "--kind", "http", "--workflow"]) == 2
    assert capsys.readouterr().err == (
        "error: probegate.yml, .github/workflows/probegate.yml already exist; nothing was "
        "written (--force replaces them)\n"
    )


def test_the_workflow_is_the_example_with_the_routes_key(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = (ROOT / "examples" / "probegate.yml").read_text(encoding="utf-8")
    workflow = in_tmp / ".github" / "workflows" / "probegate.yml"
    assert main(["init", "--workflow"]) == 0
    assert workflow.read_text("utf-8") == example
    assert main(["init", "--kind", "anthropic", "--workflow", "--force"]) == 0
    text = workflow.read_text("utf-8")
    assert "OPENAI_API_KEY" not in text
    assert "ANTHROPIC_API_KEY: ${{ secrets.ANTHROPIC_API_KEY }}" in text
    assert main(["init", "--kind", "python", "--workflow", "--force"]) == 0
    text = workflow.read_text("utf-8")
    assert "API_KEY: ${{" not in text
    # A python agent is imported in the Action's container: its dependencies, from a lock.
    assert text.count("# requirements: requirements/agent.txt") == 2
    argv = ["init", "--kind", "python", "--model-proxy", "openai-chat", "--workflow", "--force"]
    assert main(argv) == 0
    text = workflow.read_text("utf-8")
    assert text.count("OPENAI_BASE_URL: http://127.0.0.1:8790/v1") == 2
    assert text.count("OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}") == 2
    # An http agent at an address the Action's container reaches: the example as it is.
    staging = ["--endpoint", "https://agent.example.com/chat"]
    assert main(["init", "--kind", "http", *staging, "--workflow", "--force"]) == 0
    kept = [line for line in example.splitlines(keepends=True) if "OPENAI_API_KEY" not in line]
    assert workflow.read_text("utf-8") == "".join(kept)


def test_the_proxy_route_on_the_runner_publishes_what_the_action_would(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An http agent behind the proxy cannot reach a proxy inside the Action's container, so
    probegate runs on the runner; the steps after it read the outputs the Action would write."""
    argv = ["init", "--kind", "http", "--model-proxy", "openai-chat", "--workflow"]
    assert main([*argv, "--start", "python3 -m my_agent"]) == 0
    workflow = yaml.safe_load((in_tmp / ".github/workflows/probegate.yml").read_text("utf-8"))
    for job in workflow["jobs"].values():
        steps = job["steps"]
        assert not any(str(s.get("uses", "")).startswith("probegate/probegate@") for s in steps)
        scan = next(s for s in steps if s.get("id") == "probegate")
        start = next(s for s in steps if s.get("name") == "Start the agent")
        assert steps.index(start) < steps.index(scan)
        assert "export OPENAI_BASE_URL=http://127.0.0.1:8790/v1" in start["run"]
        assert "python3 -m my_agent >agent.log 2>&1 &" in start["run"]
        assert "::stop-commands::$token" in scan["run"]
        for output in ("exit-code", "json-path", "sarif-path"):
            assert f'echo "{output}=' in scan["run"]
        used = {
            m
            for s in steps[steps.index(scan) + 1 :]
            for m in re.findall(r"steps\.probegate\.outputs\.([\w-]+)", json.dumps(s))
        }
        assert used <= {"exit-code", "json-path", "sarif-path"}


def test_capabilities_are_guessed_from_names_like_the_demo_agents_tools() -> None:
    for tool in DEMO_TOOLS:
        assert set(guess(tool.name, tool.description)) == set(tool.capabilities), tool.name
    # A name that says nothing falls back to the description; nothing found is nothing.
    assert [c.value for c in guess("crm_tool", "Post a message to Slack")] == ["pii_read"]
    assert [c.value for c in guess("handle", "Post a message to Slack")] == ["egress"]
    assert guess("get_weather", "The weather in a city") == ()


def test_capabilities_given_win_and_a_typo_is_named(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["init", "--tool", "ops:Runs things", "--capabilities", "ops=code_exec, destructive"]
    assert main(argv) == 0
    text = (in_tmp / "probegate.yml").read_text("utf-8")
    assert "capabilities: [code_exec, destructive]   # given" in text
    assert main(["init", "--force", "--tool", "ops", "--capabilities", "ops=egres"]) == 2
    assert "unknown capability 'egres' (did you mean 'egress'?)" in capsys.readouterr().err
    assert main(["init", "--force", "--capabilities", "ops=egress"]) == 2
    assert "--capabilities names ops, which no --tool declares" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--kind", "http", "--model", "m"], "--model is not a setting of kind http"),
        (["--kind", "python", "--endpoint", "http://x"], "--endpoint is not a setting of kind"),
        (["--endpoint", "ftp://x"], "--endpoint 'ftp://x' is not an http(s) URL"),
        (["--api-key-env", "sk-live-123"], "is not an environment variable's name"),
        (["--kind", "python", "--python", "agent"], "give MODULE:ATTR"),
        (["--tool", "send email:x"], "a tool's name is 1-64 letters"),
        (["--kind", "opnai"], "invalid choice: 'opnai' (did you mean 'openai'?)"),
    ],
)
def test_bad_flags_exit_2_with_one_line(
    in_tmp: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (in_tmp / "probegate.yml").exists()


def test_json_says_what_was_written(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--json", "--tool", TOOLS[0], "--out-dir", "sub", "--workflow"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == {
        "kind": "openai",
        "written": ["sub/probegate.yml", "sub/.github/workflows/probegate.yml"],
        "tools": [{"name": "send_email", "capabilities": ["egress"], "guessed": True}],
    }


def test_on_a_terminal_it_asks_for_what_the_flags_leave_out(tmp_path: Path) -> None:
    answers = (
        "htp\n"  # a typo: asked again
        "http\n"
        "http://127.0.0.1:9/agent\n"
        "\n"  # no API key
        "\n"  # no model-API proxy: the agent's model is its own business
        "send_email: Send an email to anyone\n"
        "\n"  # the guess stands
        "lookup_customer: Look up a customer\n"
        "pii_read,egres\n"  # a typo: asked again
        "pii_read\n"
        "\n"  # no more tools
        "y\n"  # the workflow too
        "\n"  # how the agent starts on the runner: left for later
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
    assert "one of openai, anthropic, http, python (did you mean 'http'?)" in done.stdout
    assert "unknown capability 'egres' (did you mean 'egress'?)" in done.stdout
    target = _config(tmp_path / "probegate.yml")["target"]
    assert target["kind"] == "http" and target["endpoint"] == "http://127.0.0.1:9/agent"
    assert "api_key_env" not in target
    assert [(t["name"], t["capabilities"]) for t in target["tools"]] == [
        ("send_email", ["egress"]),
        ("lookup_customer", ["pii_read"]),
    ]
    assert (tmp_path / ".github" / "workflows" / "probegate.yml").is_file()
    assert "model_proxy" not in target
    assert "edit the 'Start the agent' step" in done.stdout


def test_the_packaged_workflow_is_the_example() -> None:
    packaged = ROOT / "src" / "probegate" / "scaffold" / "data" / "workflow.yml"
    assert packaged.read_bytes() == (ROOT / "examples" / "probegate.yml").read_bytes()
