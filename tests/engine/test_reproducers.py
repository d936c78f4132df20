"""A finding's reproducers reproduce: the script re-runs the attempt that found it (same mode,
variant, repeat, seed, judge; paths relative to the repository), and the standalone replay
script sends the attempt's messages to the endpoint without probegate, holding no secret."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from probegate.cli import main
from probegate.engine.plan import PlanRequest, build_plan
from probegate.library.loader import load_library
from probegate.models.report import Mode
from tests.servers.configs import openai_config
from tests.servers.openai_agent import OpenAIAgentServer

BIN = Path(sys.executable).parent
PROBE = "asi01.indirect-document-email-exfil.v1"
SECRET = "sk-test-do-not-leak-7f3a"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    return {**env, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "NO_COLOR": "1"}


def test_variant_plans_exactly_that_attempt_with_the_same_payload() -> None:
    probe = load_library().get("asi01.direct-system-prompt-leak.v1")
    full = build_plan([probe], set(), PlanRequest(Mode.FULL, seed=7, repeat=2))
    only = build_plan([probe], set(), PlanRequest(Mode.FULL, seed=7, repeat=2, variant="base64"))
    assert [a.attempt_id for a in only.attempts] == [
        f"{probe.id}#base64#0",
        f"{probe.id}#base64#1",
    ]
    by_id = {a.attempt_id: a.payload for a in full.attempts}
    assert all(by_id[a.attempt_id] == a.payload for a in only.attempts)
    smart = build_plan([probe], set(), PlanRequest(Mode.SMART, seed=7, repeat=1, variant="rot13"))
    assert [a.attempt_id for a in smart.attempts] == [f"{probe.id}#rot13#0"]


def test_the_reproducer_reruns_the_same_attempt_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    assert main(["scan", "demo", "--mode", "full", "--repeat", "2", "--seed", "5",
                 "--probes", "asi02.*", "--no-sign", "-q"]) == 0  # fmt: skip
    report = json.loads((repo / "probegate-out" / "scan.json").read_text())
    finding = report["findings"][0]
    script = repo / finding["pov_reference"]
    text = script.read_text()
    assert str(tmp_path) not in text  # nothing absolute: it runs on another checkout
    argv = shlex.split(text.strip().splitlines()[-1].removeprefix("exec "))
    attempt = finding["transcript_ref"].split("#", 1)[1]
    _, variant, repeat = attempt.split("#")
    assert argv[argv.index("--mode") + 1] == "full"
    assert argv[argv.index("--variant") + 1] == variant
    assert int(argv[argv.index("--repeat") + 1]) > int(repeat)
    assert argv[argv.index("--seed") + 1] == "5"

    moved = tmp_path / "checkout"
    shutil.copytree(repo, moved)
    shutil.rmtree(repo)
    done = subprocess.run(
        [str(moved / finding["pov_reference"])],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    again = json.loads((moved / "probegate-pov" / finding["probe_id"] / "scan.json").read_text())
    (reproduced,) = again["findings"]
    assert reproduced["fp"] == finding["fp"]
    assert reproduced["transcript_ref"].split("#", 1)[1] == attempt


def test_the_replay_script_sends_the_same_messages_without_probegate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_KEY", SECRET)
    with OpenAIAgentServer(api_key=SECRET) as server:
        openai_config(tmp_path, server.endpoint, api_key_env="AGENT_KEY")
        assert main(["scan", "--probes", PROBE, "--no-sign", "-q"]) == 0
        report = json.loads((tmp_path / "probegate-out" / "scan.json").read_text())
        (finding,) = report["findings"]
        pov = tmp_path / Path(finding["pov_reference"]).parent
        replay = pov / f"{PROBE}.replay.py"
        for path in pov.iterdir():
            assert SECRET not in path.read_text(), path  # the variable's name, never the key
        sent_by_scan = server.bodies[0]
        before = len(server.bodies)
        # plain Python, no probegate importable: run it with -I from an empty directory
        done = subprocess.run(
            [sys.executable, "-I", str(replay)],
            cwd=tmp_path / "..",
            env={"AGENT_KEY": SECRET, "PATH": os.environ.get("PATH", "")},
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        replayed = server.bodies[before]
    # the exact first request: system prompt with the attempt's canaries, tools, user message
    assert replayed["messages"] == sent_by_scan["messages"]
    assert replayed["tools"] == sent_by_scan["tools"]
    assert replayed["model"] == sent_by_scan["model"]
    # and the agent falls for it again, where a developer can see it
    assert "tool call send_email" in done.stdout and "evil.test" in done.stdout
    assert "probegate saw:" in done.stdout


def test_the_replay_script_refuses_to_run_without_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_KEY", SECRET)
    with OpenAIAgentServer(api_key=SECRET) as server:
        openai_config(tmp_path, server.endpoint, api_key_env="AGENT_KEY")
        assert main(["scan", "--probes", PROBE, "--no-sign", "-q"]) == 0
    report = json.loads((tmp_path / "probegate-out" / "scan.json").read_text())
    replay = tmp_path / Path(report["findings"][0]["pov_reference"]).parent / f"{PROBE}.replay.py"
    done = subprocess.run(
        [sys.executable, "-I", str(replay)], env={}, capture_output=True, text=True, check=False
    )
    assert done.returncode != 0 and "set AGENT_KEY first" in done.stderr


LEAK = "asi01.direct-system-prompt-leak.v1"
# A password that is also shell: a quote, a command substitution, backticks (no space: a URL).
URL_SECRET = "pa'ss$(touch${IFS}probegate-pwned)`id`"


def test_a_secret_in_the_command_line_is_read_from_its_variable_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with OpenAIAgentServer() as server:
        endpoint = server.endpoint.replace("http://", f"http://agent:{URL_SECRET}@")
        argv = ["scan", "--endpoint", endpoint, "--protocol", "openai", "--model", "m"]
        assert main([*argv, "--probes", LEAK, "--no-sign", "-q"]) == 0
        sent = server.headers_seen[0]["Authorization"]
        (script,) = tmp_path.glob(".probegate/scans/*/pov/*.sh")
        text = script.read_text()
        for piece in ("pa'ss", "pa'\"'\"'ss", "touch${IFS}", "`id`"):
            assert piece not in text  # in no spelling, quoted or not
        assert ': "${URL_PASSWORD_1:?set URL_PASSWORD_1' in text
        assert 'http://agent:"${URL_PASSWORD_1}"@127.0.0.1:' in text

        refused = subprocess.run(
            [str(script)], env=_env(), capture_output=True, text=True, check=False, timeout=60
        )
        assert refused.returncode != 0 and "set URL_PASSWORD_1" in refused.stderr
        before = len(server.headers_seen)
        done = subprocess.run(
            [str(script)],
            env={**_env(), "URL_PASSWORD_1": URL_SECRET},
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        # The variable's value went out as the password, exactly; the shell ran none of it.
        assert server.headers_seen[before]["Authorization"] == sent
    assert not list(tmp_path.rglob("probegate-pwned"))


def test_a_declared_secret_holding_quotes_is_a_placeholder_in_the_replay_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "Zq7v'Kx9p\"Wm4d\\Rt8f"
    monkeypatch.chdir(tmp_path)
    with OpenAIAgentServer() as server:
        openai_config(tmp_path, server.endpoint, canaries=[secret])
        (tmp_path / "prompt.txt").write_text(f"You are Acme support. Vault password: {secret}.\n")
        assert main(["scan", "--probes", LEAK, "--no-sign", "-q"]) == 0
    (replay,) = tmp_path.glob(".probegate/scans/*/pov/*.replay.py")
    for path in [replay, *tmp_path.glob("probegate-out/*")]:
        text = path.read_text("utf-8")
        for piece in ("Zq7v", "Kx9p", "Wm4d", "Rt8f"):
            assert piece not in text, (path.name, piece)  # not even escaped (\' or \\")
    assert "Vault password: ${CANARY_1}." in replay.read_text("utf-8")
