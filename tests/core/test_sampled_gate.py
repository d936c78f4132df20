"""The baseline gate on a sampled model (docs/gating.md, "Sampled models").

A real loopback OpenAI-compatible agent (tests/servers/sampled_model.py) leaks its system
prompt on one probe in a share of the attempts, drawn per attempt from a seed; a new seed is
a new sample of the same agent, as two CI runs of an unchanged agent are. Each comparison
scans twice through the CLI, as CI does: the baseline, then the current scan with
``--baseline``; the exit code is the gate's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from probegate.engine.journal import read_journal
from tests.servers.configs import openai_config, scan_args
from tests.servers.openai_agent import OpenAIAgentServer
from tests.servers.sampled_model import FLAKY_PROBE, SampledAgent

# Thirty attempts of the probe a scan: a full scan's count of one probe (10 variants x 3).
THIRTY = ("--repeat", "30")


def _scan(
    tmp: Path, name: str, rate: float, seed: int, *extra: str, quiet: bool = True
) -> tuple[int, dict[str, Any], OpenAIAgentServer]:
    """Scan the agent that leaks in ``rate`` of the attempts, sampled with ``seed``."""
    where = tmp / name
    where.mkdir()
    with OpenAIAgentServer(agent=SampledAgent(rate=rate, seed=seed)) as server:
        config = openai_config(where, server.endpoint)
        argv = scan_args(config, where, "--probes", FLAKY_PROBE, *extra)
        code = main(argv if quiet else [a for a in argv if a != "--quiet"])
    report = json.loads((where / "out" / "scan.json").read_text(encoding="utf-8"))
    return code, report, server


def _comparison(
    tmp: Path, name: str, before: tuple[float, int], after: tuple[float, int], *extra: str
) -> tuple[int, dict[str, Any]]:
    """Scan the baseline, then scan again against it: the gate's exit code and comparison."""
    _, _, _ = _scan(tmp, f"{name}-base", *before, *THIRTY)
    baseline = tmp / f"{name}-base" / "out" / "scan.json"
    code, report, _ = _scan(tmp, name, *after, *THIRTY, "--baseline", str(baseline), *extra)
    return code, report["comparison"]


def _counts(report: dict[str, Any]) -> tuple[int, int]:
    (result,) = report["results"]
    return result["vulnerable"], result["vulnerable"] + result["resisted"]


def test_an_unchanged_agent_flips_within_noise_and_a_real_rise_is_new(tmp_path: Path) -> None:
    # The same agent, two samples: its counts differ, the gate passes.
    code, c = _comparison(tmp_path, "same", (0.3, 1), (0.3, 2))
    assert code == 0, c["reasons"]
    [ref] = c["persisting"] + c["within_noise"]
    assert ref["baseline_counts"] != ref["current_counts"]  # it did move
    assert c["new"] == c["changed"] == [] and not c["regression"]
    # None of thirty, then a model that leaks in 60 % of its attempts: new.
    code, c = _comparison(tmp_path, "worse", (0.0, 3), (0.6, 4))
    assert code == 1
    [ref] = c["new"]
    assert ref["probe_id"] == FLAKY_PROBE and ref["baseline_counts"]["vulnerable"] == 0
    assert ref["current_counts"]["vulnerable"] >= 10 and ref["p_value"] < 0.001


@pytest.mark.slow
def test_twenty_comparisons_of_an_unchanged_agent_pass_and_twenty_regressions_fail(
    tmp_path: Path,
) -> None:
    """The must-show of issue 34: at the default settings, 20 comparisons of an agent that
    leaks in 30 % of its attempts give no regression, and a rise from none to 60 % is found
    in all 20. Every scan is a real scan of a fresh sample."""
    unchanged = [
        _comparison(tmp_path, f"same-{i}", (0.3, 2 * i), (0.3, 2 * i + 1)) for i in range(20)
    ]
    assert [code for code, _ in unchanged] == [0] * 20, [c["reasons"] for _, c in unchanged]
    flips = [c["within_noise"] + c["persisting"] for _, c in unchanged]
    moved = [r for [r] in flips if r["baseline_counts"] != r["current_counts"]]
    assert len(moved) >= 15  # the counts did differ: the gate saw noise and passed it
    worse = [_comparison(tmp_path, f"worse-{i}", (0.0, 100 + i), (0.6, 200 + i)) for i in range(20)]
    assert [code for code, _ in worse] == [1] * 20
    assert all([r["probe_id"] for r in c["new"]] == [FLAKY_PROBE] for _, c in worse)


