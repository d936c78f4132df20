"""Shared fixtures: run the CLI in-process in a temp dir, and a cached demo scan."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from probegate.cli import main
from tests.servers.faults import FaultServer
from tests.servers.http_agent import HttpAgentServer
from tests.servers.openai_agent import OpenAIAgentServer

# Property tests judge what a function does, not how fast a loaded 2-core CI machine runs it:
# no per-example deadline (speed is measured in bench/), and no health check that times data
# generation. The examples and their number are hypothesis's defaults.
settings.register_profile("probegate", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("probegate")


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """Collection may write bytecode, whatever PYTHONDONTWRITEBYTECODE says; the tests may not.

    pytest rewrites the asserts of every test module it imports, and keeps the result only where
    Python may write bytecode. With PYTHONDONTWRITEBYTECODE set (as on the machines CI runs on)
    every worker of every run rewrote all of them again (`pytest --collect-only`: 19.9 s of CPU
    then, 9.6 s with them kept, on a 2-core machine), before the first test. So collection,
    which imports only this repository's code, writes it (to the __pycache__ directories git
    ignores); the setting is back before the first test runs, so no test writes bytecode where
    it was not asked to (an agent module a test imports from a user's directory, whose listing
    the test checks).
    """
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = before


@pytest.fixture(scope="session", autouse=True)
def _outside_github_actions() -> Iterator[None]:
    """The suite runs alike inside a GitHub Actions job and outside one.

    A scan reads the repository root from ``GITHUB_WORKSPACE`` and its anchor from
    ``GITHUB_WORKFLOW_REF`` (probegate.workspace); in CI the runner sets both for probegate's
    own checkout, which is not the repository a test scans. Tests that play a GitHub job set
    them explicitly.

    Nor does git's own environment leak in: run from a git hook or ``git rebase --exec``,
    ``GIT_DIR`` names probegate's repository, and a test's ``git init TMP`` would re-initialise
    that repository as a bare one instead of creating TMP's.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("GITHUB_WORKSPACE", raising=False)
        patch.delenv("GITHUB_WORKFLOW_REF", raising=False)
        for name in [n for n in os.environ if n.startswith("GIT_") and n != "GIT_SSL_CAINFO"]:
            patch.delenv(name)
        yield


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in an empty directory so default paths (probegate-out, .probegate) land there."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_cli(*argv: str) -> int:
    return main(list(argv))


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def demo_scan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One fast demo scan shared by read-only tests."""
    root = tmp_path_factory.mktemp("demo")
    old = os.getcwd()
    os.chdir(root)
    try:
        code = main(["scan", "demo", "--quiet", "--no-sign"])
        assert code == 0
        yield load_json(root / "probegate-out" / "scan.json")
    finally:
        os.chdir(old)


# Loopback servers (127.0.0.1, port 0, stopped when the test ends), shared by every suite.


@pytest.fixture
def weak_agent() -> Iterator[OpenAIAgentServer]:
    with OpenAIAgentServer(hardened=False) as server:
        yield server


@pytest.fixture
def hardened_agent() -> Iterator[OpenAIAgentServer]:
    with OpenAIAgentServer(hardened=True) as server:
        yield server


@pytest.fixture
def faults() -> Iterator[FaultServer]:
    with FaultServer() as server:
        yield server


@pytest.fixture
def http_agent() -> Iterator[HttpAgentServer]:
    with HttpAgentServer(weak=True) as server:
        yield server
