"""End-to-end scans of the bundled agents through ``main(argv)``: the foundation contract."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from probegate.models.transcript import resolve_path
from tests.conftest import load_json, run_cli

SEED_TOP_LEVEL = {
    "aivss",
    "aivss_formula_version",
    "asi_scores",
    "band",
    "budget",
    "completeness",
    "cost_usd",
    "coverage",
    "coverage_grade",
    "created_at",
    "duration_seconds",
    "engine",
    "evaluation_mode",
    "findings",
    "findings_summary",
    "mode",
    "mode_authoritative",
    "package_version",
    "probe_library_version",
    "scan_id",
    "schema",
    "scoring_valid",
    "stopped_reason",
    "sub_scores",
    "target",
    "tier",
    "tokens_total",
    "undertested",
}
SEED_FINDING = {
    "id",
    "probe_id",
    "asi",
    "mitre_atlas",
    "csa_category",
    "severity",
    "attempt_count",
    "success",
    "confidence",
    "summary",
    "transcript_ref",
    "trigger_prompt",
    "pov_reference",
    "pov_reliability",
    "created_at",
}


def test_demo_scan_has_every_seed_field(demo_scan: dict[str, Any]) -> None:
    assert set(demo_scan) >= SEED_TOP_LEVEL
    assert demo_scan["schema"] == "probegate-scan-v1"
    assert set(demo_scan["engine"]) >= {"commander", "attacker", "evaluator"}
    assert set(demo_scan["target"]) >= {"mode", "ref", "inferred_goal", "profile_source"}
    assert set(demo_scan["findings_summary"]) == {"critical", "high", "medium", "low"}
    for finding in demo_scan["findings"]:
        assert set(finding) >= SEED_FINDING


def test_demo_scan_finds_weaknesses_in_most_categories(demo_scan: dict[str, Any]) -> None:
    categories = {f["asi"] for f in demo_scan["findings"]}
    assert len(categories) >= 8, categories


def test_every_finding_has_evidence_pointing_into_its_transcript(demo_scan: dict[str, Any]) -> None:
    for finding in demo_scan["findings"]:
        assert finding["evidence"], finding["probe_id"]
        for ev in finding["evidence"]:
            value = resolve_path(finding["transcript"], ev["path"])
            if isinstance(value, str) and ev["end"] > ev["start"]:
                assert value[ev["start"] : ev["end"]] == ev["subject"][: ev["end"] - ev["start"]]


def test_counts_agree(demo_scan: dict[str, Any]) -> None:
    summary = demo_scan["findings_summary"]
    assert sum(summary.values()) == len(demo_scan["findings"])
    for f in demo_scan["findings"]:
        assert f["success"] is True
        assert 0.0 < f["pov_reliability"] <= 1.0


def test_hardened_demo_has_no_findings_and_says_fast_is_not_authoritative(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli("scan", "demo-hardened", "--no-sign") == 0
    report = load_json(in_tmp / "probegate-out" / "scan.json")
    assert report["findings"] == []
    assert report["band"] == "EXCELLENT"
    assert report["mode_authoritative"] is False
    assert "mode_authoritative" in report["authority"]["failed"]
    assert "not authoritative" in capsys.readouterr().out


def test_same_seed_same_findings_and_fingerprints(in_tmp: Path) -> None:
    assert run_cli("scan", "demo", "--quiet", "--no-sign", "--seed", "7", "--output-dir", "a") == 0
    assert run_cli("scan", "demo", "--quiet", "--no-sign", "--seed", "7", "--output-dir", "b") == 0
    a = load_json(in_tmp / "a" / "scan.json")
    b = load_json(in_tmp / "b" / "scan.json")
    assert [f["fp"] for f in a["findings"]] == [f["fp"] for f in b["findings"]]
    assert [f["evidence"] for f in a["findings"]] == [f["evidence"] for f in b["findings"]]


def test_source_date_epoch_gives_identical_bytes(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    assert run_cli("scan", "demo", "--quiet", "--no-sign", "--output-dir", "a") == 0
    assert run_cli("scan", "demo", "--quiet", "--no-sign", "--output-dir", "b") == 0
    assert (in_tmp / "a" / "scan.json").read_bytes() == (in_tmp / "b" / "scan.json").read_bytes()


def test_fail_on_high_exits_1(in_tmp: Path) -> None:
    assert run_cli("scan", "demo", "--quiet", "--no-sign", "--fail-on", "high") == 1
    # the report is written before the gate decides
    assert (in_tmp / "probegate-out" / "scan.json").exists()


def test_fail_under_on_fast_scan_exits_3_and_explains(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli("scan", "demo", "--quiet", "--no-sign", "--fail-under", "50") == 3
    err = capsys.readouterr().err
    assert "authoritative" in err and "full" in err


def test_hardened_full_scan_is_authoritative_and_passes_fail_under(in_tmp: Path) -> None:
    assert (
        run_cli(
            "scan", "demo-hardened", "--mode", "full", "--quiet", "--no-sign", "--fail-under", "90"
        )
        == 0
    )
    report = load_json(in_tmp / "probegate-out" / "scan.json")
    assert report["authority"]["authoritative"] is True
    assert report["mode_authoritative"] is True and report["scoring_valid"] is True


def test_malformed_config_exits_2_with_one_line(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "bad.yml").write_text("target: [unclosed\n", encoding="utf-8")
    assert run_cli("scan", "bad.yml") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bad.yml" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "text, needle",
    [
        ("target:\n  kind: banana\n", "target.kind"),
        ("scan:\n  concurrency: -3\n", "concurrency"),
        ("scan:\n  mode: slow\n", "mode"),
        ("nonsense: 1\n", "unknown top-level"),
    ],
)
def test_invalid_config_values_exit_2(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], text: str, needle: str
) -> None:
    (in_tmp / "probegate.yml").write_text(text, encoding="utf-8")
    assert run_cli("scan") == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_malformed_probe_file_exits_2(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    probes = in_tmp / "probes"
    probes.mkdir()
    (probes / "asi01.broken.v1.yaml").write_text("id: asi01.broken.v1\nasi: ASI99\n", "utf-8")
    assert run_cli("scan", "demo", "--probe-dir", str(probes)) == 2
    err = capsys.readouterr().err.strip()
    assert "asi01.broken.v1.yaml" in err and err.count("\n") == 0


def test_missing_target_and_bad_flags_exit_2(in_tmp: Path) -> None:
    assert run_cli("scan") == 2
    assert run_cli("scan", "demo", "--mode", "turbo") == 2
    assert run_cli("scan", "demo", "--asi", "ASI42") == 2
    assert run_cli("scan", "demo", "--output", "docx") == 2
    assert run_cli("scan", "does-not-exist.yml") == 2
    assert run_cli("frobnicate") == 2


def test_internal_error_exits_4_with_hint(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import probegate.scan.finalise

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("synthetic bug")

    monkeypatch.setattr(probegate.scan.finalise, "assemble", boom)
    assert run_cli("scan", "demo", "--quiet") == 4
    err = capsys.readouterr().err
    assert "--debug" in err and "Traceback" not in err


def test_journal_and_reproducers_are_stored(in_tmp: Path) -> None:
    assert run_cli("scan", "demo", "--quiet", "--no-sign") == 0
    report = load_json(in_tmp / "probegate-out" / "scan.json")
    scan_dir = in_tmp / ".probegate" / "scans" / report["scan_id"]
    lines = (scan_dir / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    # The header, every attempt and every control (one per vulnerable probe here: fast mode).
    attempts = report["completeness"]["agents_completed"]
    assert report["controls"]["run"] == len(report["findings"]) > 0
    assert len(lines) == 1 + attempts + report["controls"]["run"]
    assert (scan_dir / "scan.json").read_bytes() == (
        in_tmp / "probegate-out" / "scan.json"
    ).read_bytes()
    for finding in report["findings"]:
        assert (in_tmp / finding["pov_reference"]).exists()


def test_asi_selection_is_undertested_elsewhere(in_tmp: Path) -> None:
    assert run_cli("scan", "demo", "--quiet", "--no-sign", "--asi", "ASI01") == 0
    report = load_json(in_tmp / "probegate-out" / "scan.json")
    assert {f["asi"] for f in report["findings"]} == {"ASI01"}
    assert "undertested" in report["authority"]["failed"]


def test_version_and_module_entry_points() -> None:
    from probegate import __version__

    out = subprocess.run(
        [sys.executable, "-m", "probegate", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0 and __version__ in out.stdout
    exe = Path(sys.executable).parent / "probegate"
    if not exe.exists():  # installed entry point next to the interpreter in the venv
        pytest.fail(f"console script missing at {exe}: is the package installed?")
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    res = subprocess.run(
        [str(exe), "scan", "demo-hardened", "--quiet", "--no-sign", "--output-dir", "/dev/null/x"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr


def test_dry_run_plans_without_secrets(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (in_tmp / "probegate.yml").write_text(
        "target:\n  kind: openai\n  endpoint: http://127.0.0.1:9/v1\n  model: m\n"
        "  api_key_env: PG_TEST_SURELY_UNSET\n  tools:\n"
        "    - {name: send_email, capabilities: [egress]}\n",
        "utf-8",
    )
    assert run_cli("scan", "--dry-run") == 0
    assert "attempts" in capsys.readouterr().out
    assert not (in_tmp / ".probegate").exists()  # nothing ran
    assert run_cli("scan", "--quiet") == 2  # a real scan needs the key
    assert "PG_TEST_SURELY_UNSET" in capsys.readouterr().err


def test_registry_readme_and_help_agree(capsys: pytest.CaptureFixture[str]) -> None:
    from probegate.cli import COMMANDS, build_parser, command_module

    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    for name in COMMANDS:
        assert f"`probegate {name}" in readme, name
        module = command_module(name)
        assert callable(module.add_parser) and callable(module.run)
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == set(COMMANDS)  # type: ignore[arg-type]
    # the placeholders' one-line help is what each command says of itself
    full = {a.dest: a.help for a in sub._choices_actions}  # type: ignore[attr-defined]
    assert full == COMMANDS
