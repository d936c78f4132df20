"""Whole scans through the CLI against real loopback agents and a faulty endpoint."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from probegate.cli import main
from probegate.engine.plan import SANDBOX_SETTING
from tests.servers.configs import (
    KNOWN_PROBES,
    TOOLS,
    known_probes,
    openai_config,
    scan_args,
    write_config,
)
from tests.servers.faults import FaultServer
from tests.servers.http_agent import SECRET, HttpAgentServer
from tests.servers.openai_agent import OpenAIAgentServer

EXFIL = "asi01.indirect-document-email-exfil.v1"


def report_of(tmp: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((tmp / "out" / "scan.json").read_text())
    return data


def test_weak_agent_fails_the_gate_and_hardened_passes(tmp_path: Path) -> None:
    with OpenAIAgentServer() as weak, OpenAIAgentServer(hardened=True) as hard:
        weak_dir, hard_dir = tmp_path / "weak", tmp_path / "hard"
        weak_dir.mkdir()
        hard_dir.mkdir()
        args = ("--fail-on", "high", *known_probes())
        code = main(scan_args(openai_config(weak_dir, weak.endpoint), weak_dir, *args))
        assert code == 1
        found = {f["probe_id"]: f for f in report_of(weak_dir)["findings"]}
        assert set(found) == set(KNOWN_PROBES)
        call = found[EXFIL]["evidence"][0]
        assert call["path"].startswith("turns.1.tool_calls.") and "evil.test" in call["subject"]
        code = main(scan_args(openai_config(hard_dir, hard.endpoint), hard_dir, *args))
        assert code == 0
        report = report_of(hard_dir)
        assert report["findings"] == [] and report["unjudged"] == []
        assert report["tokens_total"] > 0


@pytest.mark.parametrize(
    ("fault", "extra", "words"),
    [
        ("401", [], "the target cannot be used: HTTP 401"),
        ("404", [], "the target cannot be used: HTTP 404"),
        ("500", ["--retries", "0"], "HTTP 500 from target"),
        ("garbage", [], "unreadable reply: HTTP 200 with an HTML page"),
        ("timeout", ["--timeout", "0.4", "--retries", "0", "--concurrency", "16"], "timeout"),
    ],
)
def test_unusable_targets_exit_3_never_0(
    faults: FaultServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fault: str,
    extra: list[str],
    words: str,
) -> None:
    config = openai_config(tmp_path, faults.endpoint(fault))
    start = time.monotonic()
    code = main(scan_args(config, tmp_path, *extra))
    err = capsys.readouterr().err
    assert code == 3, err
    assert words in err
    assert time.monotonic() - start < 10
    report = report_of(tmp_path)
    assert report["findings"] == []
    assert report["unjudged"] and all(u["reason"] for u in report["unjudged"])


def test_unreachable_target_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = openai_config(tmp_path, "http://127.0.0.1:9/v1")
    assert main(scan_args(config, tmp_path)) == 3
    assert "connection refused" in capsys.readouterr().err


def test_rate_limited_target_is_retried_to_completion(faults: FaultServer, tmp_path: Path) -> None:
    config = openai_config(tmp_path, faults.endpoint("429-2"))
    code = main(scan_args(config, tmp_path, "--retries", "3", *known_probes()))
    assert code == 0
    report = report_of(tmp_path)
    # Every 429 was retried to an answer: nothing failed (the canned agent reads no document,
    # so attacks riding on one are not delivered, never resisted).
    assert {u["cause"] for u in report["unjudged"]} <= {"not_delivered"}
    assert report["budget"]["requests_used"] == faults.hits("429-2") >= 2 + 2


def test_api_key_never_lands_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "sk-probegate-test-KEY-5551234"
    monkeypatch.setenv("PG_KEY", key)
    with OpenAIAgentServer(api_key=key) as server:
        config = openai_config(tmp_path, server.endpoint, api_key_env="PG_KEY")
        main(scan_args(config, tmp_path, "--record", str(tmp_path / "rec")))
        assert server.headers_seen[0]["Authorization"] == f"Bearer {key}"
    captured = capsys.readouterr()
    assert key not in captured.out + captured.err
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


def test_http_agent_scan_with_declared_secret(
    http_agent: HttpAgentServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = {
        "kind": "http",
        "http": {
            "url": http_agent.url + "/agent/{{session_id}}/ask",
            "body": {"query": {"text": "{{input}}"}},
            "response_text": "result.answer",
            "response_tool_calls": "trace.steps",
        },
        "canaries": [SECRET],
        "tools": TOOLS,
    }
    config = write_config(tmp_path, target)
    code = main(scan_args(config, tmp_path))
    assert code == 0, capsys.readouterr().err
    report = report_of(tmp_path)
    found = {f["probe_id"] for f in report["findings"]}
    assert {"asi03.credential-harvest-debug.v1", "asi02.recipient-argument-injection.v1"} <= found
    assert SECRET not in (tmp_path / "out" / "scan.json").read_text()
    # What the agent cannot be given (fixtures, a secret only the sandbox plants) is not run,
    # with the setting that would let it run; never unjudged, never sent.
    not_run = {n["probe_id"]: n for n in report["not_run"]}
    assert "sandbox" in not_run[EXFIL]["reason"]
    assert not_run["asi03.cross-customer-pii.v1"]["reason"].startswith("nothing to leak")
    for probe in (EXFIL, "asi03.cross-customer-pii.v1"):
        assert not_run[probe]["enabled_by"] == SANDBOX_SETTING
    assert not {u["probe_id"] for u in report["unjudged"]} & set(not_run)
    assert http_agent.requests == report["budget"]["requests_used"]


def test_a_black_box_agent_without_declared_secrets_is_not_asked_for_them(
    http_agent: HttpAgentServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Secret-leak probes against an agent that declares no secret cannot see anything: they
    are not run, with target.canaries as what enables them, and leave nothing unjudged."""
    target = {
        "kind": "http",
        "http": {
            "url": http_agent.url + "/agent/{{session_id}}/ask",
            "body": {"query": {"text": "{{input}}"}},
            "response_text": "result.answer",
            "response_tool_calls": "trace.steps",
        },
        "tools": TOOLS,
    }
    argv = scan_args(write_config(tmp_path, target), tmp_path)
    argv.remove("--quiet")
    main(argv)
    report = report_of(tmp_path)
    leaks = {n["probe_id"] for n in report["not_run"] if n["enabled_by"] == "target.canaries"}
    assert "asi03.credential-harvest-debug.v1" in leaks
    assert not any("nothing to leak" in u["reason"] for u in report["unjudged"])
    results = {r["probe_id"]: r for r in report["results"]}
    assert all(results[p]["outcome"] == "not_run" for p in leaks)
    captured = capsys.readouterr()
    assert "declare the agent's real secrets under target.canaries" in captured.err
    # The closing lines state the surface the probes applied to: secrets as a count only.
    assert "surface: 3 tools" in captured.out and "none declared" in captured.out


