"""Attempts/s through A2A against the direct loop: what speaking A2A costs per attempt.

The same careful decisions (demo-careful's policy), the same model latency (50 ms per
decision: each tool call and each answer), the same probes (every probe in the library, fast
mode, ``--repeat 3``), scanned at ``--concurrency 16`` two ways:

- ``openai``: probegate runs the agent loop itself against the rule-based model of
  tests/servers/brain_model.py (the baseline: every tool call answered by the in-process
  sandbox);
- ``a2a``: the agent is served by the official a2a-sdk (tests/servers/a2a_agents.py): each
  message goes over A2A (streamed, the context kept by ``contextId``), the agent takes its
  tools from probegate's MCP server and asks the billing and shipping agents at probegate's A2A
  peers with the SDK's client (a card read and a message per question).

The agent runs in this process, each scan in a child process (``probegate scan``) with its
own GIL; attempts/s come from the report's own run time (``duration_seconds``), so start-up
is not counted. The figure to watch is the ratio, and that nothing is unjudged.

Run: ``.venv/bin/python bench/bench_a2a.py`` (or ``make bench``).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from tests.servers.a2a_agents import A2aAgentServer, BrainExecutor  # noqa: E402
from tests.servers.brain_model import BrainModelServer, tool_config  # noqa: E402

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


def figures(name: str, report: dict[str, Any]) -> float:
    attempts = report["coverage"]["attempts_completed"]
    rate = attempts / report["duration_seconds"]
    print(
        f"{name:8} {attempts} attempts in {report['duration_seconds']:.1f} s = {rate:.1f} "
        f"attempts/s; probegate's CPU {report['_cpu'] / attempts * 1000:.1f} ms per attempt "
        f"(start-up included); {report['coverage']['attempts_unjudged']} unjudged; "
        f"{len(report['findings'])} findings"
    )
    return rate


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "openai").mkdir()
        prompt = root / "openai" / "prompt.txt"
        prompt.write_text("You are the Acme support agent.\n", encoding="utf-8")
        with BrainModelServer(latency=LATENCY) as brain:
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
        base_rate = figures("openai", baseline)
        (root / "a2a").mkdir()
        executor = BrainExecutor(careful=True, latency=LATENCY)
        with A2aAgentServer(executor) as agent:
            through = scan(root / "a2a", agent.target())
        a2a_rate = figures("a2a", through)
    messages = sum(1 for m in agent.methods if m == "SendStreamingMessage")
    print(f"A2A messages to the agent: {messages}; agent failures: {len(executor.failures)}")
    print(f"a2a / openai: {a2a_rate / base_rate:.0%} of the direct loop's attempts/s")
    if through["coverage"]["attempts_unjudged"] or executor.failures or through["findings"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
