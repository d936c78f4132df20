"""Hostile agents (docs/targets.md): whatever an endpoint sends, the scan ends with its reports.

Each repro is a real scan through ``main(argv)`` against the fault-injecting loopback server
(tests/servers/faults.py), with every report format asked for. On the code before the bounds
these crashed (exit 4, no report), ran for minutes, or held a gigabyte; the figures before
and after are printed by ``make bench`` (bench/bench_hostile.py). The time ceilings here are
generous on purpose: they catch a hang, not a slowdown.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from probegate.models.bounds import PARSE_DEPTH_MAX, TOOL_CALLS_MAX, TRANSCRIPT_MAX
from probegate.reports import FORMATS
from tests.servers.configs import openai_config, scan_args
from tests.servers.faults import HOSTILE_CALLS, HOSTILE_TEXT, FaultServer

ALL_FORMATS = ",".join(FORMATS)
IMAGE_PROBE = "asi01.markdown-image-exfil.v1"
PROBES = ("--probes", IMAGE_PROBE, "--probes", "asi02.email-blast.v1")
# A journal line holds one attempt: at most TRANSCRIPT_MAX characters of agent output (4 bytes
# each at worst in UTF-8), the probe's own turns and the sandbox's answers.
JOURNAL_LINE_MAX = 4 * TRANSCRIPT_MAX + 256 * 1024
CEILING_SECONDS = 90


def _scan(faults: FaultServer, fault: str, tmp: Path, *extra: str) -> tuple[int, float]:
    config = openai_config(tmp, faults.endpoint(fault))
    start = time.monotonic()
    code = main(scan_args(config, tmp, "--output", ALL_FORMATS, *extra))
    return code, time.monotonic() - start


def _journal(tmp: Path) -> list[bytes]:
    (path,) = (tmp / "store" / "scans").glob("*/journal.jsonl")
    return path.read_bytes().splitlines()


def _report(tmp: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((tmp / "out" / "scan.json").read_bytes())
    return data


def _every_report_written(tmp: Path) -> None:
    for fmt in FORMATS.values():
        assert (tmp / "out" / fmt.filename).stat().st_size > 0, fmt.name


def _attempt_lines(tmp: Path) -> list[dict[str, Any]]:
    lines = _journal(tmp)
    assert all(len(line) <= JOURNAL_LINE_MAX for line in lines)
    attempts = [json.loads(line)["attempt"] for line in lines[1:]]
    assert attempts
    return attempts


def _replies(attempts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        turn
        for a in attempts
        for turn in (a.get("transcript") or {}).get("turns", [])
        if turn["role"] == "assistant"
    ]


def test_lone_surrogates_are_stored_judged_and_rendered(
    faults: FaultServer, tmp_path: Path
) -> None:
    code, seconds = _scan(faults, "surrogate", tmp_path, *PROBES)
    assert code in (0, 1) and seconds < CEILING_SECONDS
    _every_report_written(tmp_path)
    attempts = _attempt_lines(tmp_path)
    replies = _replies(attempts)
    assert replies and all(r["content"].startswith("Done \ufffd and \ufffd.") for r in replies)
    body = replies[0]["tool_calls"][0]["arguments"]["body"]
    assert body == "half an emoji \ufffd"
    # Judged, not just survived: the user's own request (asi02.email-blast) is judged; the
    # canned agent never fetches the notice that carries the image probe's attack, which is
    # said plainly ("not delivered"), never passed.
    judged = {a["probe_id"] for a in attempts if a["outcome"] != "unjudged"}
    assert "asi02.email-blast.v1" in judged
    assert all(a["outcome"] != "unjudged" or a["cause"] == "not_delivered" for a in attempts)


@pytest.mark.parametrize("fault", ["deep", "deepargs"])
def test_any_depth_is_stored_judged_and_rendered(
    faults: FaultServer, tmp_path: Path, fault: str
) -> None:
    code, seconds = _scan(faults, fault, tmp_path, *PROBES)
    assert code <= 3 and seconds < CEILING_SECONDS
    _every_report_written(tmp_path)
    replies = _replies(_attempt_lines(tmp_path))
    assert replies
    if fault == "deep":
        assert all(r["content"] == "hi" for r in replies)
    else:
        call = replies[0]["tool_calls"][0]
        (cut,) = call["cuts"]
        # Parsed 128 levels deep (PARSE_DEPTH_MAX), kept as JSON text past 32 (DEPTH_MAX).
        assert cut["field"] == "arguments" and cut["length"] > PARSE_DEPTH_MAX * 6
        assert "nested deeper than 128 levels" in call["arguments"]["_raw"]
        assert call["arguments"]["_raw"].startswith('{"to": {"a": {"a":')


def test_ten_thousand_tool_calls_are_capped_and_recorded(
    faults: FaultServer, tmp_path: Path
) -> None:
    code, seconds = _scan(faults, "manycalls", tmp_path, *PROBES)
    assert code <= 3 and seconds < CEILING_SECONDS
    _every_report_written(tmp_path)
    attempts = _attempt_lines(tmp_path)
    for reply in _replies(attempts):
        assert len(reply["tool_calls"]) == TOOL_CALLS_MAX
        # The model asked twice (the 64 answered calls went back, then 10,000 more).
        assert reply["cuts"] == [
            {
                "field": "tool_calls",
                "length": 2 * HOSTILE_CALLS,
                "kept": TOOL_CALLS_MAX,
                "sha256": "",
            }
        ]
    assert max(a["requests"] for a in attempts) == 2


def test_megabyte_replies_keep_head_tail_length_and_hash(
    faults: FaultServer, tmp_path: Path
) -> None:
    code, seconds = _scan(faults, "bigreply", tmp_path, *PROBES)
    assert code <= 3 and seconds < CEILING_SECONDS
    _every_report_written(tmp_path)
    expected = hashlib.sha256(b"A" * HOSTILE_TEXT).hexdigest()
    for reply in _replies(_attempt_lines(tmp_path)):
        (cut,) = reply["cuts"]
        assert (cut["field"], cut["length"], cut["sha256"]) == ("content", HOSTILE_TEXT, expected)
        assert len(reply["content"]) < 40_000 and "[probegate cut" in reply["content"]


def test_the_markdown_image_pattern_is_linear_on_a_megabyte_of_image_openers(
    faults: FaultServer, tmp_path: Path
) -> None:
    # 1 MB of "![": with Python's re this pattern ran for about 8 minutes holding the GIL.
    code, seconds = _scan(faults, "imagebomb", tmp_path, "--probes", IMAGE_PROBE)
    assert code <= 3 and seconds < CEILING_SECONDS
    _every_report_written(tmp_path)
    (attempt,) = _attempt_lines(tmp_path)
    # The reply was read by the image pattern in time; the canned agent never fetched the
    # notice that carries the attack, so the attempt says so instead of passing.
    assert attempt["outcome"] == "unjudged" and attempt["cause"] == "not_delivered"


def test_retry_after_on_every_reply_ends_in_an_early_stop(
    faults: FaultServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Retry-After: 119 on every reply, and a scan that may pause 2 s in all: past that, 429s
    # get the ordinary backoff, attempts fail fast, and the early stop fires (exit 3).
    code, seconds = _scan(
        faults,
        "retryforever",
        tmp_path,
        "--asi",
        "ASI01,ASI02",
        "--retries",
        "1",
        "--max-wait",
        "2",
        "--concurrency",
        "4",
    )
    assert code == 3 and seconds < CEILING_SECONDS
    _every_report_written(tmp_path)
    assert _report(tmp_path)["stopped_reason"] == "early_stop"
    err = capsys.readouterr().err
    assert "scan stopped early" in err and "Retry-After 119s not honoured" in err


def test_the_deadline_ends_a_scan_held_in_a_pause(
    faults: FaultServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The default --max-wait honours the first 119 s pause; the deadline ends it after 3 s.
    code, seconds = _scan(faults, "retryforever", tmp_path, *PROBES, "--deadline", "3")
    assert code == 3 and seconds < CEILING_SECONDS
    _every_report_written(tmp_path)
    report = _report(tmp_path)
    assert report["stopped_reason"] == "deadline"
    reasons = {u["reason"] for u in report["unjudged"]}
    assert reasons and all("deadline of 3s passed" in r for r in reasons)
    assert "could be judged" in capsys.readouterr().err
