"""SARIF from a real config scan uploads without a warning.

upload-sarif runs codeql-action's own fingerprinting code on every file before it uploads it:
for each result whose file exists in the checkout it computes ``primaryLocationLineHash`` and
warns (a workflow annotation per result) when the file already carries a different value. The
reference copy of that code runs through ``check_fingerprints.sh`` (shared/reference, needs node
and the npm registry for its one dependency). The scan is of an openai agent (the loopback fake)
defined by a config and a prompt file in a git repository, started from a subdirectory, so
every path must be relative to the repository root.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from tests.reference import reference_path
from tests.reports.multitool import github_findings, require_multitool
from tests.servers.configs import known_probes, openai_config
from tests.servers.openai_agent import OpenAIAgentServer
from tests.tools import tool_missing


def _check_fingerprints(sarif: Path, checkout: Path) -> subprocess.CompletedProcess[str]:
    script = reference_path("codeql-action", "check_fingerprints.sh")
    if shutil.which("node") is None or shutil.which("npm") is None:
        tool_missing("node and npm are needed to run upload-sarif's fingerprinting code")
    proc = subprocess.run(
        ["bash", str(script), str(sarif), str(checkout)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 1), f"could not run: {proc.stdout}{proc.stderr}"
    return proc


def _location(result: dict[str, Any]) -> tuple[str, int]:
    physical = result["locations"][0]["physicalLocation"]
    return physical["artifactLocation"]["uri"], physical["region"]["startLine"]


def test_a_config_scan_uploads_without_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    agent = repo / "agents" / "support"
    agent.mkdir(parents=True)
    out = tmp_path / "out"
    with OpenAIAgentServer() as server:
        config = openai_config(agent, server.endpoint)
        monkeypatch.chdir(agent)  # not the root: the paths must not depend on it
        code = main(
            ["scan", config.name, *known_probes(), "--no-sign", "--quiet", "--output",
             "json,sarif", "--output-dir", str(out), "--store", str(tmp_path / "store")]
        )  # fmt: skip
    assert code == 0
    sarif = out / "scan.sarif"
    results = json.loads(sarif.read_bytes())["runs"][0]["results"]
    where = {r["ruleId"]: _location(r) for r in results}
    assert len(where) >= 5, "the weak agent falls for the known probes"
    for uri, _line in where.values():
        assert (repo / uri).is_file(), uri
    text = config.read_text(encoding="utf-8").splitlines()
    send_email = 1 + next(i for i, line in enumerate(text) if "name: send_email" in line)
    # a prompt finding at the prompt file; a tool finding at the tool's entry in the config
    assert where["asi01.direct-system-prompt-leak"] == ("agents/support/prompt.txt", 1)
    assert where["asi02.email-blast"] == ("agents/support/probegate.yml", send_email)

    proc = _check_fingerprints(sarif, repo)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("0 warning(s)"), proc.stdout

    require_multitool()
    problems = [f for f in github_findings(sarif, tmp_path) if f["level"] in ("error", "warning")]
    assert problems == []


def test_the_check_sees_a_fingerprint_upload_sarif_would_warn_about(tmp_path: Path) -> None:
    """The check has teeth: a line hash of our own, as probegate used to write, warns."""
    (tmp_path / "probegate.yml").write_text("target:\n  kind: demo\n", encoding="utf-8")
    result = {
        "ruleId": "asi01.x",
        "message": {"text": "x."},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": "probegate.yml"},
                    "region": {"startLine": 1},
                }
            }
        ],
        "partialFingerprints": {"primaryLocationLineHash": "0123456789abcdef:1"},
    }
    log = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "t"}}, "results": [result]}]}
    sarif = tmp_path / "old.sarif"
    sarif.write_text(json.dumps(log), encoding="utf-8")
    proc = _check_fingerprints(sarif, tmp_path)
    assert proc.returncode == 1 and "1 warning(s)" in proc.stdout, proc.stdout
