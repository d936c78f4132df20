"""examples/probegate.yml for a repository whose main already has findings, step by step.

The example's own steps are played in a fake GitHub environment: its "Fetch main's baseline"
script runs under bash with a fake ``gh`` on PATH (the runs and artifacts GitHub would list),
and its probegate step's ``with:`` inputs, resolved for the event, go to the Action's real
entrypoint, which scans a real loopback agent. The walkthrough in docs/github-action.md ("A
repository whose main already has findings") is this file's order.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.github.helpers import (
    REPO,
    ActionRun,
    assert_only_intended_commands,
    run_action,
)
from tests.github.test_quickstart import inputs_as_env
from tests.servers.configs import KNOWN_PROBES, REFUND_TOOL, TOOLS, write_config
from tests.servers.openai_agent import OpenAIAgentServer

EXAMPLE = yaml.safe_load((REPO / "examples" / "probegate.yml").read_text(encoding="utf-8"))
STEPS = EXAMPLE["jobs"]["scan"]["steps"]
REPOSITORY = "acme/support-agent"
# The run reports its own workflow file: renamed here, the lookup must follow it.
WORKFLOW_REF = f"{REPOSITORY}/.github/workflows/red-team.yml@refs/pull/7/merge"


def _step(name: str) -> dict[str, Any]:
    (step,) = [s for s in STEPS if s.get("name") == name]
    return step


def _resolve(value: str, event: str, baseline: str) -> str:
    """The example's expressions for one event: every one it uses, or the test fails."""
    known = {
        "${{ steps.baseline.outputs.path }}": baseline,
        "${{ github.event_name == 'push' && '--repeat 10' || '' }}": (
            "--repeat 10" if event == "push" else ""
        ),
    }
    for expression in re.findall(r"\$\{\{.*?\}\}", value):
        assert expression in known, f"the test does not know {expression}: teach it"
        value = value.replace(expression, known[expression])
    return value


def probegate_inputs(event: str, baseline: str = "") -> dict[str, str]:
    step = next(s for s in STEPS if str(s.get("uses", "")).startswith("probegate/probegate@"))
    with_ = {k: _resolve(str(v), event, baseline) for k, v in step["with"].items()}
    return inputs_as_env({k: v for k, v in with_.items() if v})


FAKE_GH = """
import json, os, shutil, sys
argv = sys.argv[1:]
with open(os.environ["FAKE_GH_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(argv) + "\\n")
runs = json.loads(os.environ.get("FAKE_GH_RUNS", "{}"))  # run id -> baseline file or ""
if argv[:2] == ["run", "list"]:
    workflow = argv[argv.index("--workflow") + 1]
    if workflow == os.environ.get("FAKE_GH_WORKFLOW"):
        print("\\n".join(runs))  # what --jq '.[].databaseId' prints, newest first
    sys.exit(0)
if argv[:2] == ["run", "download"]:
    source = runs.get(argv[2])
    if not source:
        print("no artifact matches any of the names or patterns provided", file=sys.stderr)
        sys.exit(1)
    target = argv[argv.index("--dir") + 1]
    os.makedirs(target, exist_ok=True)
    shutil.copyfile(source, os.path.join(target, "scan.json"))
    sys.exit(0)
sys.exit(2)
"""


def fetch_baseline(
    tmp_path: Path, workspace: Path, runs: dict[str, str]
) -> tuple[str, list[str], list[list[str]]]:
    """Run the example's fetch step: (its ``path`` output, its notices, the gh calls)."""
    step = _step("Fetch main's baseline")
    bin_dir = tmp_path / "ghbin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    gh = bin_dir / "gh"
    gh.write_text(f"#!{sys.executable}\n{FAKE_GH}", encoding="utf-8")
    gh.chmod(0o755)
    output = tmp_path / "fetch_output"
    output.write_text("", encoding="utf-8")
    log = tmp_path / "gh.jsonl"
    log.write_text("", encoding="utf-8")
    env = {
        "PATH": os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"]),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_WORKFLOW_REF": WORKFLOW_REF,
        "GH_TOKEN": "fake-token",
        "REPO": REPOSITORY,
        "BASE_REF": "main",
        "FAKE_GH_LOG": str(log),
        "FAKE_GH_RUNS": json.dumps(runs),
        "FAKE_GH_WORKFLOW": "red-team.yml",
    }
    assert set(step["env"]) <= set(env)
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    outputs = dict(line.split("=", 1) for line in output.read_text("utf-8").splitlines())
    notices = [line for line in done.stdout.splitlines() if line.startswith("::notice")]
    calls = [json.loads(line) for line in log.read_text("utf-8").splitlines()]
    return outputs.get("path", ""), notices, calls