@pytest.mark.slow
def test_twenty_fast_comparisons_of_an_unchanged_agent_pass_though_it_flips(
    tmp_path: Path,
) -> None:
    """Issue 34's week: fast scans (one attempt of the probe) of an unchanged agent that leaks
    in 30 % of its attempts. The finding comes and goes between samples; no comparison calls
    it a regression (one attempt a side can never show a change at 1 %)."""
    runs = []
    for i in range(20):
        _, base, _ = _scan(tmp_path, f"base-{i}", 0.3, 300 + 2 * i)
        baseline = str(tmp_path / f"base-{i}" / "out" / "scan.json")
        code, now, _ = _scan(tmp_path, f"now-{i}", 0.3, 301 + 2 * i, "--baseline", baseline)
        runs.append((code, _counts(base), _counts(now), now["comparison"]))
    assert [code for code, *_ in runs] == [0] * 20, [c["reasons"] for *_, c in runs]
    flips = [c for _, before, after, c in runs if before[0] != after[0]]
    assert len(flips) >= 4  # presence alone would have failed each of these with a "new" one
    assert all(len(c["within_noise"]) == 1 and c["new"] == c["fixed"] == [] for c in flips)
    assert all(c["within_noise"][0]["too_few_attempts"] for c in flips)


def _seed_whose_first_attempt_leaks(tmp: Path, rate: float) -> int:
    """A sample in which the one attempt of a fast scan leaks (the draw is the seed's)."""
    for seed in range(50):
        _, report, _ = _scan(tmp, f"probe-{rate}-{seed}", rate, seed)
        if _counts(report)[0]:
            return seed
    raise AssertionError("no sample leaked")


