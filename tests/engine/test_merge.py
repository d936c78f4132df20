"""--shard K/N plus `probegate merge` equals the unsharded scan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main


def scan(tmp: Path, name: str, *extra: str) -> Path:
    out = tmp / name
    code = main(
        [
            "scan",
            "demo",
            "--mode",
            "full",
            "--repeat",
            "1",
            "--store",
            str(tmp / "store"),
            "--output-dir",
            str(out),
            "--no-sign",
            "--quiet",
            *extra,
        ]
    )
    assert code == 0
    return out / "scan.json"


def essence(path: Path) -> dict[str, Any]:
    report = json.loads(path.read_text())
    findings = [
        {k: v for k, v in f.items() if k not in ("transcript_ref", "pov_reference", "created_at")}
        for f in report["findings"]
    ]
    keep = (
        "aivss",
        "band",
        "asi_scores",
        "sub_scores",
        "coverage",
        "coverage_grade",
        "completeness",
        "authority",
        "results",
        "unjudged",
        "not_applicable",
        "undertested",
        "tier",
        "mode",
        "findings_summary",
        "mode_authoritative",
        "scoring_valid",
        "cost_usd",
        "tokens_total",
        "evaluation_mode",
        "stopped_reason",
        "seed",
        "probe_library_version",
    )
    return {"findings": findings, **{k: report[k] for k in keep}}


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], Path]:
    tmp = tmp_path_factory.mktemp("merge")
    parts = [scan(tmp, f"shard{k}", "--shard", f"{k}/3") for k in (1, 2, 3)]
    return tmp, parts, scan(tmp, "whole")


def test_merged_shards_equal_the_unsharded_scan(
    shards: tuple[Path, list[Path], Path],
) -> None:
    tmp, parts, whole = shards
    assert all(json.loads(p.read_text())["findings"] for p in parts)
    out = tmp / "merged"
    code = main(
        [
            "merge",
            *map(str, reversed(parts)),
            "--output-dir",
            str(out),
            "--no-sign",
            "--quiet",
            "--output",
            "json,sarif",
        ]
    )
    assert code == 0
    merged = essence(out / "scan.json")
    assert merged == essence(whole)
    assert merged["authority"]["authoritative"] is True
    assert json.loads((out / "scan.json").read_text())["shard"] is None
    assert (out / "scan.sarif").is_file()


def test_merge_gates_like_a_scan(shards: tuple[Path, list[Path], Path]) -> None:
    tmp, parts, _ = shards
    code = main(
        [
            "merge",
            *map(str, parts),
            "--output-dir",
            str(tmp / "g"),
            "--no-sign",
            "--quiet",
            "--fail-on",
            "high",
        ]
    )
    assert code == 1


def test_merge_refuses_what_is_not_one_scan(
    shards: tuple[Path, list[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp, parts, whole = shards
    base = ["--output-dir", str(tmp / "bad"), "--no-sign", "--quiet"]
    other_seed = scan(tmp, "seed7", "--shard", "2/3", "--seed", "7")
    cases = {
        "both shard 1/3": [parts[0], parts[0], parts[2]],
        "missing shard(s) 2/3": [parts[0], parts[2]],
        "seed": [parts[0], other_seed, parts[2]],
        "not a shard report": [whole],
    }
    for words, paths in cases.items():
        assert main(["merge", *map(str, paths), *base]) == 2
        assert words in capsys.readouterr().err