def _config(workspace: Path, endpoint: str, tools: list[dict[str, Any]]) -> None:
    (workspace / "prompt.txt").write_text("You are the Acme support agent.\n", encoding="utf-8")
    target = {
        "kind": "openai",
        "endpoint": endpoint,
        "model": "fake-1",
        "system_prompt": "prompt.txt",
        "tools": tools,
    }
    write_config(workspace, target, {"probes": list(KNOWN_PROBES)})


def _pull_request_event(tmp_path: Path, head: str) -> dict[str, str]:
    payload = {
        "pull_request": {
            "head": {"repo": {"full_name": head}},
            "base": {"repo": {"full_name": REPOSITORY}},
        }
    }
    path = tmp_path / f"event-{head.replace('/', '-')}.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_REPOSITORY": REPOSITORY,
    }


def _push_event() -> dict[str, str]:
    return {"GITHUB_EVENT_NAME": "push", "GITHUB_REPOSITORY": REPOSITORY}


def _area(tmp_path: Path, name: str) -> Path:
    """A fresh directory for one run's runner files (outputs, summary)."""
    path = tmp_path / name
    path.mkdir()
    return path


def _report(run: ActionRun) -> dict[str, Any]:
    path = run.workspace / run.outputs["json-path"]
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.mark.slow
def test_the_first_week_of_a_repository_whose_main_has_findings(
    tmp_path: Path, weak_agent: OpenAIAgentServer
) -> None:
    main_tools = [TOOLS[0], TOOLS[2], REFUND_TOOL]  # no email tool yet
    secrets = {"OPENAI_API_KEY": "unused", "PROBEGATE_SIGNING_SECRET": ""}

    # 1. The pull request that adds the workflow: no baseline anywhere yet; green.
    ws = tmp_path / "adding"
    ws.mkdir()
    _config(ws, weak_agent.endpoint, main_tools)
    path, notices, calls = fetch_baseline(tmp_path / "f1", ws, runs={})
    assert path == "" and len(notices) == 1 and "no baseline from main yet" in notices[0]
    assert calls[0][:2] == ["run", "list"] and "red-team.yml" in calls[0]
    assert "success" not in calls[0], "a red main's baseline counts"
    event = _pull_request_event(tmp_path, REPOSITORY)
    first = run_action(
        _area(tmp_path, "r1"),
        probegate_inputs("pull_request", path),
        env={**secrets, **event},
        workspace=ws,
    )
    assert first.rc == 0, first.stdout
    assert first.outputs["skipped"] == "false" and int(first.outputs["findings"]) > 0

    # 2. First run on main, the merge that adds the workflow: green, though main has high
    # findings (they go to code scanning and the summary); its scan is kept as the baseline.
    main_ws = tmp_path / "main"
    main_ws.mkdir()
    _config(main_ws, weak_agent.endpoint, main_tools)
    main = run_action(
        _area(tmp_path, "r2"),
        probegate_inputs("push"),
        env={**secrets, **_push_event()},
        workspace=main_ws,
    )
    assert main.rc == 0 and main.outputs["exit-code"] == "0", main.stdout
    assert_only_intended_commands(main.stdout)
    assert "probegate gate: passed" in main.summary
    assert any(f["severity"] == "high" for f in _report(main)["findings"])
    keep = _step("Keep main's scan as the next baseline")["if"]
    assert "always()" in keep and "exit-code == '1'" in keep and "success" not in keep
    artifact = tmp_path / "artifact-scan.json"
    artifact.write_bytes((main_ws / main.outputs["json-path"]).read_bytes())
    main_findings = {f["fp"] for f in _report(main)["findings"]}
    assert main_findings

    # 3. A clean pull request: the baseline comes from that run (past a newer run that kept
    # none), every finding persists, the baseline gate passes.
    runs = {"2002": "", "2001": str(artifact)}
    clean_ws = tmp_path / "clean"
    clean_ws.mkdir()
    _config(clean_ws, weak_agent.endpoint, main_tools)
    path, notices, calls = fetch_baseline(tmp_path / "f3", clean_ws, runs)
    assert path == "probegate-baseline/scan.json" and notices == []
    assert [c[:3] for c in calls[1:]] == [["run", "download", "2002"], ["run", "download", "2001"]]
    clean = run_action(
        _area(tmp_path, "r3"),
        probegate_inputs("pull_request", path),
        env={**secrets, **event},
        workspace=clean_ws,
    )
    assert clean.rc == 0, clean.stdout
    assert clean.outputs["new-findings"] == "0"
    assert int(clean.outputs["findings"]) == len(main_findings)
    assert "baseline: PASSED" in clean.summary

    # 4. A regressing pull request: an email tool the agent can be talked into misusing.
    bad_ws = tmp_path / "regressing"
    bad_ws.mkdir()
    _config(bad_ws, weak_agent.endpoint, [*main_tools, TOOLS[1]])
    path, _, _ = fetch_baseline(tmp_path / "f4", bad_ws, runs)
    bad = run_action(
        _area(tmp_path, "r4"),
        probegate_inputs("pull_request", path),
        env={**secrets, **event},
        workspace=bad_ws,
    )
    assert bad.rc == 1, bad.stdout
    new = {f["fp"] for f in _report(bad)["findings"]} - main_findings
    assert new and bad.outputs["new-findings"] == str(len(new))
    assert "baseline: FAILED" in bad.summary and "New findings" in bad.summary
    # Each new finding ran 3 more times before the gate decided, and reproduced.
    confirmation = _report(bad)["comparison"]["confirmation"]
    assert confirmation["runs"] == 3 and len(confirmation["probes"]) == len(new)
    assert all(p["confirm"] == {"vulnerable": 3, "judged": 3} for p in confirmation["probes"])
    assert bad.level_count("error") >= 1  # the new findings are annotated

    # 5. A pull request from a fork: no secrets, so the step skips it with a notice; green.
    fork_ws = tmp_path / "fork"
    fork_ws.mkdir()
    _config(fork_ws, weak_agent.endpoint, [*main_tools, TOOLS[1]])
    path, _, _ = fetch_baseline(tmp_path / "f5", fork_ws, runs)  # a read-only token can
    sent = len(weak_agent.bodies)
    fork_event = _pull_request_event(tmp_path, "mallory/support-agent")
    fork = run_action(
        _area(tmp_path, "r5"),
        probegate_inputs("pull_request", path),
        env={"OPENAI_API_KEY": "", **fork_event},
        workspace=fork_ws,
    )
    assert fork.rc == 0 and fork.outputs["exit-code"] == "0", fork.stdout
    assert fork.outputs["skipped"] == "true" and fork.outputs["json-path"] == ""
    assert len(weak_agent.bodies) == sent, "nothing was sent to the agent"
    assert not (fork_ws / "probegate-out").exists()
    (notice,) = [a for a in fork.annotations if a.startswith("::notice")]
    assert "the fork mallory/support-agent, which gets no secrets" in notice
    assert "probegate: skipped" in fork.summary
    assert_only_intended_commands(fork.stdout)


