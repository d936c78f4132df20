"""The bundled agents as product fixtures: ``demo`` falls for realistic attacks across the ASI
categories with evidence a reader can follow; ``demo-hardened`` resists every probe in every
mode, including every mutated variant, and its full scan is authoritative."""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from probegate.engine.plan import Exposure, PlanRequest, build_plan
from probegate.engine.runner import Runner, RunRequest
from probegate.library.loader import load_library
from probegate.library.probe import Probe
from probegate.models.report import Mode
from probegate.models.taxonomy import ASI_IDS
from probegate.models.transcript import resolve_path
from probegate.models.verdict import Attempt, Outcome
from probegate.targets.base import capabilities_of
from probegate.targets.demo import DemoTarget
from probegate.transport.limiter import RequestLimiter
from tests.conftest import load_json

PROBES = load_library().probes
DETERMINISTIC = [p for p in PROBES if not p.needs_judge]


def _scan(root: Path, target: str, *flags: str) -> dict[str, Any]:
    out = root / "out"
    code = main(
        ["scan", target, "--quiet", "--no-sign", "--output-dir", str(out), "--store",
         str(root / "store"), *flags]
    )  # fmt: skip
    assert code == 0
    report: dict[str, Any] = load_json(out / "scan.json")
    return report


@pytest.fixture(scope="module")
def demo_fast(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _scan(tmp_path_factory.mktemp("demo-fast"), "demo", "--seed", "7")


@pytest.fixture(scope="module")
def demo_full(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _scan(tmp_path_factory.mktemp("demo-full"), "demo", "--mode", "full")


@pytest.fixture(scope="module")
def hardened_full(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _scan(tmp_path_factory.mktemp("hardened-full"), "demo-hardened", "--mode", "full")


def _assert_evidence_points_into_transcript(finding: dict[str, Any]) -> None:
    assert finding["evidence"], f"{finding['probe_id']} has no evidence"
    for ev in finding["evidence"]:
        value = resolve_path(finding["transcript"], ev["path"])
        if isinstance(value, str):
            assert value[ev["start"] : ev["end"]] == ev["subject"], (finding["probe_id"], ev)
        else:  # a number argument (an amount): the subject is its JSON text
            assert str(value).startswith(ev["subject"]) or ev["subject"] in str(value)


# -- demo -----------------------------------------------------------------------------------
def test_demo_fast_scan_has_findings_in_every_asi_category(demo_fast: dict[str, Any]) -> None:
    found = {f["asi"] for f in demo_fast["findings"]}
    assert len(found) >= 8
    assert found == set(ASI_IDS), f"no demo finding in {sorted(set(ASI_IDS) - found)}"


def test_demo_findings_carry_evidence_that_resolves_into_the_transcript(
    demo_fast: dict[str, Any],
) -> None:
    for finding in demo_fast["findings"]:
        _assert_evidence_points_into_transcript(finding)


def test_demo_falls_for_most_deterministic_probes(demo_fast: dict[str, Any]) -> None:
    vulnerable = {f["probe_id"] for f in demo_fast["findings"]}
    missed = sorted(p.id for p in DETERMINISTIC if p.id not in vulnerable)
    assert len(missed) <= 0.1 * len(DETERMINISTIC), missed


def test_demo_full_scan_is_authoritative_with_findings_everywhere(
    demo_full: dict[str, Any],
) -> None:
    assert demo_full["authority"]["authoritative"], demo_full["authority"]
    per_asi = Counter(f["asi"] for f in demo_full["findings"])
    assert set(per_asi) == set(ASI_IDS)
    for finding in demo_full["findings"]:
        _assert_evidence_points_into_transcript(finding)
        assert 0 < finding["pov_reliability"] <= 1


def test_same_seed_gives_identical_findings(demo_fast: dict[str, Any], tmp_path: Path) -> None:
    again = _scan(tmp_path, "demo", "--seed", "7")

    def key(report: dict[str, Any]) -> list[Any]:
        return [(f["probe_id"], f["fp"], f["evidence"], f["id"]) for f in report["findings"]]

    assert key(again) == key(demo_fast)


# -- demo-hardened --------------------------------------------------------------------------
def test_hardened_full_scan_has_no_findings_and_is_authoritative(
    hardened_full: dict[str, Any],
) -> None:
    assert hardened_full["findings"] == []
    assert hardened_full["authority"] == {"authoritative": True, "failed": [], "reasons": []}
    assert hardened_full["mode"] == "full" and hardened_full["evaluation_mode"] == "real"


def test_without_a_judge_the_probes_only_a_judge_can_decide_are_not_run(
    hardened_full: dict[str, Any],
) -> None:
    needs_judge = {p.id for p in PROBES if p.needs_judge}
    assert needs_judge and hardened_full["unjudged"] == []
    assert {n["probe_id"] for n in hardened_full["not_run"]} == needs_judge
    assert all(n["enabled_by"] == "--judge SPEC" for n in hardened_full["not_run"])
    assert all("--judge" in n["reason"] for n in hardened_full["not_run"])
    not_run = [r for r in hardened_full["results"] if r["outcome"] == "not_run"]
    assert {r["probe_id"] for r in not_run} == needs_judge
    assert all(r["attempts"] == 0 for r in not_run)
    # They are neither planned nor unjudged: completeness and the unjudged share ignore them.
    assert hardened_full["coverage"]["probes_not_run"] == len(needs_judge)
    assert hardened_full["completeness"]["pct"] == 100.0


def test_hardened_smart_scan_has_no_findings(tmp_path: Path) -> None:
    report = _scan(tmp_path, "demo-hardened", "--mode", "smart")
    assert report["findings"] == []


@cache
def _hardened_attempts() -> dict[str, list[Attempt]]:
    target = DemoTarget(hardened=True)
    plan = build_plan(
        list(PROBES),
        capabilities_of(target.tools()),
        PlanRequest(Mode.FULL, seed=11, repeat=1),
        Exposure(judge=True),
    )
    limiter = RequestLimiter(rps=None, max_requests=None, budget_usd=None)
    runner = Runner(target, limiter, RunRequest(seed=11, concurrency=1))
    by_probe: dict[str, list[Attempt]] = {}
    for planned in plan.attempts:
        by_probe.setdefault(planned.probe.id, []).append(runner.run_one(planned))
    return by_probe


@pytest.mark.parametrize("probe", PROBES, ids=[p.id for p in PROBES])
def test_hardened_resists_every_variant_of(probe: Probe) -> None:
    attempts = _hardened_attempts()[probe.id]
    assert len(attempts) == 10  # the seed and nine mutated variants
    expected = Outcome.UNJUDGED if probe.needs_judge else Outcome.RESISTED
    wrong = {a.variant: a.evidence for a in attempts if a.outcome is not expected}
    assert not wrong, wrong


# -- honesty of the demo --------------------------------------------------------------------
def test_the_demo_agents_know_nothing_about_probes() -> None:
    """The demo falls for attack phrasing, never for a lookup table of probe ids or texts."""
    package = Path(__file__).resolve().parents[3] / "src/probegate/targets/demo"
    source = "".join(path.read_text("utf-8") for path in sorted(package.glob("*.py")))
    for probe in PROBES:
        assert probe.id not in source
        payload = probe.payload or ""
        for start in range(0, max(1, len(payload) - 30), 15):
            assert payload[start : start + 30] not in source, (probe.id, payload[start:][:30])
