"""Ctrl-C and SIGTERM mid-scan: a partial report, the journal, the scan id and the exact resume
command; then ``probegate scan --resume ID`` alone finishes the scan without sending any
completed attempt again (counted at the server)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from probegate.engine.journal import read_journal
from tests.engine.test_resume import attempts_of, verdicts
from tests.servers.configs import known_probes, openai_config
from tests.servers.openai_agent import OpenAIAgentServer

ARGS = ("--repeat", "6", *known_probes())


def _start(cwd: Path, config: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONWARNINGS": "ignore"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "probegate",
            "scan",
            config.name,
            "--output",
            "json,md",
            "--no-sign",
            "--concurrency",
            "2",
            *ARGS,
            *extra,
        ],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_for_journal(cwd: Path, lines: int) -> Path:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = list((cwd / ".probegate" / "scans").glob("*/journal.jsonl"))
        if found and found[0].read_bytes().count(b"\n") >= lines:
            return found[0]
        time.sleep(0.02)
    raise AssertionError("the scan never journaled")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.slow
def test_interrupt_then_resume_sends_no_completed_attempt_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: int
) -> None:
    with OpenAIAgentServer(latency=0.1) as server:
        config = openai_config(tmp_path, server.endpoint)
        proc = _start(tmp_path, config)
        try:
            journal = _wait_for_journal(tmp_path, 8)
            os.kill(proc.pid, signum)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            proc.kill()
            proc.wait(timeout=10)
        assert proc.returncode == 128 + signum, stderr
        assert "Traceback" not in stderr
        scan_id = journal.parent.name

        # What the user is told: the scan id and the exact command that resumes it.
        what = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
        assert f"interrupted by {what}: scan {scan_id}" in stderr
        match = re.search(r"^resume with: (.+)$", stderr, re.MULTILINE)
        assert match is not None, stderr
        assert shlex.split(match.group(1)) == ["probegate", "scan", "--resume", scan_id]
        assert "stopped: interrupted" in stdout

        # The partial report is written like any other, from the attempts that completed.
        before = read_journal(journal).attempts
        assert len(before) >= 8
        partial = json.loads((tmp_path / "probegate-out" / "scan.json").read_text())
        assert partial["stopped_reason"] == "cancelled"
        assert partial["scan_id"] == scan_id
        # The journal holds the controls too (PROBE#control#N): they are not attempts.
        assert partial["completeness"]["turns_used"] == len(_attacks(before))
        assert "interrupted" in (tmp_path / "probegate-out" / "summary.md").read_text()
        assert not any(u["reason"].startswith("cut short") for u in partial["unjudged"])

        # Resume with nothing but the id, from the same directory.
        sent_before = len(server.bodies)
        monkeypatch.chdir(tmp_path)
        assert main(["scan", "--resume", scan_id, "--quiet"]) == 0
        after = read_journal(journal).attempts
        resent = attempts_of(server.bodies[sent_before:], set(after))
        assert not resent & set(before), "completed attempts were sent again"
        assert resent == set(after) - set(before)

        fresh = tmp_path / "fresh"
        fresh.mkdir()
        fresh_config = openai_config(fresh, server.endpoint)
        monkeypatch.chdir(fresh)
        assert main(["scan", fresh_config.name, "--no-sign", "--quiet", *ARGS]) == 0
    resumed = tmp_path / "probegate-out" / "scan.json"
    assert verdicts(resumed) == verdicts(fresh / "probegate-out" / "scan.json")
    report = json.loads(resumed.read_text())
    assert report["stopped_reason"] == "completed"
    assert report["completeness"]["turns_used"] == len(_attacks(after))
    assert report["controls"]["run"] == len(set(after) - _attacks(after)) > 0


def _attacks(journaled: dict[str, Any]) -> set[str]:
    return {key for key in journaled if "#control#" not in key}


def test_resume_refuses_another_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["scan", "demo", "--no-sign", "--quiet", "--asi", "ASI01"]) == 0
    scan_id = next((tmp_path / ".probegate" / "scans").iterdir()).name
    capsys.readouterr()
    assert main(["scan", "demo-hardened", "--resume", scan_id, "--asi", "ASI01"]) == 2
    err = capsys.readouterr().err
    assert f"scan {scan_id} scanned demo, not demo-hardened" in err
    # the id alone resumes it (nothing left to run), with its stored flags
    assert main(["scan", "--resume", scan_id, "--quiet"]) == 0


def test_resume_of_an_unknown_scan_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["scan", "--resume", "pg-000000000000"]) == 2
    err = capsys.readouterr().err
    assert "no scan pg-000000000000 to resume in .probegate" in err and "--store" in err
    assert main(["scan", "--resume", "../etc"]) == 2


def test_smart_mode_progress_counts_the_escalation_on_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first pass counts to its own total; the escalation, whose size is known only then,
    is counted from 0 to its own total: no line jumps from 77 to 689 planned."""
    import io

    import probegate.scan.execute
    from probegate.engine.run_state import Progress

    seen: list[Progress] = []
    real = probegate.scan.execute.ProgressPrinter

    class Spy(real):  # type: ignore[misc,valid-type]
        def __call__(self, p: Progress) -> None:
            seen.append(p)
            super().__call__(p)

    monkeypatch.setattr(probegate.scan.execute, "ProgressPrinter", Spy)
    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert main(["scan", "demo-hardened", "--mode", "smart", "--asi", "ASI01", "--no-sign"]) == 0
    first = [p for p in seen if not p.phase]
    second = [p for p in seen if p.phase == "escalating"]
    assert first and second
    assert len({p.total for p in first}) == 1 and first[-1].done == first[-1].total
    assert len({p.phase_total for p in second}) == 1
    assert [p.phase_done for p in second] == list(range(1, second[-1].phase_total + 1))
    assert "[escalating " in err.getvalue()
