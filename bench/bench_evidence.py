"""What "missing evidence never passes" costs (docs/targets.md, "Transient faults";
docs/scoring.md, "Controls"; docs/judge.md).

- The demo full scan without a judge, and with a loopback judge (tests/judge/fake_judge.py)
  the first time (calibration, then a call per judged attempt and control) and the second
  time (every verdict from the judge cache): requests, judge calls, control runs and re-runs,
  wall time.
- The flaky-endpoint scene (tests/servers/faults.py: 5 % HTML 200s, 5 % cut JSON, 15 % 500s,
  10 % 429s) with and without retries: what retrying unreadable replies costs in requests and
  time, and what it buys in judged attempts.
- The control-sabotage scene (tests/servers/leaky_agent.py answering 500 to this scan's
  control texts): the control re-runs it forces.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.judge.fake_judge import calibrated, fake_judge, verdict  # noqa: E402
from tests.servers.configs import openai_config  # noqa: E402
from tests.servers.faults import FlakyAgentServer  # noqa: E402
from tests.servers.leaky_agent import LeakyAgentServer  # noqa: E402

from probegate.cli import main as cli_main  # noqa: E402
from probegate.judge.llm import ENV_API_KEY, ENV_BASE_URL  # noqa: E402
from probegate.library.controls import control_text  # noqa: E402
from probegate.library.loader import load_library  # noqa: E402

FLAKY_PROBES = ("asi02.*", "asi04.*", "asi08.*", "asi01.indirect-document-email-exfil.v1")


def scan(workdir: Path, *args: str) -> tuple[float, dict[str, Any]]:
    old = os.getcwd()
    os.chdir(workdir)
    try:
        start = time.perf_counter()
        cli_main(["scan", *args, "--quiet", "--no-sign"])
        elapsed = time.perf_counter() - start
        report: dict[str, Any] = json.loads(Path("probegate-out/scan.json").read_text())
    finally:
        os.chdir(old)
    return elapsed, report


def line(label: str, elapsed: float, report: dict[str, Any]) -> str:
    controls = report["controls"]
    judge = report.get("judge") or {}
    judged = (
        ""
        if not judge
        else (
            f", judge {judge['calls']} calls + {judge['calibration_calls']} calibration, "
            f"{judge['cached']} cached"
        )
    )
    return (
        f"  {label:<34} {report['budget']['requests_used']:>6} requests, "
        f"{controls['run']} controls ({controls['reruns']} re-runs){judged}, "
        f"{len(report['unjudged'])} unjudged, {len(report['findings'])} findings, {elapsed:.2f} s"
    )


def demo() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        scan(work, "demo", "--probes", "asi01.*")  # warm imports and caches
        print(f"demo full scan ({'; '.join(['fake judge on loopback'])}):")
        elapsed, report = scan(work, "demo", "--mode", "full")
        print(line("without a judge", elapsed, report))
        os.environ[ENV_API_KEY] = "bench"
        with fake_judge(calibrated(lambda body: verdict("resisted"))) as fake:
            os.environ[ENV_BASE_URL] = fake.base_url
            judge = ("--judge", "openai:bench-judge")
            elapsed, report = scan(work, "demo", "--mode", "full", *judge)
            print(line("with a judge, first time", elapsed, report))
            elapsed, report = scan(work, "demo", "--mode", "full", *judge)
            print(line("with a judge, cache warm", elapsed, report))
        del os.environ[ENV_BASE_URL], os.environ[ENV_API_KEY]


def flaky() -> None:
    print("flaky endpoint (5 % HTML, 5 % cut JSON, 15 % 500, 10 % 429), fast scan:")
    for label, extra in (("--retries 0", ("--retries", "0")), ("default retries (3)", ())):
        with tempfile.TemporaryDirectory() as tmp, FlakyAgentServer(seed=0) as server:
            work = Path(tmp)
            openai_config(work, server.endpoint)
            probes = [arg for glob in FLAKY_PROBES for arg in ("--probes", glob)]
            elapsed, report = scan(work, *probes, "--concurrency", "16", *extra)
            print(line(label, elapsed, report))


def sabotage() -> None:
    print("control sabotage (HTTP 500 on this scan's control texts), --retries 1:")
    selection = ("asi01.*", "asi03.*", "asi04.*", "asi07.*")
    probes = load_library().select(patterns=selection)
    texts = tuple({control_text(p, 0, 0) for p in probes})
    for label, extra in (("--no-controls", ("--no-controls",)), ("with controls", ())):
        with tempfile.TemporaryDirectory() as tmp, LeakyAgentServer(refuses=texts) as server:
            work = Path(tmp)
            openai_config(work, server.endpoint)
            args = [arg for glob in selection for arg in ("--probes", glob)]
            elapsed, report = scan(work, *args, "--retries", "1", *extra)
            print(line(label, elapsed, report))


def main() -> None:
    demo()
    flaky()
    sabotage()


if __name__ == "__main__":
    main()
