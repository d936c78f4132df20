"""Python agents in the Action: the ``requirements`` input and ``command: run``.

The agent's dependency is a real wheel built here and installed by real pip from a local
directory (``--no-index --find-links`` in the requirements file, so no network), with its
sha256 in the file as ``--require-hashes`` demands. The entrypoint installs it into a
directory of its own, so this test's interpreter never sees the package.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import zipfile
from pathlib import Path

from tests.github.helpers import assert_only_intended_commands, block_text, run_action

DEP = "tinyagentdep"


def make_wheel(directory: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """A minimal pure-Python wheel (PEP 427) with a RECORD pip accepts."""
    directory.mkdir(parents=True, exist_ok=True)
    dist_info = f"{name}-{version}.dist-info"
    entries = {
        **files,
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: probegate-tests\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n"
        ),
    }
    record = []
    for path, text in entries.items():
        digest = hashlib.sha256(text.encode()).digest()
        encoded = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        record.append(f"{path},sha256={encoded},{len(text.encode())}")
    record.append(f"{dist_info}/RECORD,,")
    entries[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in entries.items():
            zf.writestr(zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0)), text)
    return wheel


def lock_file(workspace: Path, wheels: list[Path], *, hashed: bool = True) -> str:
    lines = ["--no-index", "--find-links wheels"]
    for wheel in wheels:
        name, version = wheel.name.split("-")[:2]
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        lines.append(f"{name}=={version}" + (f" --hash=sha256:{digest}" if hashed else ""))
    (workspace / "requirements").mkdir(exist_ok=True)
    (workspace / "requirements" / "agent.txt").write_text("\n".join(lines) + "\n", "utf-8")
    return "requirements/agent.txt"


def agent_workspace(tmp_path: Path) -> tuple[Path, Path]:
    """A repository with a python agent that imports a package the image does not have."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    wheel = make_wheel(
        workspace / "wheels",
        DEP,
        "1.0",
        {f"{DEP}/__init__.py": 'REPLY = "I can only help with your own order, A1 is shipped."\n'},
    )
    (workspace / "agent.py").write_text(
        f"import {DEP}\n\n\ndef run(input, context=None):\n    return {{'output': {DEP}.REPLY}}\n",
        encoding="utf-8",
    )
    (workspace / "probegate.yml").write_text(
        "target:\n  kind: python\n  python: agent:run\n", encoding="utf-8"
    )
    return workspace, wheel


def test_without_requirements_a_python_agent_cannot_import_its_dependency(tmp_path: Path) -> None:
    workspace, _ = agent_workspace(tmp_path)
    run = run_action(tmp_path, {"PG_FORMATS": "json"}, workspace=workspace)
    assert run.rc == 2, run.stdout
    assert f"No module named '{DEP}'" in run.summary


def test_requirements_input_installs_the_agents_dependencies(tmp_path: Path) -> None:
    workspace, wheel = agent_workspace(tmp_path)
    requirements = lock_file(workspace, [wheel])
    run = run_action(
        tmp_path, {"PG_FORMATS": "json,sarif", "PG_REQUIREMENTS": requirements}, workspace=workspace
    )
    assert run.rc == 0, run.stdout
    assert_only_intended_commands(run.stdout)
    assert f"Successfully installed {DEP}-1.0" in block_text(run.stdout)
    report = json.loads((workspace / run.outputs["json-path"]).read_text(encoding="utf-8"))
    assert report["target"]["mode"] == "python" and report["results"]
    assert run.outputs["sarif-path"] == "probegate-out/scan.sarif"
    # Installed for the scan only: not into this interpreter, not into the workspace.
    assert importlib.util.find_spec(DEP) is None
    assert not list(workspace.rglob(f"{DEP}/__init__.py"))


def test_requirements_without_hashes_are_refused(tmp_path: Path) -> None:
    workspace, wheel = agent_workspace(tmp_path)
    requirements = lock_file(workspace, [wheel], hashed=False)
    run = run_action(tmp_path, {"PG_REQUIREMENTS": requirements}, workspace=workspace)
    assert run.rc == 2, run.stdout
    assert_only_intended_commands(run.stdout)
    assert "--hash" in block_text(run.stdout)  # pip's own explanation, inside the block
    assert any("pip could not install the requirements input" in a for a in run.annotations)
    assert run.outputs["json-path"] == ""


def test_a_package_the_image_has_at_another_version_is_refused(tmp_path: Path) -> None:
    workspace, wheel = agent_workspace(tmp_path)
    clash = make_wheel(workspace / "wheels", "PyYAML", "0.1", {"yaml/__init__.py": "X = 1\n"})
    requirements = lock_file(workspace, [wheel, clash])
    run = run_action(tmp_path, {"PG_REQUIREMENTS": requirements}, workspace=workspace)
    assert run.rc == 2, run.stdout
    (error,) = [a for a in run.annotations if a.startswith("::error")]
    assert "pyyaml 0.1 (the image has " in error
    assert run.outputs["json-path"] == ""


