"""All ten ASI categories, each with its state, wherever a scan speaks: the closing lines, the
closing JSON, the dry-run plan and the Action's summary (docs/scoring.md, "Categories")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from probegate.cli import main
from probegate.github.summary import fallback_summary
from probegate.models.stored import load_report
from probegate.models.taxonomy import ASI_IDS
from tests.servers.configs import scan_args
from tests.servers.three_tool_agent import three_tool_config, three_tool_server

SELECTED = ("--asi", "ASI01,ASI05,ASI06")


def _lines(text: str) -> dict[str, str]:
    """The closing line of each category: ``  ASI05 n/a (not applicable) ...``."""
    return dict(re.findall(r"^  (ASI\d\d) (.*)$", text, re.M))


def test_the_closing_lines_and_the_summary_name_every_category_with_its_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with three_tool_server(careful=True) as server:
        config = three_tool_config(tmp_path, server.endpoint)
        argv = scan_args(config, tmp_path, *SELECTED)
        argv.remove("--quiet")
        assert main(argv) == 0
    out = capsys.readouterr().out
    lines = _lines(out)
    assert list(lines) == list(ASI_IDS)
    # Tested: a score. Not applicable (no code_exec tool): what would bring probes in.
    assert re.match(r"100\.0 +findings 0$", lines["ASI01"]), lines["ASI01"]
    assert lines["ASI05"].startswith("n/a (not applicable)")
    assert "capability code_exec" in lines["ASI05"]
    assert lines["ASI02"].startswith("n/a (not selected)") and "--asi" in lines["ASI02"]
    report = load_report(tmp_path / "out" / "scan.json")
    summary = fallback_summary(report)
    for asi in ASI_IDS:
        assert f"| {asi} |" in summary
    assert "| ASI05 | n/a (not applicable) | 0 |" in summary


def test_the_closing_json_carries_every_category(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, store = str(tmp_path / "out"), str(tmp_path / "s")
    argv = ["scan", "demo-hardened", *SELECTED, "--json", "--no-sign", "--output-dir", out]
    code = main([*argv, "--store", store])
    closing = json.loads(capsys.readouterr().out)
    assert code == 0 and list(closing["categories"]) == list(ASI_IDS)
    states = {asi: c["state"] for asi, c in closing["categories"].items()}
    assert states["ASI01"] == "tested" and states["ASI02"] == "not_selected"


def test_the_dry_run_plan_names_every_category(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = three_tool_config(tmp_path, "http://127.0.0.1:9/v1")
    assert main(["scan", str(config), "--dry-run", "--asi", "ASI01,ASI05"]) == 0
    out = capsys.readouterr().out
    lines = dict(re.findall(r"^  (ASI\d\d): (.*)$", out, re.M))
    assert list(lines) == list(ASI_IDS)
    assert re.match(r"\d+ of \d+ probes, \d+ attempts", lines["ASI01"])
    assert lines["ASI05"].startswith("n/a: ") and "capability code_exec" in lines["ASI05"]
    assert lines["ASI02"] == "not selected (--asi, --probes or --shard)"
    assert "surface: 3 tools (lookup_customer, send_email, fetch_document)" in out
