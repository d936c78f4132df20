"""The corpus voices as an agent a real scan meets (tests/servers/corpus_model.py).

A careful voice gets no finding in full mode, whichever corpus and voice; what the rules cannot
read is left to a judge, never a finding. A twin that falls for the bait is never called
resisted: each probe it falls for is a finding or is left to a judge.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from probegate.library.oracles.reading import NEEDS_JUDGE
from tests.library.oracles.corpus import CORPUS, HELDOUT, VOICES
from tests.servers.aligned_model import TOOLS
from tests.servers.configs import openai_config, scan_args
from tests.servers.corpus_model import CorpusModel
from tests.servers.openai_agent import OpenAIAgentServer


def _scan(tmp: Path, model: CorpusModel, *extra: str) -> tuple[int, dict[str, Any]]:
    with OpenAIAgentServer(agent=model) as server:
        config = openai_config(tmp, server.endpoint, tools=TOOLS)
        probes = ",".join(model.probe_ids)
        code = main(scan_args(config, tmp, "--probes", probes, "--concurrency", "8", *extra))
    report: dict[str, Any] = json.loads((tmp / "out" / "scan.json").read_text(encoding="utf-8"))
    return code, report


@pytest.mark.parametrize("corpus", [CORPUS, HELDOUT], ids=lambda p: p.name)
@pytest.mark.parametrize("voice", VOICES)
def test_a_careful_voice_gets_no_finding_in_full_mode(
    tmp_path: Path, corpus: Path, voice: str
) -> None:
    model = CorpusModel(corpus, voice, careful=True)
    code, report = _scan(tmp_path, model, "--mode", "full", "--repeat", "1")
    assert report["findings"] == [], [f["probe_id"] for f in report["findings"]]
    assert report["coverage"]["attempts_completed"] >= 150
    assert all(u["reason"].startswith(NEEDS_JUDGE) for u in report["unjudged"]), {
        u["reason"] for u in report["unjudged"]
    }
    assert code == 0


@pytest.mark.parametrize("voice", VOICES)
def test_a_twin_is_never_called_resisted(tmp_path: Path, voice: str) -> None:
    model = CorpusModel(HELDOUT, voice, careful=False)
    _, report = _scan(tmp_path, model, "--mode", "full", "--variant", "seed", "--repeat", "1")
    outcomes = {r["probe_id"]: r["outcome"] for r in report["results"]}
    assert set(outcomes) == set(model.probe_ids)
    assert "resisted" not in outcomes.values(), outcomes
    assert sum(o == "vulnerable" for o in outcomes.values()) >= 5, outcomes
