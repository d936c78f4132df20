"""The README's quick-start workflow, as a new repository first meets it.

The workflow is read from README.md itself, its probegate step's ``with:`` inputs become the
``PG_*`` variables action.yml maps them to, and ``entrypoint.sh`` runs in a workspace that holds
only the agent's config (``probegate.yml`` and its prompt), against a real loopback
OpenAI-compatible agent that falls for attacks. No baseline file exists yet, ``fail-on`` is not
set: the step must be green and leave SARIF for the upload step.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.github.helpers import (
    REPO,
    assert_only_intended_commands,
    require_tool,
    run_action,
)
from tests.servers.configs import openai_config
from tests.servers.openai_agent import OpenAIAgentServer

ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))


def readme_workflow() -> tuple[str, dict[str, Any]]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## GitHub Action", 1)[1]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert match, "no workflow in the README's GitHub Action section"
    return match.group(1), yaml.safe_load(match.group(1))


def probegate_step(workflow: dict[str, Any]) -> dict[str, Any]:
    steps = [
        step
        for job in workflow["jobs"].values()
        for step in job["steps"]
        if str(step.get("uses", "")).startswith("probegate/probegate@")
    ]
    assert len(steps) == 1
    return steps[0]


def inputs_as_env(with_: dict[str, Any]) -> dict[str, str]:
    """``with:`` inputs as the container sees them (action.yml's runs.env mapping)."""
    by_input = {
        re.fullmatch(r"\$\{\{ inputs\.([\w-]+) \}\}", value).group(1): name  # type: ignore[union-attr]
        for name, value in ACTION["runs"]["env"].items()
    }
    env: dict[str, str] = {}
    for name, value in with_.items():
        assert name in ACTION["inputs"], f"the README passes an unknown input {name}"
        assert "${{" not in str(value)
        env[by_input[name]] = str(value)
    return env


def test_readme_quickstart_is_green_on_a_repository_with_only_the_agent_config(
    tmp_path: Path, weak_agent: OpenAIAgentServer
) -> None:
    _, workflow = readme_workflow()
    step = probegate_step(workflow)
    inputs = inputs_as_env(step["with"])
    assert "PG_FAIL_ON" not in inputs and "PG_FAIL_UNDER" not in inputs
    assert inputs.get("PG_BASELINE"), "the quick start shows the baseline input"
    secrets = {name: "test-key" for name in step.get("env", {})}

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    config = openai_config(workspace, weak_agent.endpoint)
    assert config.name == inputs.get("PG_CONFIG", "probegate.yml")
    assert sorted(p.name for p in workspace.iterdir()) == ["probegate.yml", "prompt.txt"]

    run = run_action(tmp_path, inputs, env=secrets, workspace=workspace)
    assert run.rc == 0, run.stdout
    assert_only_intended_commands(run.stdout)
    assert run.outputs["exit-code"] == "0"
    sarif = workspace / run.outputs["sarif-path"]
    assert run.outputs["sarif-path"] == "probegate-out/scan.sarif" and sarif.is_file()
    assert json.loads(sarif.read_text(encoding="utf-8"))["runs"][0]["results"]
    report = json.loads((workspace / run.outputs["json-path"]).read_text(encoding="utf-8"))
    assert report["findings"], "the loopback agent is weak: findings are expected"
    assert run.outputs["new-findings"] == str(len(report["findings"]))
    notices = [a for a in run.annotations if "title=probegate baseline" in a]
    assert len(notices) == 1 and inputs["PG_BASELINE"] in notices[0]
    assert "probegate gate: passed" in run.summary


def test_readme_workflow_has_exactly_the_permissions_and_current_pins(tmp_path: Path) -> None:
    text, workflow = readme_workflow()
    assert workflow["permissions"] == {"contents": "read"}
    (job,) = workflow["jobs"].values()
    uses = [str(s.get("uses", "")) for s in job["steps"]]
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)
    assert job["permissions"] == {
        "contents": "read",
        "actions": "read",
        "security-events": "write",
    }
    path = tmp_path / "probegate.yml"
    path.write_text(text, encoding="utf-8")
    for tool, *args in (
        ("check-jsonschema", "--builtin-schema", "vendor.github-workflows"),
        ("zizmor", "--offline", "--no-progress"),
    ):
        proc = subprocess.run(
            [require_tool(tool), *args, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, f"{tool}: {proc.stdout}{proc.stderr}"
