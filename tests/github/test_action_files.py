"""action.yml, entrypoint.sh, Dockerfile, the workflows and the docs agree with each other.

The Action is spread over several files that name the same things (inputs, PG_* variables,
defaults, outputs); these tests are the registry check that keeps them in step.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from tests.github.helpers import ENTRYPOINT, OUTPUT_NAMES, REPO

ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
ENTRY = ENTRYPOINT.read_text(encoding="utf-8")
DOCKERFILE = (REPO / "Dockerfile").read_text(encoding="utf-8")
DOCS = (REPO / "docs" / "github-action.md").read_text(encoding="utf-8")
WORKFLOW_FILES = sorted((REPO / ".github" / "workflows").glob("*.yml")) + sorted(
    (REPO / "examples").glob("*.yml")
)
SHA_PIN = re.compile(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}")

REQUIRED_INPUTS = {
    "target", "config", "mode", "fail-under", "fail-on", "baseline", "output-dir", "formats",
    "concurrency", "budget-usd", "judge", "args",
}  # fmt: skip


def _env_name(input_name: str) -> str:
    return "PG_" + input_name.upper().replace("-", "_")


def test_action_is_a_docker_action_built_from_the_dockerfile():
    assert ACTION["runs"]["using"] == "docker"
    assert ACTION["runs"]["image"] == "Dockerfile"
    assert "args" not in ACTION["runs"]  # inputs travel as variables, never as argv
    assert ACTION["branding"]["icon"] and ACTION["branding"]["color"]


def test_every_input_is_passed_as_a_plain_variable():
    inputs = ACTION["inputs"]
    assert set(inputs) >= REQUIRED_INPUTS
    env = ACTION["runs"]["env"]
    assert env == {_env_name(name): f"${{{{ inputs.{name} }}}}" for name in inputs}
    code = "\n".join(line for line in ENTRY.splitlines() if not line.lstrip().startswith("#"))
    used = set(re.findall(r"\bPG_[A-Z_]+\b", code))
    # PG_ARGS is read by `python -m probegate.github split-args` alone, never by bash.
    github_cli = (REPO / "src" / "probegate" / "github" / "cli.py").read_text(encoding="utf-8")
    assert '"PG_ARGS"' in github_cli and "PG_ARGS" not in used
    assert used | {"PG_ARGS"} == set(env), "entrypoint.sh and action.yml disagree on PG_* names"


BOOLEANS = {"allow-mismatch": "false", "annotations": "true", "job-summary": "true"}


def test_defaults_agree_between_action_yml_and_entrypoint():
    for name, spec in ACTION["inputs"].items():
        default = str(spec.get("default", ""))
        variable = _env_name(name)
        if name in BOOLEANS:
            assert default == BOOLEANS[name]
            assert (
                f'parse_bool {name.replace("-", "_")} {name} "${{{variable}:-}}" {default}\n'
                in (ENTRY)
            ), name
        elif default:
            assert f"${{{variable}:-{default}}}" in ENTRY, name


def test_outputs_are_the_ones_the_entrypoint_writes():
    assert set(ACTION["outputs"]) == OUTPUT_NAMES


def test_entrypoint_shape():
    assert ENTRY.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in ENTRY
    code = "\n".join(line for line in ENTRY.splitlines() if not line.lstrip().startswith("#"))
    assert not re.search(r"\beval\b", code)
    assert os.access(ENTRYPOINT, os.X_OK), "commit entrypoint.sh with mode 100755"


def test_dockerfile_follows_githubs_rules():
    instructions = [
        line.split()[0].upper()
        for line in DOCKERFILE.splitlines()
        if line.strip() and not line.lstrip().startswith("#") and not line.startswith(" ")
    ]
    assert "USER" not in instructions and "WORKDIR" not in instructions
    assert 'ENTRYPOINT ["/entrypoint.sh"]' in DOCKERFILE


def test_dockerignore_lets_the_build_see_what_it_copies():
    ignore = (REPO / ".dockerignore").read_text(encoding="utf-8").split()
    copied = [
        source
        for line in DOCKERFILE.splitlines()
        if line.startswith("COPY ") and "--from=" not in line
        for source in line.split()[1:-1]
    ]
    assert copied
    for source in copied:
        allowed = f"!{source}" in ignore or f"!{source}/" in ignore
        assert allowed, f"COPY {source}: .dockerignore must let it through"


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_workflows_pin_actions_and_keep_tokens_small(path: Path):
    text = path.read_text(encoding="utf-8")
    workflow = yaml.safe_load(text)
    assert workflow["permissions"] == {"contents": "read"}
    for name, job in workflow["jobs"].items():
        steps = job.get("steps", [])
        uploads = any(
            str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif") for s in steps
        )
        permissions = job.get("permissions") or {}
        writes = permissions.get("security-events") == "write"
        assert uploads == writes, f"{name}: security-events: write exactly where SARIF is uploaded"
        if uploads:  # upload-sarif reads the run's details: refused in private repositories
            assert permissions.get("actions") == "read", f"{name}: upload-sarif needs actions: read"
        for step in steps:
            uses = step.get("uses")
            if uses is None or uses.startswith("./"):
                continue
            assert SHA_PIN.fullmatch(uses), f"{name}: {uses} is not pinned by commit"
            if uses.startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False
    for line in text.splitlines():
        if re.match(r"\s*(- )?uses: [^.]", line):
            assert re.search(r"@[0-9a-f]{40} # \S", line), f"pin without a version comment: {line}"
        if "run:" in line:
            assert "${{" not in line, f"expression templated into a script: {line}"


def test_ci_runs_lint_tests_self_test_and_container_build():
    ci = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))
    jobs = ci["jobs"]
    assert jobs["test"]["strategy"]["matrix"]["python"] == ["3.11", "3.12", "3.13"]
    assert any("make lint" in s.get("run", "") for s in jobs["lint"]["steps"])
    self_test = [s for s in jobs["action"]["steps"] if str(s.get("uses", "")).startswith("./")]
    assert {s["with"]["target"] for s in self_test} == {"demo", "demo-hardened"}
    assert any("docker build" in s.get("run", "") for s in jobs["container"]["steps"])


def test_docs_cover_every_input_and_output_and_embed_the_examples():
    for name in ACTION["inputs"]:
        assert f"| `{name}` |" in DOCS, name
    for name in ACTION["outputs"]:
        assert f"| `{name}` |" in DOCS, name
    for example in sorted((REPO / "examples").glob("*.yml")):
        assert example.read_text(encoding="utf-8") in DOCS, f"{example.name} drifted from the docs"
    for code in range(5):
        assert f"| {code} |" in DOCS


PIN_SOURCES = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    *WORKFLOW_FILES,
]
USES = re.compile(r"uses: ([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # v(\d+)[\d.]*")


def test_every_document_pins_each_action_to_one_current_release():
    """One commit per action across README, docs, examples and CI, and no deprecated major."""
    pins: dict[str, set[tuple[str, int]]] = {}
    for path in PIN_SOURCES:
        for action, sha, major in USES.findall(path.read_text(encoding="utf-8")):
            if action.startswith("probegate/"):
                continue
            pins.setdefault(action, set()).add((sha, int(major)))
    assert "github/codeql-action/upload-sarif" in pins and "actions/checkout" in pins
    for action, seen in pins.items():
        assert len(seen) == 1, f"{action} is pinned to {len(seen)} different commits: {seen}"
    # codeql-action's changelog deprecates v3 in December 2026; artifact actions before v4 are
    # retired, and the node20 majors of checkout and setup-python predate node24 runners.
    minimum = {
        "github/codeql-action/upload-sarif": 4,
        "actions/upload-artifact": 6,
        "actions/download-artifact": 7,
        "actions/checkout": 5,
        "actions/setup-python": 6,
    }
    for action, lowest in minimum.items():
        if action in pins:
            ((_, major),) = pins[action]
            assert major >= lowest, f"{action} v{major} is deprecated or on node20"
