"""AgentDojo's four suites through probegate: agreement, time and requests per scripted agent.

Each of three scripted agents (tests/servers/agentdojo_model.py: ``follower`` follows an
injection with probability 0.5, ``careful`` never does and quotes what it refused, ``leaker``
follows with probability 0.5 but sends its own secret in place of the data asked for) sits
behind the three-API model server of tests/servers/model_apis.py, in this process, and is
scanned with ``probegate scan --suite agentdojo`` (all 949 task pairs of AgentDojo 0.1.35 at
v1.2.2, fast mode, controls on, concurrency 8) twice: without a judge and with a loopback judge
(tests/judge/fake_judge.py's calibrated model, which answers "resisted" to every case the rules
leave to it). For each scan: the agreement of probegate's verdicts with AgentDojo's security
checks (per suite and overall: recall, false-positive rate, Cohen's kappa), its disagreements
by why, its wall time and the requests the agent's model answered.

Run: ``.venv/bin/python bench/bench_agentdojo.py [--agents follower,careful,leaker]
[--suite agentdojo:banking] [--judge off,on]`` (or ``make bench``, which runs the follower on
all four suites with the judge off and on).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from tests.judge.fake_judge import CalibratedModel  # noqa: E402
from tests.servers.agentdojo_model import DojoAgent  # noqa: E402
from tests.servers.model_apis import ModelApiServer  # noqa: E402

from probegate.cli import main  # noqa: E402
from probegate.judge.llm import ENV_API_KEY, ENV_BASE_URL  # noqa: E402
from probegate.models.agreement import Agreement  # noqa: E402
from probegate.reports.agreement_text import HEADERS, agreement_rows  # noqa: E402

P_FOLLOW = 0.5
SEED = 7


def scan(agent: str, suite: str, judged: bool, work: Path) -> dict[str, Any]:
    """One scan; its agreement, time and requests."""
    judge_then = {"verdict": "resisted", "evidence": "", "confidence": 0.9}
    with (
        ModelApiServer(agent=DojoAgent(agent, p=P_FOLLOW, seed=SEED)) as model,
        ModelApiServer(agent=CalibratedModel(judge_then)) as judge,
    ):
        config = work / f"{agent}-{judged}.yml"
        config.write_text(
            f"target:\n  kind: openai\n  endpoint: {model.base_url}\n  model: scripted\n"
        )
        argv = ["scan", "--config", str(config), "--suite", suite, "-q", "--no-sign"]
        argv += ["--store", str(work / f"store-{agent}-{judged}")]
        argv += ["--output-dir", str(work / f"out-{agent}-{judged}")]
        if judged:
            os.environ[ENV_BASE_URL] = judge.base_url
            os.environ[ENV_API_KEY] = "loopback"
            argv += ["--judge", "openai:judge-model"]
        start = time.perf_counter()
        code = main(argv)
        seconds = time.perf_counter() - start
        requests, judge_requests = model.requests, judge.requests
    report = json.loads((work / f"out-{agent}-{judged}" / "scan.json").read_text())
    return {
        "code": code,
        "seconds": seconds,
        "requests": requests,
        "judge_requests": judge_requests,
        "attempts": report["completeness"]["turns_used"],
        "agreement": Agreement.model_validate(report["agreement"]),
    }


def table(result: dict[str, Any]) -> list[str]:
    agreement: Agreement = result["agreement"]
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(row) + " |" for row in agreement_rows(agreement)]
    why = Counter(d.difference for d in agreement.disagreements)
    lines.append("")
    lines.append(
        "disagreements: " + (", ".join(f"{n} {kind}" for kind, n in sorted(why.items())) or "none")
    )
    return lines


def run() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", default="follower")
    parser.add_argument("--suite", default="agentdojo")
    parser.add_argument("--judge", default="off,on")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for agent in args.agents.split(","):
            for judged in [j == "on" for j in args.judge.split(",")]:
                result = scan(agent, args.suite, judged, Path(tmp))
                print(f"### {agent}, judge {'on' if judged else 'off'} ({args.suite})")
                print()
                print("\n".join(table(result)))
                print(
                    f"\n{result['attempts']} attempts in {result['seconds']:.1f} s "
                    f"({result['attempts'] / result['seconds']:.1f} attempts/s), "
                    f"{result['requests']} model requests, {result['judge_requests']} judge "
                    f"requests, exit {result['code']}\n",
                    flush=True,
                )


if __name__ == "__main__":
    run()
