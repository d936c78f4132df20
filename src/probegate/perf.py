"""Performance helpers shared by the scan, the emitters, the report loader and the comparison."""

from __future__ import annotations

import contextlib
import functools
import gc
import types
import typing
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel


@contextlib.contextmanager
def gc_paused(*, keeps: bool = False) -> Iterator[None]:
    """Pause the cyclic garbage collector while an emitter allocates.

    Rendering a large scan allocates millions of short-lived, acyclic objects; with a report
    of ten thousand findings in memory every collection rescans it, which doubled render time.
    Reference counting still frees everything; the collector resumes (if it was on) after.

    ``keeps``: the section builds something that lives on and makes no reference cycle (a
    report read from a file: models/stored.py, whose test holds it to no cycle). What is
    young when it ends then goes to the oldest generation unexamined (``gc.freeze`` then
    ``gc.unfreeze``, nothing left frozen). Otherwise it stays young, and the first allocation
    after resuming walks all of it: 90 ms of a 1 s read of a 10,000-finding report
    (bench/bench_stored.py). Not for sections that make cycles, and so not the default: the
    move does not count toward CPython's trigger for a full collection, so a cycle moved
    there is freed only when one comes, and in a process that made all its cycles in such
    sections it might not come. Inside a scan, whose frozen heap ``collector_for_scan`` keeps
    out of sight, the young objects stay young: an unfreeze would hand that heap back to the
    collector.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if keeps and not gc.get_freeze_count():
            gc.freeze()  # everything young to the oldest generation, unexamined
            gc.unfreeze()
        if was_enabled:
            gc.enable()


# Allocations of container objects between two young collections while a scan runs (CPython's
# default is 700). See ``collector_for_scan``.
SCAN_YOUNG_THRESHOLD = 50_000


@contextlib.contextmanager
def collector_for_scan() -> Iterator[None]:
    """Keep the cyclic garbage collector off what lives for the whole scan, and collect less often.

    A scan keeps every attempt it ran, on top of a heap of modules, model classes and the plan
    that lives as long as it does. With CPython's defaults the collector walked all of it again
    in every full collection: 0.6 s of collecting in a 4 s in-process demo scan, 0.15-0.22 s
    with this (measured with ``gc.callbacks``), and more as a long scan grows. ``gc.freeze``
    moves what exists when the scan starts out of the collector's sight; a higher young
    threshold means fewer young and middle collections, and so far fewer full ones. Unlike
    ``gc_paused`` the collector stays on, so cycles a long scan makes (an exception's
    traceback, a dropped connection) are still freed. Both are undone on exit, so a process
    that runs many scans (the test suite) keeps nothing frozen.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(SCAN_YOUNG_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


# One set per distinct set of given field names, for the whole process: a few dozen sets.
_SHARED_SETS: dict[frozenset[str], set[str]] = {}
# The set each kind of model was given last.
_LAST_SETS: dict[type[BaseModel], set[str]] = {}


def share_field_sets(model: BaseModel, skip: Iterable[str] = ()) -> None:
    """Give ``model`` and every model inside it (but those under ``skip``) the one shared set
    of their given field names instead of a set each.

    pydantic keeps such a set per instance, 2 KB for a finding: nearly half of a validated
    report, and half of a comparison's finding references. It changes a model's set in place
    only when a field is assigned, which no code does to a report's models or a comparison's
    (they are changed by ``model_copy``, which copies the set): so the shared sets are
    read-only, and :class:`_SharedNames` says so loudly to code that tries.
    """
    names = model.__pydantic_fields_set__
    kind = type(model)
    shared = _LAST_SETS.get(kind)
    if shared is None or shared != names:  # most models of a kind were given the same fields
        key = frozenset(names)
        shared = _SHARED_SETS.get(key)
        if shared is None:
            shared = _SHARED_SETS.setdefault(key, _SharedNames(names))
        _LAST_SETS[kind] = shared
    object.__setattr__(model, "__pydantic_fields_set__", shared)
    values = model.__dict__
    for name in _model_fields(kind):
        if name in skip:
            continue
        value = values[name]
        if value is None:
            continue
        if type(value) is list:
            for item in value:
                share_field_sets(item)
        elif type(value) is dict:
            for item in value.values():
                share_field_sets(item)
        else:
            share_field_sets(value)


class _SharedNames(set[str]):
    """A set of field names several models share: read-only, copied as a plain set (which
    ``model_copy`` does before it adds the names it updates)."""

    def __copy__(self) -> set[str]:
        return set(self)

    def _read_only(self, *args: object) -> None:
        raise TypeError("a report's models are read-only: change them with model_copy")

    add = discard = remove = pop = clear = update = _read_only  # type: ignore[assignment]
    difference_update = intersection_update = symmetric_difference_update = _read_only
    __ior__ = __iand__ = __isub__ = __ixor__ = _read_only  # type: ignore[assignment]


@functools.cache
def _model_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of ``model`` that can hold models (directly, in a list or in a dict)."""
    return tuple(
        name for name, field in model.model_fields.items() if _holds_models(field.annotation)
    )


def _holds_models(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        return any(_holds_models(arg) for arg in typing.get_args(annotation))
    return False
