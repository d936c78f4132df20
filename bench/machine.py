"""How fast this machine runs Python today: a fixed workload, timed, printed beside the figures.

The benches' targets are absolute (a stored report read in 1 s, the proxy's p50 within 2 ms)
or CPU-bound ratios, and machines of one class differ: on 2026-12-06 a fresh machine of this
project's class (2 cores, AMD EPYC at 2.0 GHz) read the 10,000-finding report in 2.3 s where
the machine of a few hours before took 0.82 to 0.98 s, with the same code; and one machine
differs from itself, as its neighbours' load comes and goes (this workload took 475 ms at the
start of one bench run and 290 to 300 ms after it, idle). A figure is read
against the machine that made it, so each run says how fast that machine was: the best of
three runs of a fixed piece of work made of what the benches spend their time on (the
interpreter's loop and calls, dicts and strings, JSON both ways, a pydantic validation).

Run: ``.venv/bin/python bench/machine.py`` (``make bench`` prints it first).
"""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic import BaseModel

ROUNDS = 3


class _Item(BaseModel):
    name: str
    tags: list[str]
    score: float
    meta: dict[str, int]


def _document() -> list[dict[str, Any]]:
    return [
        {
            "name": f"item-{i}",
            "tags": [f"t{i % 7}", f"u{i % 11}"],
            "score": i / 3,
            "meta": {"a": i, "b": i * 2},
        }
        for i in range(2_000)
    ]


def _work() -> int:
    document = _document()
    text = json.dumps(document)
    total = 0
    for _ in range(5):
        parsed = json.loads(text)
        total += len(json.dumps(parsed, sort_keys=True))
        total += sum(len(_Item.model_validate(d).tags) for d in parsed)
    counts: dict[str, int] = {}
    for i in range(300_000):
        key = f"k{i % 97}"
        counts[key] = counts.get(key, 0) + i % 5
    return total + sum(counts.values())


def reference_ms() -> float:
    """The fixed workload's time on this machine, in ms (the best of :data:`ROUNDS`)."""
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        _work()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def describe() -> str:
    """One line for a bench's output: the workload's time and the machine's CPU."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"host: the reference workload (bench/machine.py) took {reference_ms():.0f} ms "
        f"({model}); figures below are this machine's"
    )


def main() -> None:
    print(describe())


if __name__ == "__main__":
    main()
