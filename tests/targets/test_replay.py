"""--record then --replay: the same verdicts again with the agent switched off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from probegate.models.recording import MANIFEST, recording_name
from tests.servers.configs import known_probes, openai_config
from tests.servers.openai_agent import OpenAIAgentServer


def scan(tmp: Path, out: str, *args: str) -> tuple[int, dict[str, Any]]:
    code = main(
        [
            "scan",
            *args,
            "--store",
            str(tmp / "store"),
            "--output-dir",
            str(tmp / out),
            "--no-sign",
            "--quiet",
        ]
    )
    path = tmp / out / "scan.json"
    return code, json.loads(path.read_text()) if path.exists() else {}


def verdicts(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "aivss": report["aivss"],
        "asi_scores": report["asi_scores"],
        "fps": [f["fp"] for f in report["findings"]],
        "evidence": [f["evidence"] for f in report["findings"]],
        "results": report["results"],
        "unjudged": report["unjudged"],
    }


def test_replay_gives_the_same_verdicts_without_the_agent(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    with OpenAIAgentServer() as server:
        config = openai_config(tmp_path, server.endpoint)
        code, recorded = scan(tmp_path, "live", str(config), "--record", str(rec))
        sent = server.requests
    assert code == 0 and recorded["findings"] and sent > 0
    assert (rec / MANIFEST).is_file()
    # The server is gone: any request would fail, so equal verdicts prove nothing was sent.
    code, replayed = scan(tmp_path, "replayed", "--replay", str(rec))
    assert code == 0
    assert verdicts(replayed) == verdicts(recorded)
    assert replayed["target"]["mode"] == "replay"
    assert replayed["target"]["capabilities"] == recorded["target"]["capabilities"]
    assert replayed["budget"]["requests_used"] == 0


def test_missing_recording_is_unjudged_and_seed_must_match(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    with OpenAIAgentServer() as server:
        config = openai_config(tmp_path, server.endpoint)
        scan(tmp_path, "live", str(config), "--record", str(rec), *known_probes())
    victim = "asi01.indirect-document-email-exfil.v1#seed#0"
    (rec / recording_name(victim)).unlink()
    code, replayed = scan(tmp_path, "replayed", "--replay", str(rec), *known_probes())
    reasons = {u["attempt_id"]: u["reason"] for u in replayed["unjudged"]}
    assert reasons == {victim: "no recording for this attempt"}
    assert code == 0
    code, _ = scan(tmp_path, "other", "--replay", str(rec), "--seed", "7")
    assert code == 2


def test_replay_of_a_directory_that_is_not_a_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = scan(tmp_path, "x", "--replay", str(tmp_path))
    assert code == 2 and "not a probegate recording" in capsys.readouterr().err


def test_a_recording_is_never_mixed_with_another(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = tmp_path / "rec"
    assert main(["scan", "demo", "--quiet", "--no-sign", "--record", str(rec)]) == 0
    before = {p.name: p.read_bytes() for p in rec.iterdir()}
    # the same scan again may re-record; another target or seed may not touch it
    assert main(["scan", "demo", "--quiet", "--no-sign", "--record", str(rec)]) == 0
    assert main(["scan", "demo", "--quiet", "--no-sign", "--seed", "9", "--record", str(rec)]) == 2
    assert "different scan" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in rec.iterdir()} == before
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep me", "utf-8")
    assert main(["scan", "demo", "--quiet", "--no-sign", "--record", str(other)]) == 2
    assert [p.name for p in other.iterdir()] == ["mine.txt"]