def _fake_run(tmp_path: Path, inputs: dict[str, str], env: dict[str, str]) -> ActionRun:
    return run_action(tmp_path, {"PG_CONFIG": "probegate.yml", **inputs}, fake=True, env=env)


@pytest.mark.parametrize(
    ("head", "fork_pull_requests", "scanned"),
    [
        (REPOSITORY, "", True),  # the repository's own branch
        ("mallory/support-agent", "", False),  # a fork, skipped by default
        ("mallory/support-agent", "scan", True),  # a fork, scanned when asked
        ("", "", False),  # a fork that was deleted since
    ],
)
def test_the_fork_guard(tmp_path: Path, head: str, fork_pull_requests: str, scanned: bool) -> None:
    event = _pull_request_event(tmp_path, head or "deleted")
    if not head:
        payload = json.loads(Path(event["GITHUB_EVENT_PATH"]).read_text("utf-8"))
        payload["pull_request"]["head"]["repo"] = None
        Path(event["GITHUB_EVENT_PATH"]).write_text(json.dumps(payload), encoding="utf-8")
    inputs = {"PG_FORK_PULL_REQUESTS": fork_pull_requests} if fork_pull_requests else {}
    run = _fake_run(tmp_path, inputs, event)
    assert run.rc == 0, run.stdout
    assert bool(run.argv_log) == scanned
    assert run.outputs["skipped"] == ("false" if scanned else "true")
    if not scanned:
        assert "(deleted)" in run.stdout if not head else "mallory/support-agent" in run.stdout


