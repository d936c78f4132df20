"""CI parity: GitHub's test job runs `.ci/run`, the script every other CI run uses.

A job that ran `make test` alone once skipped `npm ci`, so the SARIF Multitool tests failed
under GitHub while `.ci/run` passed; one script for both keeps their steps the same.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_the_workflows_test_job_runs_the_ci_script() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    runs = [str(step.get("run", "")).strip() for step in workflow["jobs"]["test"]["steps"]]
    assert "bash .ci/run" in runs
    assert not any("make test" in run for run in runs), runs


def test_the_ci_script_installs_every_tool_before_the_tests() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert script.index("npm ci") < script.index("make test")
    assert script.index("apt-get install") < script.index("make test")
    assert "shellcheck" in script
