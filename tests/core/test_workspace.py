"""Locations a report carries are files of the repository, relative to its root."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from probegate.cli import main
from probegate.models.report import SourceLocation
from probegate.workspace import anchor, locate, repo_path, repository_root, workflow_location

WORKFLOW = """name: agent security
on: pull_request
jobs:
  scan:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: probegate/probegate@v1
        with:
          target: demo
"""


def _git_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path.resolve()


def test_the_root_is_the_git_top_level_not_the_working_directory(tmp_path: Path) -> None:
    repo = _git_repo(tmp_path / "repo")
    sub = repo / "agents" / "support"
    sub.mkdir(parents=True)
    assert repository_root(env={}, cwd=sub) == repo
    outside = tmp_path / "plain"
    outside.mkdir()
    assert repository_root(env={}, cwd=outside) == outside.resolve()  # no repository: the cwd


def test_github_workspace_wins(tmp_path: Path) -> None:
    repo = _git_repo(tmp_path / "repo")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    assert repository_root(env={"GITHUB_WORKSPACE": str(workspace)}, cwd=repo) == workspace
    # a workspace that does not exist is not believed
    gone = {"GITHUB_WORKSPACE": str(tmp_path / "gone")}
    assert repository_root(env=gone, cwd=repo) == repo


def test_only_existing_files_inside_the_root_are_located(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "probegate.yml").write_text("target: {}\n", encoding="utf-8")
    (tmp_path / "outside.yml").write_text("x\n", encoding="utf-8")
    assert repo_path(root / "a" / "probegate.yml", root) == "a/probegate.yml"
    assert repo_path(root / "a" / "missing.yml", root) is None
    assert repo_path(root / "a", root) is None  # a directory is not a file
    assert repo_path(tmp_path / "outside.yml", root) is None
    assert locate(root / "a" / "probegate.yml", root, 3) == SourceLocation(
        path="a/probegate.yml", line=3
    )
    assert locate(None, root) is None


def test_the_workflow_running_the_scan_is_the_anchor(tmp_path: Path) -> None:
    root = tmp_path
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "scan.yml").write_text(WORKFLOW, encoding="utf-8")
    env = {"GITHUB_WORKFLOW_REF": "octo/agent/.github/workflows/scan.yml@refs/pull/7/merge"}
    expected = SourceLocation(path=".github/workflows/scan.yml", line=8)  # the probegate step
    assert workflow_location(root, env) == expected
    assert anchor([root / ".probegate" / "scan.json"], root, env) == expected
    # no workflow (a local run), or one that is not in the checkout: the stored report
    stored = root / ".probegate" / "scans" / "pg-1" / "scan.json"
    for other in ({}, {"GITHUB_WORKFLOW_REF": "octo/agent/.github/workflows/gone.yml@x"}):
        assert anchor([stored], root, other) == SourceLocation(
            path=".probegate/scans/pg-1/scan.json"
        )
    outside = tmp_path.parent / "elsewhere" / "scan.json"
    assert anchor([outside, stored], root, {}).path == ".probegate/scans/pg-1/scan.json"


@pytest.mark.parametrize("github", [False, True], ids=["local", "github-actions"])
def test_demo_findings_point_at_a_file_that_exists(
    github: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _git_repo(tmp_path / "repo")
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "scan.yml").write_text(WORKFLOW, encoding="utf-8")
    if github:
        monkeypatch.setenv("GITHUB_WORKSPACE", str(repo))
        monkeypatch.setenv("GITHUB_WORKFLOW_REF", "octo/agent/.github/workflows/scan.yml@main")
    monkeypatch.chdir(repo)
    assert main(["scan", "demo", "--quiet", "--no-sign", "--output", "json,sarif"]) == 0
    results = json.loads((repo / "probegate-out" / "scan.sarif").read_bytes())["runs"][0]["results"]
    assert results
    where = {
        (r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
         r["locations"][0]["physicalLocation"]["region"]["startLine"])
        for r in results
    }  # fmt: skip
    (uri, line), *rest = sorted(where)
    assert not rest  # the demo has no file of its own: every finding at the one anchor
    assert (repo / uri).is_file()
    if github:
        assert (uri, line) == (".github/workflows/scan.yml", 8)
    else:
        assert uri.startswith(".probegate/scans/") and uri.endswith("/scan.json")
