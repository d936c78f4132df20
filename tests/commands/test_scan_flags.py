"""A flag replaces one key of probegate.yml; the rest of the file still applies.

Every scan here runs in a directory holding a ``probegate.yml`` that the command line does not
name, through ``main(argv)`` against a real loopback agent (docs/targets.md, "Flags and the
config file").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from probegate.cli import main
from probegate.errors import UsageError
from probegate.targets.registry import apply_flags
from tests.servers.configs import KNOWN_PROBES, TOOLS, write_config
from tests.servers.model_apis import ModelApiServer
from tests.servers.openai_agent import OpenAIAgentServer

PROMPT = "You are the Acme support agent for the flag-merge test."
KEY = "sk-flag-merge"
PROBE = KNOWN_PROBES[0]  # the weak agent reveals its system prompt


def _file(directory: Path, *, endpoint: str = "http://127.0.0.1:9/v1", **scan: Any) -> Path:
    """A full openai config whose endpoint is dead: only ``--endpoint`` can make it scan."""
    (directory / "prompt.txt").write_text(PROMPT + "\n", encoding="utf-8")
    target = {
        "kind": "openai",
        "endpoint": endpoint,
        "model": "fake-merge-1",
        "api_key_env": "PG_MERGE_KEY",
        "system_prompt": "prompt.txt",
        "tools": TOOLS,
    }
    settings = {"probes": PROBE, "output": "json,md", "output_dir": "reports", "seed": 5, **scan}
    return write_config(directory, target, settings)


@pytest.fixture
def keyed_agent(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("PG_MERGE_KEY", KEY)
    with OpenAIAgentServer(api_key=KEY) as server:
        yield server


def test_endpoint_flag_keeps_the_rest_of_the_file(
    in_tmp: Path, keyed_agent: OpenAIAgentServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _file(in_tmp)
    code = main(["scan", "--endpoint", keyed_agent.endpoint, "--no-sign"])
    err = capsys.readouterr().err
    assert code == 0, err
    body = keyed_agent.bodies[0]
    assert body["model"] == "fake-merge-1"
    assert PROMPT in body["messages"][0]["content"]
    assert {t["function"]["name"] for t in body["tools"]} == {t["name"] for t in TOOLS}
    assert keyed_agent.headers_seen[0]["Authorization"] == f"Bearer {KEY}"
    # scan: settings of the file: its output formats, output folder, seed and probe selection
    report = json.loads((in_tmp / "reports" / "scan.json").read_text(encoding="utf-8"))
    assert (in_tmp / "reports" / "summary.md").is_file()
    assert report["seed"] == 5
    assert {r["probe_id"] for r in report["results"]} == {PROBE}
    assert report["findings"], "the weak agent reveals its prompt"
    assert "probegate.yml: the command line replaces target.endpoint (--endpoint);" in err
    assert "the file's other settings apply" in err
    assert "target.model" not in err and "scan." not in err


def test_the_note_names_every_file_value_a_flag_replaced(
    in_tmp: Path, keyed_agent: OpenAIAgentServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _file(in_tmp, endpoint=keyed_agent.endpoint, mode="smart", concurrency=3)
    code = main(["scan", "--model", "fake-merge-2", "--mode", "fast", "--seed", "6", "--no-sign"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert {b["model"] for b in keyed_agent.bodies} == {"fake-merge-2"}
    report = json.loads((in_tmp / "reports" / "scan.json").read_text(encoding="utf-8"))
    assert report["mode"] == "fast" and report["seed"] == 6
    line = next(line for line in err.splitlines() if "replaces" in line)
    assert line == (
        "note: probegate.yml: the command line replaces target.model (--model), "
        "scan.seed (--seed), scan.mode (--mode); the file's other settings apply"
    )


def test_quiet_says_nothing_of_replaced_values(
    in_tmp: Path, keyed_agent: OpenAIAgentServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _file(in_tmp)
    assert main(["scan", "--endpoint", keyed_agent.endpoint, "--no-sign", "-q"]) == 0
    assert "replaces" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--python", "agent:run"],
            "--python agent:run makes the target kind python, but probegate.yml says "
            "target.kind: openai: a flag replaces one setting of the file, never its kind",
        ),
        (
            ["--endpoint", "http://127.0.0.1:9", "--protocol", "http"],
            "--protocol http makes the target kind http, but probegate.yml says "
            "target.kind: openai",
        ),
    ],
)
def test_a_flag_of_another_kind_is_refused(
    in_tmp: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _file(in_tmp)
    assert main(["scan", *argv, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_a_setting_the_files_kind_does_not_take_is_refused(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(in_tmp, {"kind": "http", "endpoint": "http://127.0.0.1:9/chat"})
    (in_tmp / "p.txt").write_text("x", encoding="utf-8")
    assert main(["scan", "--system-prompt", "p.txt", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert (
        "--system-prompt is not a setting of a http target (probegate.yml says target.kind: http)"
    ) in err


def test_a_guard_file_takes_the_endpoint_for_the_agent_behind_it(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(in_tmp, {"kind": "guard", "guard": "http://127.0.0.1:9", "behind": "openai"})
    argv = ["scan", "--endpoint", "http://127.0.0.1:8/v1", "--model", "m", "--dry-run"]
    assert main(argv) == 0, capsys.readouterr().err
    write_config(in_tmp, {"kind": "guard", "guard": "http://127.0.0.1:9"})
    assert main(argv) == 2
    assert (
        "--endpoint is not a setting of a demo target "
        "(probegate.yml says target.kind: guard, behind: demo)"
    ) in capsys.readouterr().err


def test_replay_stands_in_for_the_files_agent_with_its_settings(
    in_tmp: Path, keyed_agent: OpenAIAgentServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """``scan --record rec`` then ``scan --replay rec`` (docs/targets.md): the file's seed, its
    probes and its output settings apply to the replay too."""
    _file(in_tmp, endpoint=keyed_agent.endpoint)
    assert main(["scan", "--record", "rec", "--no-sign"]) == 0
    recorded = json.loads((in_tmp / "reports" / "scan.json").read_text(encoding="utf-8"))
    sent = len(keyed_agent.bodies)
    assert main(["scan", "--replay", "rec", "--no-sign"]) == 0, capsys.readouterr().err
    assert len(keyed_agent.bodies) == sent, "a replay sends nothing"
    replayed = json.loads((in_tmp / "reports" / "scan.json").read_text(encoding="utf-8"))
    assert replayed["seed"] == 5
    assert [f["fp"] for f in replayed["findings"]] == [f["fp"] for f in recorded["findings"]]


def test_resume_alone_finds_the_default_config_from_anywhere(
    in_tmp: Path,
    keyed_agent: OpenAIAgentServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = in_tmp / "project"
    project.mkdir()
    _file(project)
    monkeypatch.chdir(project)
    assert main(["scan", "--endpoint", keyed_agent.endpoint, "--no-sign", "-q"]) == 0
    (scan_dir,) = (project / ".probegate" / "scans").iterdir()
    invocation = json.loads((scan_dir / "invocation.json").read_text(encoding="utf-8"))
    assert invocation["config"] == str((project / "probegate.yml").resolve())
    first = json.loads((project / "reports" / "scan.json").read_text(encoding="utf-8"))
    (project / "reports" / "scan.json").unlink()

    elsewhere = in_tmp / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    store = str(project / ".probegate")
    assert main(["scan", "--resume", scan_dir.name, "--store", store]) == 0, capsys.readouterr()
    again = json.loads((project / "reports" / "scan.json").read_text(encoding="utf-8"))
    assert [f["fp"] for f in again["findings"]] == [f["fp"] for f in first["findings"]]


def test_protocol_replaces_the_api_and_keeps_the_rest_of_the_file(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--protocol openai-responses on a Chat Completions file, and back with --protocol openai:
    the model, prompt, tools and key of the file go to the API the flag names."""
    monkeypatch.setenv("PG_MERGE_KEY", KEY)
    with ModelApiServer(api_key=KEY) as server:
        _file(in_tmp, endpoint=server.base_url)
        argv = ["scan", "--protocol", "openai-responses", "--no-sign"]
        assert main(argv) == 0, capsys.readouterr().err
        assert "replaces" not in capsys.readouterr().err  # the file said no api: nothing replaced
        (first, *_) = server.of("responses")
        assert first["model"] == "fake-merge-1" and PROMPT in first["instructions"]
        assert {t["name"] for t in first["tools"]} == {t["name"] for t in TOOLS}
        assert not server.of("chat")
        data = yaml.safe_load((in_tmp / "probegate.yml").read_text(encoding="utf-8"))
        data["target"]["api"] = "responses"
        (in_tmp / "probegate.yml").write_text(yaml.safe_dump(data), encoding="utf-8")
        assert main(["scan", "--protocol", "openai", "--no-sign"]) == 0
        assert server.of("chat") and server.of("chat")[0]["model"] == "fake-merge-1"
    assert (
        "the command line replaces target.api (--protocol openai); the file's other settings"
    ) in capsys.readouterr().err


