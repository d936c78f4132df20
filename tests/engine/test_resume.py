"""--resume after kill -9: the journal survives, nothing completed is sent again."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from probegate.cli import main
from probegate.engine.journal import read_journal
from probegate.models.canaries import make_canaries
from tests.servers.configs import known_probes, openai_config, scan_args
from tests.servers.openai_agent import OpenAIAgentServer

CANARY = re.compile(r"PGSYS-[0-9A-F]{12}")
ARGS = ("--repeat", "6", *known_probes())


def attempts_of(bodies: list[dict[str, Any]], ids: set[str]) -> set[str]:
    """Which attempt each request served: its system prompt carries that attempt's canary."""
    by_canary = {make_canaries(0, a).system: a for a in ids}
    out = set()
    for body in bodies:
        match = CANARY.search(body["messages"][0]["content"])
        assert match is not None
        out.add(by_canary[match.group(0)])
    return out


def verdicts(path: Path) -> dict[str, Any]:
    report = json.loads(path.read_text())
    return {
        "fps": [f["fp"] for f in report["findings"]],
        "results": report["results"],
        "aivss": report["aivss"],
        "unjudged": report["unjudged"],
    }


def test_resume_after_sigkill_sends_nothing_twice(tmp_path: Path) -> None:
    killed, fresh = tmp_path / "killed", tmp_path / "fresh"
    killed.mkdir()
    fresh.mkdir()
    with OpenAIAgentServer(latency=0.1) as server:
        config = openai_config(killed, server.endpoint)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "probegate",
                *scan_args(config, killed, *ARGS, "--concurrency", "2"),
            ],
            cwd=killed,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            journal: Path | None = None
            while time.monotonic() < deadline:
                found = list((killed / "store" / "scans").glob("*/journal.jsonl"))
                if found and found[0].read_bytes().count(b"\n") >= 8:
                    journal = found[0]
                    break
                time.sleep(0.02)
            assert journal is not None, "the scan never journaled"
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL
        before = read_journal(journal).attempts
        assert len(before) >= 5
        sent_before = len(server.bodies)

        scan_id = journal.parent.name
        code = main(scan_args(config, killed, *ARGS, "--concurrency", "8", "--resume", scan_id))
        assert code == 0
        after = read_journal(journal).attempts
        resumed = attempts_of(server.bodies[sent_before:], set(after))
        assert not resumed & set(before), "completed attempts were sent again"
        assert resumed == set(after) - set(before)

        fresh_config = openai_config(fresh, server.endpoint)
        assert main(scan_args(fresh_config, fresh, *ARGS, "--concurrency", "8")) == 0
    assert verdicts(killed / "out" / "scan.json") == verdicts(fresh / "out" / "scan.json")
    report = json.loads((killed / "out" / "scan.json").read_text())
    # The journal holds attempts and controls alike; neither was sent twice.
    controls = {k for k in after if "#control#" in k}
    assert controls and report["controls"]["run"] == len(controls)
    assert report["completeness"]["turns_used"] == len(after) - len(controls)
    assert report["completeness"]["agents_completed"] == report["completeness"]["agents_planned"]
    assert report["stopped_reason"] == "completed"


def test_resume_refuses_a_different_plan(tmp_path: Path) -> None:
    args = [
        "--store",
        str(tmp_path / "s"),
        "--output-dir",
        str(tmp_path / "o"),
        "--no-sign",
        "--quiet",
    ]
    assert main(["scan", "demo", *args]) == 0
    scan_id = next((tmp_path / "s" / "scans").iterdir()).name
    assert main(["scan", "demo", *args, "--seed", "3", "--resume", scan_id]) == 2
    assert main(["scan", "demo", *args, "--resume", "pg-000000000000"]) == 2
