"""The gates against real scans of the bundled demo agents (docs/gating.md).

Synthetic reports test the rules; these check that the rules hold on what ``probegate scan``
actually writes, through the CLI, the way CI runs it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probegate.cli import main


def _scan(tmp_path: Path, target: str, name: str, *extra: str) -> Path:
    out = tmp_path / name
    argv = [
        "scan",
        target,
        "--output",
        "json",
        "--output-dir",
        str(out),
        "--store",
        str(tmp_path / "store"),
        "--no-sign",
        "--quiet",
        *extra,
    ]
    assert main(argv) == 0
    return out / "scan.json"


# Eight attempts a probe: the fewest at which none against all is beyond chance for every
# probe at once (1 in 12,870 each; docs/gating.md, "Sampled models"). Two categories keep it
# quick.
REPEATED = ("--repeat", "8", "--asi", "ASI01,ASI02")


@pytest.fixture(scope="module")
def scans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("real-scans")
    return {
        "hardened": _scan(tmp, "demo-hardened", "hardened", *REPEATED),
        "demo": _scan(tmp, "demo", "demo", *REPEATED),
        "demo-once": _scan(tmp, "demo", "demo-once", "--asi", "ASI01,ASI02"),
        "hardened-once": _scan(tmp, "demo-hardened", "hardened-once", "--asi", "ASI01,ASI02"),
    }


def test_compare_a_real_scan_with_itself_exits_0(
    scans: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(scans["demo"]), str(scans["demo"])]) == 0
    assert "  new 0 · " in capsys.readouterr().out


def test_hardened_baseline_against_demo_exits_1_and_lists_every_new_finding(
    scans: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    demo = json.loads(scans["demo"].read_text(encoding="utf-8"))
    assert demo["findings"], "the demo agent is expected to have findings"
    assert main(["compare", str(scans["hardened"]), str(scans["demo"]), "--output", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert sorted(f["fp"] for f in data["new"]) == sorted(f["fp"] for f in demo["findings"])


def test_demo_against_hardened_fixes_everything_and_exits_0(
    scans: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    demo = json.loads(scans["demo"].read_text(encoding="utf-8"))
    assert main(["compare", str(scans["demo"]), str(scans["hardened"]), "--output", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["fixed"]) == len(demo["findings"])
    assert data["unconfirmed"] == []


def test_one_attempt_a_probe_cannot_tell_a_regression_from_chance(
    scans: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A fast scan judges each probe once: against a baseline of one attempt a probe, every
    finding is within noise, marked "too few attempts", and the notes say what would tell.
    (The score still drops beyond noise: the demo leaves attempts unjudged, which the score
    counts as missing evidence; the tolerance keeps that out of this test.)"""
    demo = json.loads(scans["demo-once"].read_text(encoding="utf-8"))
    argv = ["compare", str(scans["hardened-once"]), str(scans["demo-once"]), "--output", "json"]
    assert main([*argv, "--tolerance", "100"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["new"] == [] and len(data["within_noise"]) == len(demo["findings"])
    assert all(f["too_few_attempts"] for f in data["within_noise"])
    assert any("--confirm N" in note for note in data["notes"])