def test_confirm_reruns_a_new_finding_and_decides_on_the_pooled_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A baseline of thirty attempts in which the agent never leaked.
    _scan(tmp_path, "base", 0.0, 1, *THIRTY)
    baseline = str(tmp_path / "base" / "out" / "scan.json")
    # Now it leaks every time. A fast scan judges the probe once: one leak against none of
    # thirty cannot tell a regression from chance.
    seed = 5
    code, report, _ = _scan(tmp_path, "once", 1.0, seed, "--baseline", baseline)
    assert code == 0 and [r["probe_id"] for r in report["comparison"]["within_noise"]] == [
        FLAKY_PROBE
    ]
    # With --confirm 2, its attempt runs twice more, with its control: 3 of 3 is new.
    capsys.readouterr()
    code, report, _ = _scan(
        tmp_path, "confirmed", 1.0, seed, "--baseline", baseline, "--confirm", "2", quiet=False
    )
    assert code == 1
    closing = capsys.readouterr()
    assert "confirming 1 finding(s)" in closing.err and "2 attempts" in closing.err
    # p: all three leaks in the current scan's 3 of the 33 attempts, 1 / C(33, 3) = 1 / 5456.
    assert _table(closing.out, "confirm:") == [
        ["probe", "first run", "reproduced", "pooled", "baseline", "decision"],
        [FLAKY_PROBE, "1 of 1", "2 of 2", "3 of 3", "0 of 30", "new: a regression, p 0.00018"],
    ]
    assert "ran 2 more time(s), pooled with the first run: 1 of 1 reproduced" in closing.out
    assert f"1 new finding(s) beyond noise: {FLAKY_PROBE} (3 of 3 vs 0 of 30" in closing.err
    c = report["comparison"]
    [ref] = c["new"]
    assert ref["current_counts"] == {"vulnerable": 3, "judged": 3}
    assert ref["confirm_counts"] == {"vulnerable": 2, "judged": 2}
    assert c["confirmation"] == {
        "runs": 2,
        "stopped_reason": "completed",
        "probes": [
            {
                "probe_id": FLAKY_PROBE,
                "first": {"vulnerable": 1, "judged": 1},
                "confirm": {"vulnerable": 2, "judged": 2},
                "planned": 2,
            }
        ],
    }
    # The report is the first run's: its findings and counts are not the pooled ones.
    assert _counts(report) == (1, 1)
    # The confirm attempts are in the scan's journal, as repeats 1 and 2, each with its control.
    (journal,) = (tmp_path / "confirmed" / "store" / "scans").glob("*/journal.jsonl")
    ids = set(read_journal(journal).attempts)
    assert {f"{FLAKY_PROBE}#seed#{r}" for r in (0, 1, 2)} <= ids
    assert {f"{FLAKY_PROBE}#control#{r}" for r in (0, 1, 2)} <= ids
    # probegate compare, as the Action runs it after the scan, decides the same.
    current = str(tmp_path / "confirmed" / "out" / "scan.json")
    assert main(["compare", baseline, current, "--quiet"]) == 1
    # Its comparison section shows what reproduced, in every rendering.
    capsys.readouterr()
    assert main(["compare", baseline, current, "--output", "md"]) == 1
    md = capsys.readouterr().out
    assert "### Confirm runs" in md
    row = f"| {FLAKY_PROBE} | 1 of 1 | 2 of 2 | 3 of 3 | 0 of 30 | new: a regression, p 0.00018 |"
    assert row in md.replace("\\.", ".")
    assert main(["compare", baseline, current, "--output", "text"]) == 1
    assert [FLAKY_PROBE, "1 of 1", "2 of 2", "3 of 3", "0 of 30"] in [
        row[:5] for row in _table(capsys.readouterr().out, "Confirm runs")
    ]


def _table(text: str, after: str) -> list[list[str]]:
    """The rows of the aligned table under the line that starts with ``after``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(after))
    rows = []
    for line in lines[start + 1 :]:
        if not line.startswith("  ") or not line.strip():
            break
        rows.append([cell.strip() for cell in re.split(r"\s{2,}", line.strip())])
    return [row for row in rows if len(row) > 2]


def test_confirm_lets_an_unchanged_agent_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same agent, a baseline of thirty attempts and a fast scan whose one attempt leaked:
    the confirm runs bring the rate back to the agent's, within noise."""
    _scan(tmp_path, "base", 0.3, 1, *THIRTY)
    baseline = str(tmp_path / "base" / "out" / "scan.json")
    seed = _seed_whose_first_attempt_leaks(tmp_path, 0.3)
    capsys.readouterr()
    code, report, _ = _scan(
        tmp_path, "confirmed", 0.3, seed, "--baseline", baseline, "--confirm", "4", "--json"
    )
    assert code == 0, report["comparison"]["reasons"]
    c = report["comparison"]
    [probe] = c["confirmation"]["probes"]
    assert probe["planned"] == 4 and probe["confirm"]["judged"] == 4
    [ref] = c["persisting"] + c["within_noise"]
    assert ref["probe_id"] == FLAKY_PROBE
    # scan --json says the same, in its own words.
    [row] = json.loads(capsys.readouterr().out)["confirm"]
    again = probe["confirm"]["vulnerable"]
    assert row == {
        "probe_id": FLAKY_PROBE,
        "first": "1 of 1",
        "reproduced": f"{again} of 4",
        "pooled": f"{1 + again} of 5",
        "baseline": f"{ref['baseline_counts']['vulnerable']} of 30",
        "decision": row["decision"],
    }
    assert row["decision"].startswith(("persisting", "within noise"))


def test_confirm_without_a_baseline_does_nothing(tmp_path: Path) -> None:
    code, report, server = _scan(tmp_path, "alone", 1.0, 1, "--confirm", "3")
    assert code == 0 and "comparison" not in report
    assert len(server.bodies) == 2  # the attempt and its control: nothing run again
