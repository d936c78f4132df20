"""An interrupt during the confirm runs (``scan --confirm N``): the scan stops as any
interrupted scan does, and ``probegate scan --resume ID`` alone finishes the confirm runs
without sending any completed attempt again, to the same decision as an uninterrupted scan."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from probegate.cli import main
from probegate.engine.journal import read_journal
from tests.engine.test_resume import attempts_of
from tests.servers.configs import known_probes, openai_config, scan_args
from tests.servers.openai_agent import OpenAIAgentServer

# A confirm attempt: a repeat the plan (one repeat, fast mode) never reaches.
CONFIRM_ID = re.compile(rb'"attempt_id":"[^"#]+#(?!control)[^"#]+#[1-9]')
ARGS = (*known_probes(), "--confirm", "3", "--concurrency", "2")


def _baseline(tmp: Path) -> Path:
    """Ten attempts a probe of the hardened agent: it resisted every one."""
    where = tmp / "base"
    where.mkdir()
    with OpenAIAgentServer(hardened=True) as server:
        config = openai_config(where, server.endpoint)
        assert main(scan_args(config, where, *known_probes(), "--repeat", "10")) == 0
    return where / "out" / "scan.json"


@pytest.mark.slow
def test_an_interrupt_in_the_confirm_runs_resumes_them_sending_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    baseline = _baseline(tmp_path)
    cut, fresh = tmp_path / "cut", tmp_path / "fresh"
    cut.mkdir()
    fresh.mkdir()
    with OpenAIAgentServer(latency=0.1) as server:
        config = openai_config(cut, server.endpoint)
        argv = ["scan", config.name, "--no-sign", "--baseline", str(baseline), *ARGS]
        env = {**os.environ, "NO_COLOR": "1", "PYTHONWARNINGS": "ignore"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "probegate", *argv],
            cwd=cut,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            journal = _wait_for_confirm_attempts(cut, 2)
            os.kill(proc.pid, signal.SIGINT)
            _, stderr = proc.communicate(timeout=60)
        finally:
            proc.kill()
            proc.wait(timeout=10)
        assert proc.returncode == 130, stderr
        assert "Traceback" not in stderr
        scan_id = journal.parent.name
        assert f"interrupted by Ctrl-C: scan {scan_id}" in stderr
        assert f"resume with: probegate scan --resume {scan_id}" in stderr
        partial = json.loads((cut / "probegate-out" / "scan.json").read_text())
        assert partial["comparison"]["confirmation"]["stopped_reason"] == "cancelled"
        before = read_journal(journal).attempts

        sent_before = len(server.bodies)
        monkeypatch.chdir(cut)
        assert main(["scan", "--resume", scan_id, "--quiet"]) == 1
        after = read_journal(journal).attempts
        resent = attempts_of(server.bodies[sent_before:], set(after))
        assert resent, "the resumed scan ran the rest of the confirm runs"
        assert not resent & set(before), "completed attempts were sent again"

        fresh_config = openai_config(fresh, server.endpoint)
        monkeypatch.chdir(fresh)
        argv = ["scan", fresh_config.name, "--no-sign", "--quiet", "--baseline", str(baseline)]
        assert main([*argv, *ARGS]) == 1
    resumed = json.loads((cut / "probegate-out" / "scan.json").read_text())["comparison"]
    whole = json.loads((fresh / "probegate-out" / "scan.json").read_text())["comparison"]
    for key in ("new", "within_noise", "persisting", "confirmation", "regression"):
        assert resumed[key] == whole[key], key
    assert len(resumed["new"]) == len(known_probes()) // 2  # each 4 of 4 against 0 of 10
    assert resumed["confirmation"]["stopped_reason"] == "completed"


def _wait_for_confirm_attempts(cwd: Path, count: int) -> Path:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = list((cwd / ".probegate" / "scans").glob("*/journal.jsonl"))
        if found and len(CONFIRM_ID.findall(found[0].read_bytes())) >= count:
            return found[0]
        time.sleep(0.02)
    raise AssertionError("the scan never journaled a confirm attempt")
