"""One run of a scan at a time, and a resumed scan judged under the config it started with.

Real processes: scans run as ``python -m probegate`` against a loopback agent, killed with
SIGKILL and resumed twice at once (engine/lock.py, docs/targets.md "Resume").
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from probegate.cli import main
from probegate.engine.journal import read_journal
from probegate.models.store_layout import LOCK_FILE
from tests.engine.test_resume import attempts_of
from tests.servers.configs import known_probes, openai_config, scan_args
from tests.servers.openai_agent import OpenAIAgentServer

ARGS = ("--repeat", "6", *known_probes(), "--concurrency", "2")
CAP = 40  # --max-requests: less than the scan needs, so the cap decides where it stops
HOLDER = re.compile(r"scan (pg-[0-9a-f]{12}) is running \(pid (\d+) on (\S+), since \S+Z\)")


def _probegate(cwd: Path, argv: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "probegate", *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _journal_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


@pytest.mark.slow
def test_two_resumes_at_once_one_is_refused_nothing_doubles_and_the_cap_holds(
    tmp_path: Path,
) -> None:
    with OpenAIAgentServer(latency=0.3) as server:
        config = openai_config(tmp_path, server.endpoint)
        argv = scan_args(config, tmp_path, *ARGS, "--max-requests", str(CAP))
        first = _probegate(tmp_path, argv)
        try:
            deadline = time.monotonic() + 60
            journal: Path | None = None
            while time.monotonic() < deadline and journal is None:
                found = list((tmp_path / "store" / "scans").glob("*/journal.jsonl"))
                if found and found[0].read_bytes().count(b"\n") >= 5:
                    journal = found[0]
                time.sleep(0.02)
            assert journal is not None, "the scan never journaled"
            os.kill(first.pid, signal.SIGKILL)
        finally:
            first.kill()
            first.communicate(timeout=30)
        scan_id = journal.parent.name
        # The killed run's lock names it: a dead holder, whose lock the kernel released.
        assert json.loads((journal.parent / LOCK_FILE).read_text())["pid"] == first.pid
        before = read_journal(journal).attempts
        spent_before = sum(a.requests for a in before.values())
        sent_before = len(server.bodies)

        # Both resumes start at once; the agent stays slow until one of them has ended, so the
        # other is still running when the second asks for the lock, whichever asks first.
        resume = [*argv, "--resume", scan_id]
        runs = [_probegate(tmp_path, resume), _probegate(tmp_path, resume)]
        deadline = time.monotonic() + 120
        while all(run.poll() is None for run in runs) and time.monotonic() < deadline:
            time.sleep(0.05)
        server.latency = 0.0
        results = [run.communicate(timeout=120) for run in runs]

    codes = [run.returncode for run in runs]
    assert sorted(codes)[0] in (0, 1, 3) and 2 in codes, (codes, [err for _, err in results])
    refused = codes.index(2)
    ran = 1 - refused
    # One line naming the holder: the run that ran, on this host.
    err_lines = results[refused][1].strip().splitlines()
    assert len(err_lines) == 1, err_lines
    holder = HOLDER.search(err_lines[0])
    assert holder is not None, err_lines
    assert holder.groups()[:3] == (scan_id, str(runs[ran].pid), socket.gethostname())
    # The run that ran took over the killed run's lock, and said so.
    assert f"pid {first.pid} on" in results[ran][1] and "takes over" in results[ran][1]

    # 0 duplicate records, and no attempt sent again.
    records = [r for r in _journal_lines(journal) if r["kind"] == "attempt"]
    ids = collections.Counter(r["attempt"]["attempt_id"] for r in records)
    assert [k for k, n in ids.items() if n > 1] == []
    after = read_journal(journal).attempts
    resumed = attempts_of(server.bodies[sent_before:], set(after))
    assert not resumed & set(before), "completed attempts were sent again"
    # --max-requests holds across the runs: what the killed run journaled plus what the
    # resumes sent. (Two unlocked resumes each spend the rest of the cap.)
    assert spent_before + len(server.bodies) - sent_before <= CAP
    report = json.loads((tmp_path / "out" / "scan.json").read_text())
    assert report["stopped_reason"] != "completed"  # the cap stopped it
    print(  # the figures for the record: pytest -s
        f"\nkilled run journaled {len(before)} attempts ({spent_before} requests); resumes "
        f"exited {codes}; duplicate records {sum(n - 1 for n in ids.values())}; requests "
        f"spent {spent_before + len(server.bodies) - sent_before} of --max-requests {CAP}"
    )
    # The lock is released (emptied) when the run ends; the file stays.
    assert (journal.parent / LOCK_FILE).read_bytes() == b""


def _edited(config: Path, edit: str) -> None:
    data = yaml.safe_load(config.read_text())
    target = data["target"]
    if edit == "tools":
        target["tools"][0]["description"] += " (and it refunds orders)"
    elif edit == "capabilities":
        target["tools"][0]["capabilities"] = [*target["tools"][0]["capabilities"], "financial"]
    else:
        target["canaries"] = ["PGTEST-CANARY-0123456789"]
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


@pytest.mark.parametrize(
    ("edit", "changed"),
    [
        ("tools", "tools"),
        ("capabilities", "capabilities, tools"),
        ("canaries", "canaries"),
    ],
)
def test_resume_refuses_an_edited_config_and_names_what_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str, changed: str
) -> None:
    with OpenAIAgentServer() as server:
        config = openai_config(tmp_path, server.endpoint)
        argv = scan_args(config, tmp_path, "--probes", "asi01.direct-system-prompt-leak.v1")
        assert main(argv) in (0, 1)
        scan_id = next((tmp_path / "store" / "scans").iterdir()).name
        capsys.readouterr()
        original = config.read_text()
        _edited(config, edit)
        assert main([*argv, "--resume", scan_id]) == 2
        err = capsys.readouterr().err
        assert f"another config: {changed} changed" in err, err
        assert "PGTEST-CANARY" not in err
        # The same config resumes (a completed scan: nothing runs again).
        config.write_text(original, encoding="utf-8")
        sent = len(server.bodies)
        assert main([*argv, "--resume", scan_id]) in (0, 1)
        assert len(server.bodies) == sent
