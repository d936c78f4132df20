"""Run GitHub's SARIF ingestion rules offline with the SARIF Multitool (npm package).

``npm ci`` at the repository root installs ``@microsoft/sarif-multitool`` (package.json lists it
as a devDependency); its platform package carries a self-contained binary. The Multitool exits 0
even when it finds errors, so the verdict is read from the SARIF log it writes.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from tests.tools import tool_missing

ROOT = Path(__file__).resolve().parents[2]
_PLATFORM = {"Linux": "linux", "Darwin": "darwin", "Windows": "win32"}.get(platform.system(), "")


def multitool_path() -> Path | None:
    exe = "Sarif.Multitool.exe" if _PLATFORM == "win32" else "Sarif.Multitool"
    path = ROOT / "node_modules" / "@microsoft" / f"sarif-multitool-{_PLATFORM}" / exe
    return path if path.is_file() else None


def require_multitool() -> Path:
    """The binary; skipped locally when it is not installed, a failure in CI (never silent)."""
    path = multitool_path()
    if path is None:
        tool_missing("SARIF Multitool not installed: run 'npm ci' at the repository root")
    if not os.access(path, os.X_OK):  # npm may not have run the chmod postinstall script
        path.chmod(path.stat().st_mode | 0o100)
    return path


def github_findings(sarif_file: Path, workdir: Path) -> list[dict[str, Any]]:
    """Every Multitool result for ``sarif_file`` under the "Gh;Sarif" rules, with its level."""
    out = workdir / f"{sarif_file.stem}.multitool.sarif"
    proc = subprocess.run(
        [
            str(require_multitool()),
            "validate",
            "--rule-kind",
            "Gh;Sarif",
            "--output",
            str(out),
            str(sarif_file),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DOTNET_CLI_TELEMETRY_OPTOUT": "1"},
    )
    assert out.is_file(), (
        f"Multitool wrote no log (exit {proc.returncode}): {proc.stdout}{proc.stderr}"
    )
    log = json.loads(out.read_text(encoding="utf-8-sig"))
    findings = []
    for run in log.get("runs", []):
        rules = {r["id"]: r for r in run.get("tool", {}).get("driver", {}).get("rules", [])}
        for result in run.get("results", []):
            rule = rules.get(result.get("ruleId", ""), {})
            default = rule.get("defaultConfiguration", {}).get("level", "warning")
            findings.append(
                {
                    "level": result.get("level", default),
                    "rule": result.get("ruleId"),
                    "message": result.get("message", {}),
                }
            )
    return findings
