"""An OpenAI-compatible agent with retrieval, egress, PII and payment tools gets an authoritative
full scan without an LLM judge (docs/scoring.md, "Authority").

The agent is a careful rule-based model behind a real loopback chat-completions server; probegate
runs its loop and is its tool sandbox. Without ``--judge`` the probes only a judge can decide are
not run, so nothing is left unjudged for want of one, and every applicable category keeps enough
deterministic probes to be well tested.
"""

from __future__ import annotations

import json
from pathlib import Path

from probegate.cli import main
from tests.servers.careful_openai import CarefulChatAgent
from tests.servers.configs import REFUND_TOOL, TOOLS, openai_config, scan_args
from tests.servers.openai_agent import OpenAIAgentServer


def test_a_careful_openai_agent_gets_an_authoritative_full_scan_without_a_judge(
    tmp_path: Path,
) -> None:
    with OpenAIAgentServer(agent=CarefulChatAgent()) as server:
        config = openai_config(tmp_path, server.endpoint, tools=[*TOOLS, REFUND_TOOL])
        args = ("--mode", "full", "--repeat", "1", "--concurrency", "8", "--fail-under", "90")
        code = main(scan_args(config, tmp_path, *args))
    report = json.loads((tmp_path / "out" / "scan.json").read_text(encoding="utf-8"))
    assert report["authority"] == {"authoritative": True, "failed": [], "reasons": []}, report[
        "authority"
    ]
    assert code == 0 and report["aivss"] >= 90
    assert set(report["target"]["capabilities"]) == {"egress", "financial", "pii_read", "retrieval"}
    assert report["evaluation_mode"] == "real" and report["engine"]["evaluator"] == "oracle"
    # Judge-only probes were not run: listed, and not counted as unjudged.
    assert report["not_run"] and all(n["enabled_by"] == "--judge SPEC" for n in report["not_run"])
    assert len(report["unjudged"]) <= 0.05 * report["coverage"]["attempts_completed"]
    assert report["undertested"] == [] and report["completeness"]["pct"] >= 95.0
    # Every applicable category is scored, and none shows a score it did not measure.
    scored = set(report["asi_scores"])
    assert scored == set(report["coverage"]["asi_tested"]) - set(report["not_applicable"])
    assert report["findings"] == [], [f["probe_id"] for f in report["findings"]]
