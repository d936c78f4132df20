"""What a scan says when it ends: the findings, why it stopped, whether its score counts, and
why attempts went unjudged, grouped by cause with the fix; in the terminal, summary.md,
report.html and, with --json, as one JSON object. Run against a faulty loopback agent."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from probegate.reports.digest import evidence_text
from probegate.terminal import one_line
from tests.reports.samples import golden_report
from tests.servers.configs import openai_config
from tests.servers.openai_agent import OpenAIAgentServer

# Every fourth request a 500, every ninth a 429; no retries, so each one is an unjudged attempt.
FAULTS = (0, 0, 0, 500, 0, 0, 0, 0, 429, 0, 0, 0)


@pytest.fixture
def faulty_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str, Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    with OpenAIAgentServer(faults=FAULTS) as server:
        openai_config(tmp_path, server.endpoint)
        code = main(
            [
                "scan",
                "--retries",
                "0",
                "--max-requests",
                "60",
                "--concurrency",
                "2",
                "--output",
                "json,md,html",
                "--fail-on",
                "HIGH",
                "--no-sign",
            ]
        )
    out, err = capsys.readouterr()
    return code, out, err, tmp_path


def test_terminal_lists_findings_stop_authority_and_unjudged_causes(
    faulty_scan: tuple[int, str, str, Path],
) -> None:
    code, out, err, tmp = faulty_scan
    report = json.loads((tmp / "probegate-out" / "scan.json").read_text())
    assert code == 1  # --fail-on HIGH, in any case
    assert report["stopped_reason"] == "budget"
    assert report["findings"] and report["unjudged"]
    # every finding on a line of its own: severity, probe id, the evidence in words
    for finding in report["findings"]:
        line = next(ln for ln in out.splitlines() if f" {finding['probe_id']} " in ln)
        assert line.split()[0] == finding["severity"]
        assert "(" + finding["evidence"][0]["category"] + ")" in line
    # why it stopped, in words, with the numbers
    assert re.search(
        r"stopped: stopped at the budget \(\d+ of --max-requests 60 requests used", out
    ), out
    # the authority decision in words
    assert "authority: not authoritative (the scan ran in fast mode" in out
    assert "--fail-under exits 3 on this scan" in out
    # unjudged attempts by cause, each with its fix
    assert "the target failed with a server error (HTTP 5xx)" in out
    assert "the target kept rate-limiting (HTTP 429)" in out
    assert "fix: look at the agent's logs" in out and "fix: lower --concurrency or set --rps" in out
    # and, before it started, why few probes could apply
    assert "probes cannot apply to this target" in err
    assert "declare the missing capabilities" in err
    # The notes a scan starts with are short: how many and the fix, never a list of ids.
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert notes and all(len(line) < 200 for line in notes), notes


def test_summary_and_html_group_unjudged_by_cause(
    faulty_scan: tuple[int, str, str, Path],
) -> None:
    _, _, _, tmp = faulty_scan
    report = json.loads((tmp / "probegate-out" / "scan.json").read_text())
    md = (tmp / "probegate-out" / "summary.md").read_text()
    html = (tmp / "probegate-out" / "report.html").read_text()
    assert "**Stopped:** stopped at the budget" in md
    section = md.split("### Unjudged attempts", 1)[1]
    rows = [ln for ln in section.splitlines() if re.match(r"^\| \d+ \|", ln)]
    # one row per cause (a 500, a 429, maybe a probe that needs a judge), not one per attempt
    assert 2 <= len(rows) <= 3 and len(rows) < len(report["unjudged"])
    assert sum(int(r.split("|")[1]) for r in rows) == len(report["unjudged"])
    assert "<strong>Stopped:</strong> stopped at the budget" in html
    assert "the target failed with a server error (HTTP 5xx)" in html


def test_json_on_stdout_has_the_same_facts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with OpenAIAgentServer(faults=FAULTS) as server:
        openai_config(tmp_path, server.endpoint)
        code = main(["scan", "--json", "--retries", "0", "--no-sign", "--fail-on", "high"])
    out = capsys.readouterr().out
    data: dict[str, Any] = json.loads(out)  # stdout is the JSON object and nothing else
    report = json.loads((tmp_path / "probegate-out" / "scan.json").read_text())
    assert data["exit_code"] == code == 1
    assert data["scan_id"] == report["scan_id"] and data["score"] == report["aivss"]
    assert {f["probe_id"] for f in data["findings"]} == {f["probe_id"] for f in report["findings"]}
    assert sum(g["count"] for g in data["unjudged"]) == len(report["unjudged"])
    assert all(g["fix"] for g in data["unjudged"])
    assert data["authoritative"] is False and "not authoritative" in data["authority"]


def test_quiet_prints_nothing_and_verbose_lists_every_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["scan", "demo", "--no-sign", "-q"]) == 0
    assert capsys.readouterr() == ("", "")
    assert main(["-v", "scan", "demo", "--no-sign"]) == 0  # a global flag before the command
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "probegate-out" / "scan.json").read_text())
    assert len(report["findings"]) > 20
    assert all(f" {f['probe_id']} " in out for f in report["findings"])
    assert main(["scan", "demo", "--no-sign"]) == 0
    out = capsys.readouterr().out
    assert f"and {len(report['findings']) - 15} more (-v lists them" in out


def _tty_scan(env: dict[str, str], cwd: Path) -> str:
    """Run a scan with a real terminal on stdout and return what it printed there."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "probegate", "scan", "demo", "--asi", "ASI02", "--no-sign"],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        env=env,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow
def test_colour_on_a_terminal_only_and_never_with_no_color(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    coloured = _tty_scan({**env, "TERM": "xterm"}, tmp_path)
    assert "\x1b[" in coloured and "critical" in coloured
    plain = _tty_scan({**env, "TERM": "xterm", "NO_COLOR": "1"}, tmp_path)
    assert "\x1b[" not in plain and "critical" in plain
    piped = subprocess.run(
        [sys.executable, "-m", "probegate", "scan", "demo", "--asi", "ASI02", "--no-sign"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, "TERM": "xterm"},
        check=False,
    )
    assert "\x1b[" not in piped.stdout and "critical" in piped.stdout


def test_agent_text_is_escaped_in_the_closing_lines() -> None:
    report = golden_report()
    finding = next(f for f in report.findings if f.evidence)
    hostile = finding.evidence[0].model_copy(update={"subject": "\x1b]0;pwned\x07\x1b[2Jboom\nx"})
    finding = finding.model_copy(update={"evidence": [hostile]})
    line = one_line(evidence_text(finding))
    assert "\x1b" not in line and "\x07" not in line and "\n" not in line and "boom" in line


def test_the_output_folder_holds_one_scans_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "probegate-out"
    assert main(["scan", "demo", "--asi", "ASI01", "-q", "--no-sign", "--output", "json,md"]) == 0
    (out / "junit.xml").write_text("<mine/>", encoding="utf-8")  # not probegate's: kept
    assert main(["scan", "demo", "--asi", "ASI02", "-q", "--no-sign", "--output", "html"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["junit.xml", "report.html"]
    assert main(["scan", "demo", "--dry-run"]) == 0
    assert "estimated cost: $0.00" in capsys.readouterr().out