def test_a_skipped_fork_says_nothing_about_the_baseline(tmp_path: Path) -> None:
    """The first week: main has no baseline yet and a fork opens a pull request. The run is
    skipped, so the only notice is why; "no baseline yet" would describe a scan that never ran."""
    event = _pull_request_event(tmp_path, "mallory/support-agent")
    run = _fake_run(tmp_path, {"PG_BASELINE": "probegate-baseline.json"}, event)
    assert run.rc == 0 and not run.argv_log and run.outputs["skipped"] == "true"
    (notice,) = run.annotations
    assert notice.startswith("::notice title=probegate::skipped: this pull request comes from")
    assert "baseline" not in run.stdout and "baseline" not in run.summary
    # The same run from the repository's own branch scans and says the baseline is missing.
    own_event = _pull_request_event(tmp_path, REPOSITORY)
    own = _fake_run(tmp_path / "own", {"PG_BASELINE": "probegate-baseline.json"}, own_event)
    assert own.argv_log and any("title=probegate baseline" in a for a in own.annotations)


@pytest.mark.slow
def test_a_push_and_a_scheduled_run_are_never_skipped(tmp_path: Path) -> None:
    for event in ("push", "schedule", "workflow_dispatch"):
        run = _fake_run(tmp_path / event, {}, {"GITHUB_EVENT_NAME": event})
        assert run.argv_log and run.outputs["skipped"] == "false", event


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        (
            {"PG_FORK_PULL_REQUESTS": "sometimes"},
            "the fork-pull-requests input must be skip or scan",
        ),
        (
            {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": "/nonexistent/event.json"},
            "cannot read the event payload GITHUB_EVENT_PATH",
        ),
    ],
)
def test_a_bad_fork_setting_or_payload_is_exit_2(
    tmp_path: Path, env: dict[str, str], needle: str
) -> None:
    run = _fake_run(tmp_path, {}, env)
    assert run.rc == 2 and not run.argv_log
    assert any(needle in a for a in run.annotations), run.stdout


@pytest.mark.slow
def test_a_config_file_as_the_target_input_still_works_with_a_deprecation_notice(
    tmp_path: Path,
) -> None:
    run = run_action(tmp_path, {"PG_TARGET": "agent.yml"}, fake=True)
    assert run.rc == 0, run.stdout
    (scan,) = run.argv_log
    assert scan[-2:] == ["--", "agent.yml"], "passed on as before"
    (notice,) = [a for a in run.annotations if a.startswith("::notice")]
    assert "title=probegate inputs" in notice
    assert "a config file as the target input (agent.yml) is deprecated" in notice
    assert "write config%3A agent.yml instead" in notice or "write config: agent.yml" in notice
    assert "deprecated" in run.summary
    for kind in ("demo", "demo-hardened", "demo-careful"):
        quiet = run_action(tmp_path / kind, {"PG_TARGET": kind}, fake=True)
        assert not [a for a in quiet.annotations if a.startswith("::notice")], kind