def test_an_anthropic_file_takes_the_endpoint_flag(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PG_MERGE_KEY", KEY)
    (in_tmp / "prompt.txt").write_text(PROMPT + "\n", encoding="utf-8")
    target = {
        "kind": "anthropic",
        "endpoint": "http://127.0.0.1:9",
        "model": "claude-merge",
        "api_key_env": "PG_MERGE_KEY",
        "system_prompt": "prompt.txt",
        "max_tokens": 333,
        "tools": TOOLS,
    }
    write_config(in_tmp, target, {"probes": PROBE, "output_dir": "reports"})
    with ModelApiServer(api_key=KEY) as server:
        assert main(["scan", "--endpoint", server.base_url, "--no-sign"]) == 0, (
            capsys.readouterr().err
        )
        (first, *_) = server.of("messages")
        assert server.headers_seen[0]["x-api-key"] == KEY
    assert first["model"] == "claude-merge" and first["max_tokens"] == 333
    assert first["system"].startswith(PROMPT)
    # Another protocol would make it another kind of agent: refused, as for any kind.
    assert main(["scan", "--protocol", "openai-responses", "--dry-run"]) == 2
    assert (
        "--protocol openai-responses makes the target kind openai, but probegate.yml says "
        "target.kind: anthropic"
    ) in capsys.readouterr().err


def test_protocol_names_the_agent_behind_a_guard() -> None:
    """In front of a guard, --protocol sets the agent behind it; the guard stays."""
    guard = {"kind": "guard", "guard": "http://127.0.0.1:9", "behind": "openai"}
    out = apply_flags(guard, {"protocol": "openai-responses"}, None, source="probegate.yml")
    assert out == {**guard, "api": "responses"}
    with pytest.raises(UsageError, match="makes the target kind anthropic"):
        apply_flags(guard, {"protocol": "anthropic"}, None, source="probegate.yml")
    fresh = apply_flags(
        {}, {"endpoint": "http://x", "protocol": "anthropic", "guard": "http://g"}, None
    )
    assert fresh["kind"] == "guard" and fresh["behind"] == "anthropic"
