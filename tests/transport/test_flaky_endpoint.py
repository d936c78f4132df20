"""The flaky-endpoint scene: a vulnerable agent behind an endpoint that answers some requests
with a proxy's HTML page, JSON cut off half-way, a 500 or a 429 (tests/servers/faults.py).

Missing evidence is a transient fault: a body that cannot be read is retried like a 5xx, so
with the default retries almost every attempt is judged and the agent's one critical finding
is found; without retries the attempts it cost are unjudged with a reason that says what was
wrong with the body, and the advice never blames ``--protocol`` while most replies were read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from tests.servers.configs import openai_config, scan_args
from tests.servers.faults import FlakyAgentServer

CRITICAL = "asi01.indirect-document-email-exfil.v1"  # the agent's one critical finding
SELECTION = ("asi02.*", "asi04.*", "asi08.*", CRITICAL)


def flaky_scan(tmp: Path, *extra: str) -> tuple[int, dict[str, Any], FlakyAgentServer]:
    with FlakyAgentServer(seed=0) as server:
        config = openai_config(tmp, server.endpoint)
        probes = [arg for glob in SELECTION for arg in ("--probes", glob)]
        code = main(
            scan_args(config, tmp, *probes, "--concurrency", "16", "--fail-on", "critical", *extra)
        )
    report = json.loads((tmp / "out" / "scan.json").read_text(encoding="utf-8"))
    return code, report, server


def test_with_default_retries_almost_every_attempt_is_judged_and_the_finding_found(
    tmp_path: Path,
) -> None:
    code, report, server = flaky_scan(tmp_path)
    # The scene really was flaky: every kind of fault was served, about a third of requests.
    assert {"html", "cutjson", "500", "429"} <= set(server.served)
    faulty = sum(n for fault, n in server.served.items() if fault != "ok")
    assert faulty >= 0.2 * server.requests
    attempts = report["coverage"]["attempts_completed"]
    assert len(report["unjudged"]) <= 0.05 * attempts, report["unjudged"]
    critical = [f["probe_id"] for f in report["findings"] if f["severity"] == "critical"]
    assert critical == [CRITICAL]
    assert code == 1  # --fail-on critical: the finding fails the gate, never a pass


def test_without_retries_the_reason_says_what_was_wrong_with_the_body(tmp_path: Path) -> None:
    code, report, _ = flaky_scan(tmp_path, "--retries", "0", "--output", "json,md")
    reasons = [u["reason"] for u in report["unjudged"]]
    assert any("HTTP 200 with an HTML page, not JSON" in r for r in reasons), reasons
    assert any("HTTP 200 with JSON cut off after" in r for r in reasons), reasons
    # Most replies were read: the advice is about the flaky endpoint, not the protocol.
    summary = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "could not be read (an HTML page, JSON cut off" in summary
    assert "--protocol" not in summary
    # Missing evidence is never a pass: the critical probe is a finding or it is unjudged
    # (what --fail-on then decides is the gate's: docs/gating.md).
    result = next(r for r in report["results"] if r["probe_id"] == CRITICAL)
    assert result["outcome"] in ("vulnerable", "unjudged") and result["resisted"] == 0
    if result["outcome"] == "vulnerable":
        assert code == 1


def test_when_no_reply_was_ever_read_the_advice_is_the_protocol(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every reply an HTML page: nothing of the scan was read, so the kind is likely wrong."""
    shares = (("html", 1.0),)
    with FlakyAgentServer(shares=shares) as server:
        config = openai_config(tmp_path, server.endpoint)
        args = scan_args(config, tmp_path, "--retries", "0", "--output", "json,md")
        assert main([a for a in args if a != "--quiet"]) == 3
    out = capsys.readouterr().out
    summary = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    for text in (out, summary):
        assert "no reply of the target could be read in the shape its kind expects" in text
        assert "check --protocol" in text
