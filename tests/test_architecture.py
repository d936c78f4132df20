"""The layers contract (docs/architecture.md), run under `make test` as well as `make lint`.

The contract lives in pyproject.toml; `lint-imports` checks every import in the package
against it. The second test proves the check has teeth: the same contract with two layers
swapped must fail on today's code.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _config() -> dict[str, Any]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    config: dict[str, Any] = data["tool"]["importlinter"]
    return config


def _lint(*args: str) -> subprocess.CompletedProcess[str]:
    assert LINT_IMPORTS.exists(), "lint-imports is missing: `make install` installs the dev extra"
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _as_ini(config: dict[str, Any]) -> str:
    """The contract in import-linter's INI form, so a test can write a changed copy."""
    lines = ["[importlinter]", f"root_package = {config['root_package']}"]
    for contract in config["contracts"]:
        lines.append(f"[importlinter:contract:{contract['id']}]")
        for key, value in contract.items():
            if key == "id":
                continue
            if isinstance(value, list):
                lines.append(f"{key} =")
                lines.extend(f"    {item}" for item in value)
            else:
                lines.append(f"{key} = {str(value).lower() if isinstance(value, bool) else value}")
    return "\n".join(lines) + "\n"


def test_every_import_follows_the_layers() -> None:
    proc = _lint("pyproject.toml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kept = len(_config()["contracts"])
    assert f"Contracts: {kept} kept, 0 broken." in proc.stdout, proc.stdout


def test_the_contract_catches_an_import_that_runs_upward(tmp_path: Path) -> None:
    config = _config()
    (layers,) = [c for c in config["contracts"] if c["type"] == "layers"]
    order = layers["layers"]
    # The engine drives the targets; declared the other way round, that import runs upward.
    i, j = order.index("engine"), order.index("targets | judge")
    order[i], order[j] = order[j], order[i]
    config["contracts"] = [layers]
    changed = tmp_path / "swapped.ini"
    changed.write_text(_as_ini(config), encoding="utf-8")
    proc = _lint(str(changed))
    assert proc.returncode != 0, proc.stdout
    assert "probegate.engine is not allowed to import probegate.targets" in proc.stdout, proc.stdout


def test_a_forbidden_contract_catches_the_import_it_names(tmp_path: Path) -> None:
    """The forbidden contracts (pure reports, decisions from reports, models as data) have
    teeth: the pure-reports contract, also forbidding the models every emitter reads, fails."""
    config = _config()
    (pure,) = [c for c in config["contracts"] if c["id"] == "pure-reports"]
    pure["forbidden_modules"] = [*pure["forbidden_modules"], "probegate.models"]
    config["contracts"] = [pure]
    changed = tmp_path / "forbidden.ini"
    changed.write_text(_as_ini(config), encoding="utf-8")
    proc = _lint(str(changed))
    assert proc.returncode != 0, proc.stdout
    assert "probegate.reports is not allowed to import probegate.models" in proc.stdout, proc.stdout
