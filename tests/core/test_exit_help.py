"""Each command's ``--help`` ends with the exit codes that command returns, not the scan's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probegate.cli import COMMANDS, main
from probegate.errors import COMMAND_EXITS, EXIT_CODES, exit_code_help

SCAN_ONLY = "--fail-under on a scan that is not authoritative"


def _help(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    assert main([*words, "--help"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", sorted(COMMAND_EXITS))
def test_a_commands_help_ends_with_its_own_exit_codes(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _help(capsys, *command.split())
    assert text.rstrip("\n").endswith(exit_code_help(command))
    assert SCAN_ONLY not in text and "a scan then says how to resume" not in text


def test_every_command_has_a_table_and_scan_and_the_top_have_the_contract(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert set(COMMANDS) - {"scan"} <= {c.split()[0] for c in COMMAND_EXITS}
    for words in (["scan"], []):
        text = _help(capsys, *words)
        assert text.rstrip("\n").endswith(exit_code_help())
        assert all(f"  {row.code.value}  " in text for row in EXIT_CODES)
    # An action without a table of its own takes its command's.
    assert _help(capsys, "probes", "show").rstrip("\n").endswith(exit_code_help("probes"))


def test_verify_exits_as_its_help_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """1 for a report with nothing to anchor it, 2 for one that cannot be read: never 3."""
    monkeypatch.chdir(tmp_path)
    assert main(["scan", "demo", "--probes", "asi02.email-blast.v1", "-q", "--no-sign"]) == 0
    codes = {code.value for code, _ in COMMAND_EXITS["verify"]}
    assert main(["verify", "probegate-out/scan.json"]) == 1 in codes
    assert main(["verify", "missing.json"]) == 2 in codes
    (tmp_path / "broken.json").write_text(json.dumps({"schema": 7}), encoding="utf-8")
    assert main(["verify", "broken.json"]) in codes
    capsys.readouterr()