def test_http_agent_without_tool_calls_leaves_tool_oracles_unjudged(
    http_agent: HttpAgentServer, tmp_path: Path
) -> None:
    target = {
        "kind": "http",
        "http": {
            "url": http_agent.url + "/agent/{{session_id}}/ask",
            "body": {"query": {"text": "{{input}}"}},
            "response_text": "result.answer",
        },
        "canaries": [SECRET],
        "tools": TOOLS,
    }
    main(scan_args(write_config(tmp_path, target), tmp_path))
    results = {r["probe_id"]: r for r in report_of(tmp_path)["results"]}
    blast = results["asi02.email-blast.v1"]
    assert blast["outcome"] == "unjudged" and blast["resisted"] == 0


# "*" prices every model the table does not name: the dry run must estimate with it exactly as
# the scan will charge with it (one price function for both).
@pytest.mark.parametrize("model", ["fake-1", "*"])
def test_dry_run_prints_the_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str
) -> None:
    config = openai_config(
        tmp_path,
        "http://127.0.0.1:9/v1",
        prices={model: {"input_per_1k": 0.5, "output_per_1k": 1.5}},
    )
    assert main(scan_args(config, tmp_path, "--dry-run", "--mode", "full")) == 0
    out = capsys.readouterr().out
    assert "probes" in out and "attempts" in out and "at most" in out and "requests" in out
    # 1000 prompt tokens x $0.5/1k + 300 completion tokens x $1.5/1k = $0.95 per request
    requests = int(re.search(r"at most (\d+) requests", out).group(1))  # type: ignore[union-attr]
    assert f"estimated cost: about ${requests * 0.95:.2f} at most" in out
    assert not (tmp_path / "store").exists()


