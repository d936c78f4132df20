"""The collector policy a scan runs under (perf.py): tuned while the scan runs, undone after."""

from __future__ import annotations

import contextlib
import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

import probegate.scan as scan_package
from probegate.cli import main
from probegate.perf import SCAN_YOUNG_THRESHOLD, collector_for_scan, gc_paused


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


@contextlib.contextmanager
def collections_seen() -> Iterator[list[int]]:
    """The generations of the collections that start inside (gc.callbacks)."""
    seen: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(count)
    try:
        yield seen
    finally:
        gc.callbacks.remove(count)


def test_what_a_reading_section_kept_is_not_walked_when_the_collector_resumes() -> None:
    assert gc.isenabled()
    gc.collect()
    threshold = gc.get_threshold()
    gc.set_threshold(10_000, *threshold[1:])
    try:
        with collections_seen() as seen:
            with gc_paused(keeps=True):
                kept = [{"finding": i} for i in range(200_000)]  # a report just read
                assert not seen
            # Kept alive, in the oldest generation, unexamined: resuming set off no
            # collection, nor do 2,000 new lists (the young generation started empty).
            junk = [[] for _ in range(2_000)]
        assert seen == [] and len(kept) == 200_000 and len(junk) == 2_000
        assert gc.get_freeze_count() == 0  # nothing is left frozen
    finally:
        gc.set_threshold(*threshold)


def test_inside_a_scans_policy_the_frozen_heap_stays_frozen() -> None:
    with collector_for_scan():
        frozen = gc.get_freeze_count()
        with gc_paused(keeps=True):
            kept = [{"finding": i} for i in range(1_000)]
        assert gc.get_freeze_count() == frozen and len(kept) == 1_000
        assert gc.isenabled()


class _Node:
    me: object = None


def test_by_default_a_cycle_made_while_paused_is_freed_by_the_next_young_collection() -> None:
    gc.collect()
    with gc_paused():
        node = _Node()
        node.me = node
        alive = weakref.ref(node)
        del node
    junk = [[] for _ in range(2 * gc.get_threshold()[0])]
    assert alive() is None and junk
