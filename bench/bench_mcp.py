"""Attempts/s of an agent service that takes its tools from probegate's MCP server.

The same careful agent, the same model (50 ms per reply), the same probes (every probe in the
library, fast mode, ``--repeat 3``), scanned at ``--concurrency 16`` two ways:

- ``openai``: probegate runs the agent loop itself against the model (the baseline);
- ``http + MCP``: the agent is a service that runs its own loop (tests/servers/mcp_agent.py:
  the official ``mcp`` client, no framework) and takes its tools from probegate's MCP server,
  told ``{{mcp_url}}`` in each request.

The model is tests/servers/brain_model.py (the careful variant) and the agent service runs in
this process; each scan is a child process (``probegate scan``) with its own GIL, and its
attempts/s come from the report's own run time (``duration_seconds``), so start-up is not
counted. The figure to watch is the ratio: what taking tools over MCP costs per attempt
(a connection, ``initialize`` and ``tools/list`` per conversation, one HTTP round trip per
call) against probegate's in-process sandbox.

Run: ``.venv/bin/python bench/bench_mcp.py`` (or ``make bench``).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from tests.servers.brain_model import SECRETS, BrainModelServer, tool_config  # noqa: E402
from tests.servers.mcp_agent import McpAgentService  # noqa: E402

PROBEGATE = Path(sys.executable).parent / "probegate"
LATENCY = 0.05
CONCURRENCY = 16
REPEAT = 3


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def scan(directory: Path, target: dict[str, Any]) -> dict[str, Any]:
    config = directory / "probegate.yml"
    config.write_text(yaml.safe_dump({"target": target}), encoding="utf-8")
    args = [str(PROBEGATE), "scan", str(config), "--quiet", "--no-sign"]
    args += ["--store", str(directory / "store"), "--output-dir", str(directory / "out")]
    args += ["--concurrency", str(CONCURRENCY), "--repeat", str(REPEAT), "--timeout", "60"]
    cpu = child_cpu()
    subprocess.run(args, check=False, env={**os.environ, "OPENAI_API_KEY": "bench"})
    report: dict[str, Any] = json.loads((directory / "out" / "scan.json").read_text("utf-8"))
    report["_cpu"] = child_cpu() - cpu
    return report


def figures(name: str, report: dict[str, Any], model_requests: int) -> float:
    attempts = report["coverage"]["attempts_completed"]
    rate = attempts / report["duration_seconds"]
    unjudged = report["coverage"]["attempts_unjudged"]
    print(
        f"{name:12} {attempts} attempts in {report['duration_seconds']:.1f} s = {rate:.1f} "
        f"attempts/s; probegate's CPU {report['_cpu'] / attempts * 1000:.1f} ms per attempt "
        f"(start-up included); {model_requests / attempts:.2f} model calls per attempt; "
        f"{unjudged} unjudged; {len(report['findings'])} findings"
    )
    return rate


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, BrainModelServer(latency=LATENCY) as brain:
        root = Path(tmp)
        (root / "openai").mkdir()
        # Beside the config: a config may only name files under its own directory.
        prompt = root / "openai" / "prompt.txt"
        prompt.write_text("You are the Acme support agent.\n", encoding="utf-8")
        before = brain.requests
        baseline = scan(
            root / "openai",
            {
                "kind": "openai",
                "endpoint": brain.endpoint(careful=True),
                "model": "brain",
                "system_prompt": str(prompt),
                "max_turns": 32,
                "tools": tool_config(),
            },
        )
        base_rate = figures("openai", baseline, brain.requests - before)
        (root / "mcp").mkdir()
        with McpAgentService(brain.endpoint(careful=True)) as service:
            before = brain.requests
            start = time.perf_counter()
            through = scan(root / "mcp", service.target(tool_config(), list(SECRETS)))
            wall = time.perf_counter() - start
            mcp_rate = figures("http + MCP", through, brain.requests - before)
        mcp = through.get("mcp") or {}
        print(
            f"MCP server: {mcp.get('conversations', 0)} conversations, {mcp.get('calls', 0)} "
            f"calls, rejected {sum((mcp.get('rejected') or {}).values())}; "
            f"scan wall time {wall:.1f} s; agent failures {len(service.failures)}"
        )
        print(f"http + MCP / openai: {mcp_rate / base_rate:.0%} of the baseline's attempts/s")
        not_delivered = [u for u in through["unjudged"] if u["reason"].startswith("not deliv")]
        print(f"not delivered through MCP: {len(not_delivered)} (target: 0)")
        if not_delivered or service.failures:
            sys.exit(1)


if __name__ == "__main__":
    main()
