"""The scan flag table (probegate/scan_flags.py): every row's flag reaches its ScanConfig field.

Each row is set once on the command line and once in a config file's ``scan:`` section, and
the config must hold the value, not its default. A new row needs no change here unless its
field refuses the generic example of its form (then it adds one to ``_EXAMPLES``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from probegate.cli import build_parser, main
from probegate.commands.scan import config_from_args
from probegate.config import NOT_SCAN_SETTINGS, ScanConfig, flag_name, scan_settings
from probegate.models.report import Mode
from probegate.models.taxonomy import Severity
from probegate.scan_flags import SCAN_FLAGS, Form, Group, PathRule, ScanFlag

# What a field that validates its value accepts (as typed) and then holds.
_EXAMPLES: dict[str, tuple[str, Any]] = {
    "mode": ("FULL", Mode.FULL),
    "asi": ("asi03,ASI05", ["ASI03", "ASI05"]),
    "probes": ("ASI01*", ["asi01*"]),
    "variant": ("seed", "seed"),
    "shard": ("2/3", "2/3"),
    "mcp_listen": ("127.0.0.1:8765", "127.0.0.1:8765"),
    "mcp_advertise": ("http://probegate.test:8765/", "http://probegate.test:8765"),
    "a2a_listen": ("127.0.0.1:8766", "127.0.0.1:8766"),
    "a2a_advertise": ("http://probegate.test:8766/", "http://probegate.test:8766"),
    "output": ("json,md", ["json", "md"]),
    "fail_on": ("HIGH", Severity.HIGH),
    "fail_under": ("50", 50.0),
}


def _example(row: ScanFlag, base: Path) -> tuple[str | None, Any]:
    """The text to give the row's flag (None: the flag alone) and what the config then holds;
    paths are relative to ``base``, where the command line or the config file stands."""
    if row.field in _EXAMPLES:
        return _EXAMPLES[row.field]
    if row.form is Form.SWITCH or row.form is Form.TOGGLE:
        return None, True
    if row.form is Form.OFF:
        return None, False
    if row.path is not PathRule.NONE:
        held = (base / row.field).resolve() if row.path is PathRule.RESOLVED else Path(row.field)
        return row.field, [held] if row.form is Form.LIST else held
    if row.type is int:
        return "7", 7
    if row.type is float:
        return "2.5", 2.5
    return "some-text", ["some-text"] if row.form is Form.LIST else "some-text"


def _argv(row: ScanFlag, text: str | None) -> list[str]:
    return [row.flag] if text is None else [row.flag, text]


def test_every_setting_is_one_rows_and_every_row_a_settings() -> None:
    fields = [row.field for row in SCAN_FLAGS]
    assert len(fields) == len(set(fields)), "two rows set one field"
    assert len({row.flag for row in SCAN_FLAGS}) == len(SCAN_FLAGS)
    settings = set(ScanConfig.model_fields) - NOT_SCAN_SETTINGS
    assert set(fields) == settings
    for row in SCAN_FLAGS:
        assert flag_name(row.field) == row.flag
        assert scan_settings()[row.key] == row.field


def test_every_flag_is_in_the_help_in_its_group(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "--help"]) == 0
    sections: dict[str, str] = {}
    title = ""
    for line in capsys.readouterr().out.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            title = line[:-1]
        sections[title] = sections.get(title, "") + line + "\n"
    for row in SCAN_FLAGS:
        if row.group is not Group.GLOBAL:
            assert f"  {row.flag}" in sections[row.group.value], row.flag
        if row.form is Form.TOGGLE:
            assert f"  {row.off_flag}" in sections[row.group.value], row.off_flag


def test_every_flag_reaches_the_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["scan", "demo"]
    expected: dict[str, Any] = {}
    for row in SCAN_FLAGS:
        text, expected[row.field] = _example(row, tmp_path)
        argv += _argv(row, text)
    config, _ = config_from_args(build_parser().parse_args(argv))
    for row in SCAN_FLAGS:
        held = getattr(config, row.field)
        default = ScanConfig.model_fields[row.field].get_default(call_default_factory=True)
        assert held == expected[row.field], row.flag
        assert held != default, f"{row.flag} left {row.field} at its default"
    stored = {row.key for row in SCAN_FLAGS if row.stored}
    assert stored <= set(config.invocation), "the invocation keeps every flag that shapes a scan"
    assert not {row.key for row in SCAN_FLAGS if not row.stored} & set(config.invocation)


@pytest.mark.parametrize("row", [r for r in SCAN_FLAGS if r.form is Form.TOGGLE], ids=str)
def test_a_toggles_off_flag_sets_false(row: ScanFlag) -> None:
    config, _ = config_from_args(build_parser().parse_args(["scan", "demo", row.off_flag]))
    assert getattr(config, row.field) is False


def test_every_setting_reaches_the_config_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(tmp_path)
    section: dict[str, Any] = {}
    expected: dict[str, Any] = {}
    for row in SCAN_FLAGS:
        text, expected[row.field] = _example(row, project)
        if row.path is PathRule.AS_TYPED:  # from a file, relative to the file
            held = project / row.field
            expected[row.field] = [held] if row.form is Form.LIST else held
        # The flag's long name, with dashes, where it has one; else the field.
        key = row.key.replace("_", "-")
        section[key] = expected[row.field] if text is None else text
    (project / "probegate.yml").write_text(
        yaml.safe_dump({"target": {"kind": "demo"}, "scan": section}), encoding="utf-8"
    )
    config, _ = config_from_args(build_parser().parse_args(["scan", "project/probegate.yml"]))
    for row in SCAN_FLAGS:
        assert getattr(config, row.field) == expected[row.field], row.field
