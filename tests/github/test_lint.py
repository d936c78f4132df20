"""The Action and the workflows pass GitHub's schemas, zizmor and shellcheck, all offline.

check-jsonschema ships the GitHub schemas (``--builtin-schema`` needs no network), zizmor's
``--offline`` skips only the audits that query GitHub, and actionlint has GitHub's actions and
expressions built in. The three come with the dev extras and shellcheck from the system's
packages; a tool that is missing skips its test on a developer's
machine and fails it under CI (`.ci/run` installs all of them).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.github.helpers import REPO, which
from tests.tools import tool_missing

WORKFLOWS = sorted(str(p.relative_to(REPO)) for p in (REPO / ".github" / "workflows").glob("*.yml"))
EXAMPLES = sorted(str(p.relative_to(REPO)) for p in (REPO / "examples").glob("*.yml"))


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    path = which(tool)
    if path is None:
        hint = "apt-get install shellcheck" if tool == "shellcheck" else "make install"
        tool_missing(f"{tool} is not installed ({hint})")
    return subprocess.run(
        [path, *args], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )


def test_there_is_something_to_lint():
    assert ".github/workflows/ci.yml" in WORKFLOWS
    assert len(EXAMPLES) >= 2


def test_action_yml_matches_githubs_action_schema():
    proc = _run("check-jsonschema", "--builtin-schema", "vendor.github-actions", "action.yml")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_workflows_match_githubs_workflow_schema():
    proc = _run(
        "check-jsonschema", "--builtin-schema", "vendor.github-workflows", *WORKFLOWS, *EXAMPLES
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_finds_nothing():
    # Files, not the examples directory: given a directory, zizmor only collects
    # .github/workflows inside it.
    proc = _run("zizmor", "--offline", "--no-progress", "action.yml", *WORKFLOWS, *EXAMPLES)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_finds_nothing():
    # With shellcheck on PATH (CI installs it), actionlint also checks every run: script.
    proc = _run("actionlint", "-no-color", *WORKFLOWS, *EXAMPLES)
    assert proc.returncode == 0, proc.stdout + proc.stderr


ROUTES = {
    "openai": {},
    "anthropic": {},
    "http-on-the-runner": {"start": "python3 -m my_agent"},
    "http-on-the-runner-no-start": {},
    "http-at-an-address": {"endpoint": "https://agent.example.com/chat"},
    "http-proxy": {"proxy": "openai-chat", "start": "python3 -m my_agent"},
    "python": {},
    "python-proxy": {"proxy": "anthropic-messages"},
}


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_the_workflow_init_writes_passes_actionlint_and_zizmor(name: str, tmp_path: Path) -> None:
    """``probegate init --workflow``, for every route: the example, made to reach the agent."""
    from probegate.scaffold import Proxy, Route
    from probegate.scaffold.workflow import workflow_text

    given = dict(ROUTES[name])
    proxy = given.pop("proxy", None)
    route = Route(name.split("-")[0], proxy=Proxy(proxy) if proxy else None, **given)
    path = tmp_path / "probegate.yml"
    path.write_text(workflow_text(route), encoding="utf-8")
    for tool, *args in (
        ("actionlint", "-no-color"),
        ("zizmor", "--offline", "--no-progress"),
        ("check-jsonschema", "--builtin-schema", "vendor.github-workflows"),
    ):
        proc = _run(tool, *args, str(path))
        assert proc.returncode == 0, f"{tool}: {proc.stdout}{proc.stderr}"


def test_actionlint_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n"
        '      - run: echo "${{ github.event.head_commit.message }}"\n',
        encoding="utf-8",
    )
    proc = _run("actionlint", "-no-color", str(bad))
    assert proc.returncode == 1 and "potentially untrusted" in proc.stdout


def test_entrypoint_is_shellcheck_clean():
    proc = _run("shellcheck", "entrypoint.sh")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_missing_tool_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.github import test_lint

    monkeypatch.setattr(test_lint, "which", lambda tool: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="apt-get install shellcheck"):
        _run("shellcheck", "entrypoint.sh")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        _run("shellcheck", "entrypoint.sh")
