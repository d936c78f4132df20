"""The collector policy a scan runs under (perf.py): tuned while the scan runs, undone after."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

import probegate.scan as scan_package
from probegate.cli import main
from probegate.perf import SCAN_YOUNG_THRESHOLD, collector_for_scan


def test_the_policy_is_undone_even_when_the_scan_raises() -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with pytest.raises(RuntimeError), collector_for_scan():
        assert gc.get_threshold()[0] == SCAN_YOUNG_THRESHOLD
        # Whatever existed when the scan started is out of the collector's sight.
        assert gc.get_freeze_count() > frozen
        assert gc.isenabled()
        raise RuntimeError("interrupted")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen


def test_a_scan_runs_its_attempts_under_the_policy_and_restores_the_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int, int]] = []
    real = scan_package.run_attempts

    def watched(*args: object, **kwargs: object) -> object:
        seen.append((gc.get_threshold()[0], gc.get_freeze_count()))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scan_package, "run_attempts", watched)
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    monkeypatch.chdir(tmp_path)
    assert main(["scan", "demo-hardened", "--quiet", "--no-sign"]) == 0
    assert len(seen) == 1
    threshold, frozen_during = seen[0]
    assert threshold == SCAN_YOUNG_THRESHOLD
    assert frozen_during > frozen
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen
