"""Loopback servers as fixtures; every test runs in its own working directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers.faults import FaultServer
from tests.servers.http_agent import HttpAgentServer
from tests.servers.openai_agent import OpenAIAgentServer


@pytest.fixture(autouse=True)
def _own_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)


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
