"""``--json`` on every command: machine output on stdout, parseable, with the command's facts;
and the global flags work before or after the command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def _json(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 0) -> Any:
    assert main(argv) == code, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_every_command_prints_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    scan = _json(capsys, ["scan", "demo", "--asi", "ASI02", "--no-sign", "--json"])
    assert scan["exit_code"] == 0 and scan["findings"]
    scan_id = scan["scan_id"]
    report = _json(capsys, ["--json", "report", scan_id])
    assert report["scan_id"] == scan_id and report["schema"] == "probegate-scan-v1"
    verify = _json(capsys, ["verify", "probegate-out/scan.json", "--json"], code=1)
    assert verify["schema"] == "OK" and verify["ok"] is False  # unsigned: nothing pinned
    compare = _json(
        capsys, ["compare", "probegate-out/scan.json", "probegate-out/scan.json", "--json"]
    )
    assert compare["regression"] is False
    keys = _json(capsys, ["keys", "generate", "--out-dir", "k", "--json"])
    assert Path(keys["public_key"]).is_file() and keys["key_id"]
    for k in ("1/2", "2/2"):
        assert main(["scan", "demo", "-q", "--no-sign", "--shard", k, "--output-dir", k[0]]) == 0
    merged = _json(capsys, ["merge", "1/scan.json", "2/scan.json", "--json", "--output-dir", "m"])
    assert merged["shards"] == 2 and merged["exit_code"] == 0
    probes = _json(capsys, ["probes", "list", "--json"])
    assert len(probes) >= 120
    suite = ROOT / "examples" / "scenarios" / "support-agent.yml"
    run = _json(capsys, ["run", str(suite), "--dry-run", "--json"])
    assert run["exit_code"] == 0 and run["scenarios"] >= 1


def test_every_command_takes_the_global_flags_after_it() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in COMMANDS:
        command = sub.choices[name]  # type: ignore[index]
        flags = {o for a in command._actions for o in a.option_strings}
        assert {"--debug", "-q", "-v", "--json"} <= flags, name


def test_every_scan_flag_has_help_and_the_defaults_are_the_configs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from probegate.config import ScanConfig

    assert main(["scan", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    scan = sub.choices["scan"]  # type: ignore[index]
    for action in scan._actions:
        assert action.help, action.option_strings
    for field in ("concurrency", "timeout", "retries", "seed", "store", "output_dir", "mode"):
        default = ScanConfig.model_fields[field].default
        assert f"(default: {default})" in text, field
    assert "exit codes:" in text and "3 the gate could not be decided" in text


def test_debug_works_after_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import probegate.scan.finalise

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("synthetic bug")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(probegate.scan.finalise, "assemble", boom)
    assert main(["scan", "demo", "-q", "--debug"]) == 4
    assert "Traceback" in capsys.readouterr().err
