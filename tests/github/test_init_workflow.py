"""``probegate init --workflow`` for an agent behind its own HTTP API, played as GitHub runs it.

A workspace holds what a team commits: its agent (a small HTTP service that leaks the database
password it holds when asked for it) and what ``probegate init --kind http --workflow`` wrote.
The workflow's own "Start the agent" script runs under bash as the runner runs it, with a fake
``docker`` on PATH that answers the bridge network's gateway (here the loopback address: the
test has no container between the scan and the agent); its ``endpoint`` output and the
probegate step's ``with:`` inputs, resolved for the event, go to the Action's real entrypoint.
The push to main that adds the workflow must be green though the scan finds the leak.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from probegate.cli import main
from tests.github.helpers import ActionRun, assert_only_intended_commands, run_action
from tests.github.test_quickstart import inputs_as_env

SECRET = "pg-db-Wd8NqL2xVr7s"
# The team's agent: it answers in init's request shape and holds a database password it
# should never say. It listens on AGENT_HOST (the workflow sets it), writes its pid, and stops
# by itself when nobody has asked anything for a while.
AGENT = """
import json, os, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

last = [time.monotonic()]


class Agent(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(204)
        self.end_headers()

    def do_POST(self):
        last[0] = time.monotonic()
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        text = str(body.get("input", "")).lower()
        if any(w in text for w in ("password", "credential", "secret", "key")):
            reply = "The database password is " + os.environ["AGENT_DB_PASSWORD"] + "."
        else:
            reply = "I can help with your orders, deliveries and invoices."
        data = json.dumps({"output": reply}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer((os.environ["AGENT_HOST"], int(sys.argv[1])), Agent)
with open("agent.pid", "w") as handle:
    handle.write(str(os.getpid()))


def idle():
    while time.monotonic() - last[0] < 30:
        time.sleep(0.5)
    server.shutdown()


threading.Thread(target=idle, daemon=True).start()
server.serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    """The team's repository; the agent the workflow starts is stopped by its pid after."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "agent.py").write_text(AGENT, encoding="utf-8")
    yield ws
    pid_file = ws / "agent.pid"
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid_file.read_text()), signal.SIGTERM)


def _init(ws: Path, port: int, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """What the team runs, then the one edit the config's comment asks for: its secret."""
    argv = ["init", "--kind", "http", "--endpoint", f"http://127.0.0.1:{port}/chat"]
    argv += ["--tool", "send_email:Send an email on the customer's behalf.", "--workflow"]
    argv += ["--start", f"{sys.executable} agent.py {port}", "--out-dir", str(ws)]
    assert main(argv) == 0
    capsys.readouterr()
    config = ws / "probegate.yml"
    text = config.read_text(encoding="utf-8")
    edited = text.replace(
        "  # canaries_env: [AGENT_DB_PASSWORD]", "  canaries_env: [AGENT_DB_PASSWORD]"
    )
    assert edited != text
    config.write_text(edited, encoding="utf-8")
    workflow = yaml.safe_load((ws / ".github/workflows/probegate.yml").read_text("utf-8"))
    assert isinstance(workflow, dict)
    return workflow


def _steps(workflow: dict[str, Any], job: str) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = workflow["jobs"][job]["steps"]
    return steps


def _run_step(tmp_path: Path, ws: Path, step: dict[str, Any]) -> tuple[Any, Path]:
    """The step's script under bash -e, as the runner runs ``run:``; its $GITHUB_OUTPUT."""
    bin_dir = tmp_path / "runner-bin"
    bin_dir.mkdir(exist_ok=True)
    docker = bin_dir / "docker"
    # What `docker network inspect bridge --format ...Gateway` prints, here the loopback
    # address: on GitHub it is the runner's address on Docker's bridge (172.17.0.1).
    docker.write_text("#!/bin/sh\necho 127.0.0.1\n", encoding="utf-8")
    docker.chmod(0o755)
    output = tmp_path / "agent-output"
    output.write_text("", encoding="utf-8")
    env = {
        "PATH": os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"]),
        "GITHUB_OUTPUT": str(output),
        "AGENT_DB_PASSWORD": SECRET,
        "HOME": str(tmp_path),
    }
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    return done, output


def _start_the_agent(tmp_path: Path, ws: Path, step: dict[str, Any]) -> dict[str, str]:
    done, output = _run_step(tmp_path, ws, step)
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(line.split("=", 1) for line in output.read_text("utf-8").splitlines())


def _probegate_inputs(step: dict[str, Any], agent: dict[str, str]) -> dict[str, str]:
    """The step's ``with:`` for a push to main: every expression it uses, resolved."""
    known = {
        "${{ steps.agent.outputs.endpoint }}": agent["endpoint"],
        "${{ steps.baseline.outputs.path }}": "",  # the fetch step runs for pull requests only
        # main's scan judges each probe ten times, so a pull request's counts can be compared
        "${{ github.event_name == 'push' && '--repeat 10' || '' }}": "--repeat 10",
    }
    resolved = {}
    for key, value in step["with"].items():
        text = str(value)
        for expression in re.findall(r"\$\{\{.*?\}\}", text):
            assert expression in known, f"the test does not know {expression}: teach it"
            text = text.replace(expression, known[expression])
        if text:
            resolved[key] = text
    return inputs_as_env(resolved)


def _push(tmp_path: Path, ws: Path, inputs: dict[str, str], name: str) -> ActionRun:
    area = tmp_path / name
    area.mkdir()
    env = {
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_REPOSITORY": "acme/support-agent",
        "AGENT_DB_PASSWORD": SECRET,
        "PROBEGATE_SIGNING_SECRET": "",
    }
    return run_action(area, inputs, env=env, workspace=ws)


@pytest.mark.slow
def test_init_workflow_for_an_http_agent_is_green_on_main(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _free_port()
    workflow = _init(workspace, port, capsys)
    steps = _steps(workflow, "scan")
    names = [s.get("name", s.get("uses", "")) for s in steps]
    assert names.index("Start the agent") < names.index("probegate")
    start = next(s for s in steps if s.get("name") == "Start the agent")
    assert "127.0.0.1 is that container, not the runner" in (
        (workspace / ".github/workflows/probegate.yml").read_text("utf-8")
    )
    agent = _start_the_agent(tmp_path, workspace, start)
    assert agent == {"endpoint": f"http://127.0.0.1:{port}/chat"}
    step = next(s for s in steps if str(s.get("uses", "")).startswith("probegate/probegate@"))
    inputs = _probegate_inputs(step, agent)
    assert "PG_FAIL_ON" not in inputs and "PG_FAIL_UNDER" not in inputs
    run = _push(tmp_path, workspace, inputs, "push")
    assert run.rc == 0 and run.outputs["exit-code"] == "0", run.stdout
    assert_only_intended_commands(run.stdout)
    report = json.loads((workspace / run.outputs["json-path"]).read_text(encoding="utf-8"))
    assert report["target"]["ref"] == f"http:http://127.0.0.1:{port}/chat"
    leaks = [f for f in report["findings"] if f["severity"] in ("critical", "high")]
    assert leaks, "the agent says its password: a high finding, and still a green main"
    assert SECRET not in (workspace / run.outputs["json-path"]).read_text(encoding="utf-8")
    assert "probegate gate: passed" in run.summary
    # The nightly job's probegate step takes the same agent the same way.
    nightly = _steps(workflow, "authoritative")
    assert [s.get("name") for s in nightly].count("Start the agent") == 1
    full = next(s for s in nightly if str(s.get("uses", "")).startswith("probegate/probegate@"))
    assert "fail-on" not in full["with"] and "fail-under" not in full["with"]


def test_without_a_start_command_the_step_says_what_to_add(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", "--kind", "http", "--workflow", "--out-dir", str(tmp_path)]) == 0
    assert "edit the 'Start the agent' step" in capsys.readouterr().out
    workflow = yaml.safe_load((tmp_path / ".github/workflows/probegate.yml").read_text("utf-8"))
    start = next(s for s in _steps(workflow, "scan") if s.get("name") == "Start the agent")
    done, output = _run_step(tmp_path, tmp_path, start)
    assert done.returncode != 0 and output.read_text("utf-8") == ""
    assert done.stdout.startswith("::error title=probegate::write the command that starts")
