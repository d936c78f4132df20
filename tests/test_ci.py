"""CI parity: GitHub's test job runs `.ci/run`, the script every other CI run uses.

A job that ran `make test` alone once skipped `npm ci`, so the SARIF Multitool tests failed
under GitHub while `.ci/run` passed; one script for both keeps their steps the same.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_the_workflows_test_jobs_run_the_ci_script_and_both_halves_of_the_suite() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    runs = {
        job: [str(step.get("run", "")).strip() for step in workflow["jobs"][job]["steps"]]
        for job in ("test", "test-slow")
    }
    assert "bash .ci/run fast" in runs["test"]
    assert "bash .ci/run slow" in runs["test-slow"]
    assert not any("make test" in run for job in runs.values() for run in job), runs


def test_the_ci_script_runs_every_test_and_make_test_leaves_out_only_the_slow_ones() -> None:
    """`make test` stays quick by leaving out tests marked slow; `.ci/run` (CI's command) runs
    them after it, so no test is dropped; a marker spelt wrong is an error (--strict-markers)."""
    script = (ROOT / ".ci" / "run").read_text()
    assert script.index("then make test;") < script.index("then make test-slow;")
    assert '-m "not slow"' in _make_recipe("test")
    assert "-m slow" in _make_recipe("test-slow")
    pytest_ini = (ROOT / "pyproject.toml").read_text().split("[tool.pytest.ini_options]")[1]
    assert "--strict-markers" in pytest_ini and '"slow:' in pytest_ini


def test_the_ci_script_installs_every_tool_before_the_tests() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert script.index("npm ci") < script.index("then make test")
    assert script.index("apt-get install") < script.index("then make test")
    assert "shellcheck" in script


def _make_recipe(target: str) -> str:
    makefile = (ROOT / "Makefile").read_text()
    return makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]


def test_make_demo_has_the_extras_of_every_format() -> None:
    """make demo writes every format (tests/reports/test_formats_registry.py), pdf included."""
    dev = (ROOT / "pyproject.toml").read_text().split("\ndev = [", 1)[1]
    assert '"probegate[pdf' in dev, "make demo writes pdf: the dev install needs its extra"


def test_make_test_shows_progress_and_skip_reasons() -> None:
    recipe = _make_recipe("test")
    assert "PYTHONUNBUFFERED=1" in recipe  # a CI log gets each line when it is printed
    pytest_ini = (ROOT / "pyproject.toml").read_text().split("[tool.pytest.ini_options]")[1]
    addopts = pytest_ini.split("addopts = ", 1)[1].splitlines()[0]
    assert any(opt.startswith("-r") and "s" in opt for opt in addopts.strip('"').split())
    assert 'console_output_style = "count"' in pytest_ini
