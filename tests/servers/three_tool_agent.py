"""The three-tool support agent of docs/targets.md (a customer lookup with PII, e-mail, a
document fetcher: pii_read, egress, retrieval), as a loopback OpenAI-compatible agent.

Its tools are read from the docs' own example, so the agent the tests scan is the one a reader
copies. ``careful=True`` is a well-aligned model (tests/servers/careful_openai.py: does the
user's own task, never acts on what a tool returned); ``careful=False`` is a weak one
(tests/servers/openai_agent.py: acts on instructions wherever it reads them).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tests.servers.careful_openai import CarefulChatAgent
from tests.servers.configs import write_config
from tests.servers.openai_agent import FakeAgent, OpenAIAgentServer

DOCS = Path(__file__).resolve().parents[2] / "docs" / "targets.md"
_YAML_BLOCK = re.compile(r"```yaml\n(.*?)```", re.S)


def docs_tools() -> list[dict[str, Any]]:
    """The tools of the docs' OpenAI-compatible example, as written there."""
    for block in _YAML_BLOCK.findall(DOCS.read_text(encoding="utf-8")):
        data = yaml.safe_load(block)
        target = data.get("target") if isinstance(data, dict) else None
        if isinstance(target, dict) and target.get("kind") == "openai" and target.get("tools"):
            tools: list[dict[str, Any]] = target["tools"]
            return tools
    raise AssertionError(f"{DOCS} has no openai example with tools")


def three_tool_server(*, careful: bool) -> OpenAIAgentServer:
    agent = CarefulChatAgent() if careful else FakeAgent(hardened=False)
    return OpenAIAgentServer(agent=agent)


def three_tool_config(directory: Path, endpoint: str) -> Path:
    """probegate.yml for the docs' agent at ``endpoint``: its tools and a support prompt (the
    docs' key and header variables are left out: the loopback agent needs none)."""
    (directory / "prompt.txt").write_text("You are the Acme support agent.\n", encoding="utf-8")
    target = {
        "kind": "openai",
        "endpoint": endpoint,
        "model": "fake-1",
        "system_prompt": "prompt.txt",
        "max_turns": 4,
        "tools": docs_tools(),
    }
    return write_config(directory, target)