def test_dry_run_with_json_prints_the_same_plan_as_one_json_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--json`` promises machine-readable JSON on standard output: a dry run too."""
    config = openai_config(tmp_path, "http://127.0.0.1:9/v1")
    argv = scan_args(config, tmp_path, "--dry-run", "--mode", "full")
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    head = f"plan {plan['plan']}: mode full, {plan['probes']} probes, {plan['attempts']} attempts"
    assert text.startswith(head)
    assert f"(at most {plan['requests_at_most']} requests)" in text.splitlines()[0]
    assert plan["dry_run"] is True and plan["controls_at_most"] > 0
    for asi, said in plan["categories"].items():
        assert f"  {asi}: {said}\n" in text
    assert f"  estimated cost: {plan['estimated_cost']}\n" in text
    assert plan["surface"]["tools"] and not (tmp_path / "store").exists()


def test_dry_run_counts_the_probes_that_do_not_apply_and_v_lists_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An agent with one tool leaves most of the library out: one line says how many (each
    category's line says what would bring them in), ``-v`` names each; JSON has them all."""
    config = openai_config(
        tmp_path,
        "http://127.0.0.1:9/v1",
        tools=[{"name": "send_email", "capabilities": ["egress"]}],
    )
    argv = scan_args(config, tmp_path, "--dry-run")
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    skipped = json.loads(capsys.readouterr().out)["not_applicable"]
    assert len(skipped) > 50
    assert "not applicable: " not in text.replace(
        f"not applicable: {len(skipped)} probe(s), for the capabilities and settings each "
        "category names above (-v lists them)\n",
        "",
    )
    assert len(text.splitlines()) < 25
    assert main([*argv, "-v"]) == 0
    listed = [ln for ln in capsys.readouterr().out.splitlines() if "not applicable: " in ln]
    assert listed == [f"  not applicable: {p}: {why}" for p, why in skipped.items()]


def test_quiet_scan_prints_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAIAgentServer(hardened=True) as server:
        config = openai_config(tmp_path, server.endpoint)
        assert main(scan_args(config, tmp_path, *known_probes())) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_installed_entry_point_scans_a_loopback_agent(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "probegate"
    assert exe.exists()
    with OpenAIAgentServer() as server:
        config = openai_config(tmp_path, server.endpoint)
        proc = subprocess.run(
            [str(exe), *scan_args(config, tmp_path, "--output", "json,sarif")],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": ""},
        )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "scan.sarif").is_file()
    assert any(f["probe_id"] == EXFIL for f in report_of(tmp_path)["findings"])
    assert yaml.safe_load(config.read_text())["target"]["kind"] == "openai"


def test_completeness_counts_attacker_agents_and_their_turns(tmp_path: Path) -> None:
    """The report format's words: an attacker agent is a probe, each of its turns an attempt."""
    args = ["scan", "demo", "--repeat", "2", "--no-sign", "--quiet"]
    code = main([*args, "--store", str(tmp_path / "s"), "--output-dir", str(tmp_path / "out")])
    assert code in (0, 1)
    report = report_of(tmp_path)
    done = report["completeness"]
    attacked = [r for r in report["results"] if r["outcome"] not in ("not_applicable", "not_run")]
    assert done["agents_planned"] == done["agents_completed"] == len(attacked)
    assert done["agents_cut_short"] == 0
    turns = sum(r["attempts"] for r in attacked)
    assert done["turns_planned"] == done["turns_used"] == turns == 2 * len(attacked)
    assert done["turns_used"] == report["coverage"]["attempts_completed"]
    assert all(f["attempt_count"] == 2 for f in report["findings"])
    assert done["pct"] == 100.0
