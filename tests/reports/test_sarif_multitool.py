"""GitHub code scanning would accept our SARIF: no error and no warning from the SARIF
Multitool's "Gh" and "Sarif" rules.

CI installs the Multitool with ``npm ci`` (see ``.ci/run``); without it these tests are skipped
locally and fail in CI (``CI`` set), never skipped silently there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from probegate.cli import main
from probegate.reports import sarif
from tests.factories import make_finding, make_report
from tests.reports.multitool import github_findings, require_multitool
from tests.reports.samples import golden_report, hostile_report


def _errors(path: Path, workdir: Path) -> list[dict[str, object]]:
    return [f for f in github_findings(path, workdir) if f["level"] == "error"]


def _problems(path: Path, workdir: Path) -> list[dict[str, object]]:
    return [f for f in github_findings(path, workdir) if f["level"] in ("error", "warning")]


@pytest.mark.slow
def test_the_multitool_catches_what_github_rejects(tmp_path: Path) -> None:
    """The checker itself works: a result without a location is a GH1015 error."""
    require_multitool()
    doc = json.loads(sarif.render(make_report([make_finding(0)])))
    del doc["runs"][0]["results"][0]["locations"]
    bad = tmp_path / "bad.sarif"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    rules = {f["rule"] for f in _errors(bad, tmp_path)}
    assert "GH1015" in rules


@pytest.mark.parametrize("build", [golden_report, hostile_report], ids=["golden", "hostile"])
@pytest.mark.slow
def test_synthetic_reports_pass_github_rules(build: object, tmp_path: Path) -> None:
    require_multitool()
    path = tmp_path / "scan.sarif"
    path.write_bytes(sarif.render(build()))  # type: ignore[operator]
    assert _problems(path, tmp_path) == []


@pytest.mark.slow
def test_a_real_demo_scan_passes_github_rules(tmp_path: Path) -> None:
    require_multitool()
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = main(["scan", "demo", "--quiet", "--no-sign", "--output", "sarif"])
    finally:
        os.chdir(old)
    assert code == 0
    path = tmp_path / "probegate-out" / "scan.sarif"
    assert json.loads(path.read_bytes())["runs"][0]["results"], "the demo has findings"
    assert _problems(path, tmp_path) == []


def test_a_missing_multitool_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.reports import multitool

    monkeypatch.setattr(multitool, "multitool_path", lambda: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="npm ci"):
        multitool.require_multitool()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        multitool.require_multitool()