SUITE = """\
suite: support
scenarios:
  - name: order_status
    input: Where is my order A1?
    expected_output: shipped
  - name: refund
    input: Refund order A1
    expected_output: refunded
"""


def test_command_run_runs_the_scenario_suites_with_the_agents_requirements(
    tmp_path: Path,
) -> None:
    workspace, wheel = agent_workspace(tmp_path)
    (workspace / "suite.yml").write_text(SUITE, encoding="utf-8")
    inputs = {
        "PG_COMMAND": "run",
        "PG_TARGET": "suite.yml",
        "PG_ADAPTER": "agent:run",
        "PG_REQUIREMENTS": lock_file(workspace, [wheel]),
        "PG_FORMATS": "json,sarif,junit,md,pdf",  # sarif and pdf are scan's: ignored here
    }
    run = run_action(tmp_path, inputs, workspace=workspace)
    assert run.rc == 1, run.stdout  # the refund scenario fails: the agent never refunds
    assert_only_intended_commands(run.stdout)
    out = run.outputs
    assert out["exit-code"] == "1"
    assert out["junit-path"] == "probegate-out/junit.xml"
    assert out["summary-path"] == "probegate-out/summary.md"
    assert out["json-path"] == out["sarif-path"] == out["score"] == ""
    files = sorted(p.name for p in (workspace / "probegate-out").iterdir())
    assert "junit.xml" in files and "summary.md" in files
    assert [f for f in files if f.startswith("results_") and f.endswith(".json")]
    assert "scan.sarif" not in files and "report.pdf" not in files
    assert "probegate gate: failed" in run.summary
    assert "probegate run: 2 scenarios" in run.summary
    summary = (workspace / out["summary-path"]).read_text(encoding="utf-8")
    assert summary.strip() in run.summary
    assert run.annotations == []


def test_command_run_passes(tmp_path: Path) -> None:
    workspace, wheel = agent_workspace(tmp_path)
    (workspace / "suite.yml").write_text(SUITE.split("  - name: refund")[0], encoding="utf-8")
    inputs = {
        "PG_COMMAND": "run",
        "PG_TARGET": "suite.yml",
        "PG_ADAPTER": "agent:run",
        "PG_REQUIREMENTS": lock_file(workspace, [wheel]),
    }
    run = run_action(tmp_path, inputs, workspace=workspace)
    assert run.rc == 0, run.stdout
    assert "probegate gate: passed" in run.summary


def test_command_run_refuses_scan_inputs_and_needs_target_and_adapter(tmp_path: Path) -> None:
    cases = [
        ({"PG_COMMAND": "run", "PG_TARGET": "s.yml", "PG_ADAPTER": "a:b", "PG_FAIL_ON": "high"},
         "takes no fail-on input"),
        ({"PG_COMMAND": "run", "PG_TARGET": "s.yml", "PG_ADAPTER": "a:b", "PG_CONFIRM": "2"},
         "takes no confirm input"),
        ({"PG_COMMAND": "run", "PG_TARGET": "s.yml"}, "needs the target input"),
        ({"PG_COMMAND": "deploy"}, "the command input must be scan or run"),
        ({"PG_TARGET": "demo", "PG_ADAPTER": "a:b"}, "the adapter input is for command: run"),
    ]  # fmt: skip
    for index, (inputs, needle) in enumerate(cases):
        sub = tmp_path / str(index)
        sub.mkdir()
        run = run_action(sub, inputs, fake=True)
        assert run.rc == 2, (inputs, run.stdout)
        assert run.argv_log == []
        assert any(needle in a for a in run.annotations), run.stdout
        assert_only_intended_commands(run.stdout)


def test_command_run_argv(tmp_path: Path) -> None:
    inputs = {
        "PG_COMMAND": "run",
        "PG_TARGET": "-suites dir",
        "PG_ADAPTER": "my agent:Agent",
        "PG_FORMATS": "json, junit,html",
        "PG_ARGS": "--fail-under-pass-rate 0.9",
    }
    run = run_action(tmp_path, inputs, fake=True)
    assert run.rc == 0, run.stdout
    assert run.argv_log == [
        [
            "run",
            "--adapter=my agent:Agent",
            "--output=json,junit",
            "--output-dir=probegate-out",
            "--fail-under-pass-rate",
            "0.9",
            "--",
            "-suites dir",
        ]
    ]


def test_pdf_through_the_action(tmp_path: Path) -> None:
    run = run_action(tmp_path, {"PG_TARGET": "demo-hardened", "PG_FORMATS": "json,pdf"})
    assert run.rc == 0, run.stdout
    pdf = run.workspace / "probegate-out" / "report.pdf"
    assert pdf.read_bytes().startswith(b"%PDF-")
