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
from probegate.judge.llm import ENV_API_KEY, ENV_BASE_URL
from probegate.library.oracles.reading import NEEDS_JUDGE
from tests.judge.fake_judge import (
    Reply,
    Responder,
    calibrated,
    calibration_requests,
    case_of,
    fake_judge,
    verdict,
)
from tests.library.oracles.corpus import CORPUS, HELDOUT, VOICES
from tests.servers.aligned_model import TOOLS
from tests.servers.configs import openai_config, scan_args
from tests.servers.corpus_model import CorpusModel
from tests.servers.openai_agent import OpenAIAgentServer


def _scan(tmp: Path, model: CorpusModel, *extra: str) -> tuple[int, dict[str, Any]]:
    tmp.mkdir(parents=True, exist_ok=True)
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
    # Left to a judge, or (the refund probe whose every payment fails: its replies were
    # written without the failing call) an attack that never reached the scripted agent.
    assert all(
        u["reason"].startswith(NEEDS_JUDGE) or u["cause"] == "not_delivered"
        for u in report["unjudged"]
    ), {u["reason"] for u in report["unjudged"]}
    assert code == 0


@pytest.mark.parametrize("voice", VOICES)
def test_a_twin_is_never_called_resisted(tmp_path: Path, voice: str) -> None:
    model = CorpusModel(HELDOUT, voice, careful=False)
    _, report = _scan(tmp_path, model, "--mode", "full", "--variant", "seed", "--repeat", "1")
    outcomes = {r["probe_id"]: r["outcome"] for r in report["results"]}
    assert set(outcomes) == set(model.probe_ids)
    assert "resisted" not in outcomes.values(), outcomes
    assert sum(o == "vulnerable" for o in outcomes.values()) >= 5, outcomes


def knowing(corpus: Path, voice: str) -> Responder:
    """A loopback judge that knows the corpus: it finds the voice's reply in the transcript it
    is asked about and answers with the truth (a careful reply resisted, a twin vulnerable,
    quoting the twin's first line); the calibration cases get their known verdicts."""
    careful = CorpusModel(corpus, voice, careful=True)
    twin = CorpusModel(corpus, voice, careful=False)
    replies = {s.text: True for s in careful.scripts.values()}
    replies.update({s.text: False for s in twin.scripts.values()})

    def respond(body: dict[str, Any]) -> Reply:
        said = [t["content"] for t in case_of(body)["transcript"] if t["role"] == "assistant"]
        for text in said:
            if text in replies and not replies[text]:
                return verdict("vulnerable", text.strip().splitlines()[0][:200])
        return verdict("resisted")

    return calibrated(respond)


@pytest.mark.parametrize("voice", ["markdown", "quotes"])
@pytest.mark.slow
def test_with_a_judge_the_careful_voice_is_decided_resisted_and_the_twin_found(
    tmp_path: Path, voice: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The judge decides what rests on words: the careful voice's attempts become resisted
    (nothing unjudged is left, so --fail-on is decided), every probe the twin falls for
    becomes a finding."""
    with fake_judge(knowing(HELDOUT, voice)) as judge:
        monkeypatch.setenv(ENV_BASE_URL, judge.base_url)
        # A key of a real key's length: it is a scan secret, redacted from what the judge is
        # sent as from every file (a one-letter key would hide every "k" of the transcript).
        monkeypatch.setenv(ENV_API_KEY, "judge-key-7f3a9c21")
        judged = ("--judge", "openai:judge-model", "--fail-on", "low")
        code, careful = _scan(
            tmp_path / "c", CorpusModel(HELDOUT, voice, careful=True), "--mode", "full",
            "--repeat", "1", *judged,
        )  # fmt: skip
        assert careful["findings"] == [] and careful["unjudged"] == [], careful["unjudged"][:3]
        assert code == 0
        asked = len(judge.requests)
        twin_model = CorpusModel(HELDOUT, voice, careful=False)
        code, twin = _scan(
            tmp_path / "t", twin_model, "--mode", "full", "--variant", "seed", "--repeat", "1",
            *judged,
        )  # fmt: skip
    found = {f["probe_id"] for f in twin["findings"]}
    assert found == set(twin_model.probe_ids), sorted(set(twin_model.probe_ids) - found)
    assert code == 1
    # Only what rests on words was asked (an attempt without the bait, or decided by a deed,
    # asks nothing): fewer requests, past the calibration's, than attempts.
    assert asked - calibration_requests() < careful["coverage"]["attempts_completed"]
