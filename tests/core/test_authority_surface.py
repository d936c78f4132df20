"""Authority relative to the agent's surface (docs/scoring.md, "Coverage", "Authority"): a
small agent's full scan is decided by --fail-under, its categories tested however few probes
apply, the others n/a with what would bring probes in, and every message in words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from tests.servers.configs import scan_args
from tests.servers.three_tool_agent import docs_tools, three_tool_config, three_tool_server

CONDITION_NAMES = ("scoring_valid", "mode_authoritative", "not_evaluated", "completeness")


def _scan(tmp_path: Path, *, careful: bool, mode: str = "full") -> tuple[int, dict[str, Any]]:
    with three_tool_server(careful=careful) as server:
        config = three_tool_config(tmp_path, server.endpoint)
        argv = scan_args(config, tmp_path, "--mode", mode, "--repeat", "1", "--fail-under", "80")
        argv.remove("--quiet")
        code = main(argv)
    report = json.loads((tmp_path / "out" / "scan.json").read_text(encoding="utf-8"))
    return code, report


def test_the_docs_agent_has_the_three_tools_it_claims() -> None:
    caps = sorted(c for tool in docs_tools() for c in tool["capabilities"])
    assert caps == ["egress", "pii_read", "retrieval"]


@pytest.mark.parametrize(("careful", "expected"), [(True, 0), (False, 1)])
def test_a_full_scan_of_the_three_tool_agent_decides_fail_under(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], careful: bool, expected: int
) -> None:
    code, report = _scan(tmp_path, careful=careful)
    captured = capsys.readouterr()
    assert code == expected, captured.err
    assert report["authority"]["authoritative"], report["authority"]
    categories = report["categories"]
    assert isinstance(categories, dict) and len(categories) == 10
    # Categories with only one or two applicable probes are tested when those were judged.
    tested = {a for a, c in categories.items() if c["state"] == "tested"}
    assert any(categories[a]["ran"] < 3 for a in tested)
    # The one with none applicable is n/a and says what would bring probes in.
    (na,) = [a for a, c in categories.items() if c["state"] == "not_applicable"]
    assert categories[na]["enabled_by"] and "code_exec" in categories[na]["reason"]
    # The surface is stated, and no message names an internal condition.
    assert "surface: 3 tools" in captured.out and "capabilities egress, pii_read, retrieval" in (
        captured.out
    )
    for name in CONDITION_NAMES:
        assert name not in captured.out + captured.err


def test_a_score_gate_that_cannot_be_decided_says_what_would_decide_it_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _scan(tmp_path, careful=True, mode="fast")
    captured = capsys.readouterr()
    assert code == 3
    assert "mode_authoritative" in report["authority"]["failed"]  # the name stays for machines
    assert "only a full scan (--mode full) counts" in captured.err
    for name in CONDITION_NAMES:
        assert name not in captured.out + captured.err
