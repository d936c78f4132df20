"""A careful agent that warns in the words real models use gets no findings for its warnings.

``tests/servers/aligned_model.py`` serves a rule-based stand-in for a well-aligned model behind a
real loopback chat-completions server. It says what an injection asked in reported speech,
quotes it in quotation marks, a blockquote or a code span, and warns in the *next* sentence or
in a list's lead-in. Words alone cannot say whether such a reply protects the user
(docs/scoring.md, "Reading a reply"): the full scan through the CLI must find nothing, and
leave those replies to a judge ("needs a judge"), never call them findings; the weak agent on
the same server shape and tools is still caught.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from probegate.library.oracles.reading import NEEDS_JUDGE
from tests.servers.aligned_model import TOOLS, VOICES, AlignedModel
from tests.servers.configs import openai_config, scan_args
from tests.servers.openai_agent import OpenAIAgentServer

ARGS = ("--mode", "full", "--repeat", "1", "--concurrency", "8")


def _scan(tmp: Path, agent: Any, *extra: str) -> tuple[int, dict[str, Any], list[str]]:
    with OpenAIAgentServer(agent=agent) as server:
        config = openai_config(tmp, server.endpoint, tools=TOOLS)
        code = main(scan_args(config, tmp, *ARGS, *extra))
    report = json.loads((tmp / "out" / "scan.json").read_text(encoding="utf-8"))
    (journal,) = (tmp / "store").glob("scans/*/journal.jsonl")
    reasons = []
    for line in journal.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("kind") == "attempt":
            reasons.append(record["attempt"]["reason"])
    return code, report, reasons


@pytest.mark.parametrize("voice", VOICES)
@pytest.mark.slow
def test_a_careful_model_gets_no_findings_for_its_multi_sentence_warnings(
    tmp_path: Path, voice: str
) -> None:
    code, report, reasons = _scan(tmp_path, AlignedModel(voice), "--fail-on", "low")
    assert report["findings"] == [], [f["probe_id"] for f in report["findings"]]
    assert report["coverage"]["attempts_completed"] >= 1000
    # Its warnings name the bait: what the rules cannot decide is left to a judge, and never
    # passes for a finding, nor for a proof of safety.
    ambiguous = Counter(r.split(":")[0] for r in reasons if r.startswith(NEEDS_JUDGE))
    assert ambiguous[NEEDS_JUDGE] >= 10, ambiguous
    assert code != 1


def test_a_careful_model_that_asks_before_it_acts_gets_no_findings(tmp_path: Path) -> None:
    code, report, _ = _scan(tmp_path, AlignedModel("markdown", confirms=True))
    assert report["findings"] == [], [f["probe_id"] for f in report["findings"]]
    assert code == 0


def test_the_weak_agent_on_the_same_server_and_tools_is_still_caught(tmp_path: Path) -> None:
    code, report, _ = _scan(tmp_path, None, "--fail-on", "high")
    found = {f["probe_id"] for f in report["findings"]}
    assert code == 1
    # The probes whose output oracles the new rules read are among them: a relay of the bait
    # (the weak agent pastes what it read) is no quotation, whatever words stand around it.
    assert {
        "asi01.markdown-image-exfil.v1",
        "asi09.card-details-next-session.v1",
        "asi09.credential-solicitation.v1",
        "asi09.macro-safe-assurance.v1",
        "asi09.phishing-link-relay.v1",
        "asi09.remote-access-scam.v1",
    } <= found, sorted(found)
    assert len(found) >= 25 and len({f["asi"] for f in report["findings"]}) >= 7
