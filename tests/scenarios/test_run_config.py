"""``probegate run``'s flags become one RunConfig before anything runs (scenarios/run_config.py)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from probegate.cli import build_parser
from probegate.commands.run import run_config
from probegate.errors import UsageError
from probegate.scenarios.run_config import RunConfig


def test_every_flag_reaches_the_config() -> None:
    argv = ["run", "suites", "-a", "agent:run", "-o", "junit,md", "-o", "md", "--output-dir", "o"]
    argv += ["-s", "smoke", "-t", "a", "-t", "b", "--dry-run", "--timeout", "2.5", "--retry", "3"]
    argv += ["--retry-delay", "0", "--fail-under-pass-rate", "0.9", "--compare", "old.json"]
    config = run_config(build_parser().parse_args(argv))
    assert config == RunConfig(
        path=Path("suites"),
        adapter="agent:run",
        formats=("junit", "md"),
        output_dir=Path("o"),
        suite="smoke",
        tags=("a", "b"),
        dry_run=True,
        timeout=2.5,
        retries=3,
        retry_delay=0.0,
        fail_under_pass_rate=0.9,
        baselines=(Path("old.json"),),
    )
    defaults = run_config(build_parser().parse_args(["run"]))
    assert [
        f.name for f in fields(RunConfig) if getattr(config, f.name) == getattr(defaults, f.name)
    ] == []


def test_formats_that_write_one_file_are_refused_before_anything_runs() -> None:
    with pytest.raises(UsageError, match="both write results_"):
        run_config(build_parser().parse_args(["run", "-o", "json,agenticassure"]))
