"""``--shard K/N``: which of N jobs of one scan this is (docs/github-action.md).

The flag, the plan that splits the probes and ``probegate merge`` that joins the reports all
read the ``K/N`` text through :func:`parse_shard`, so they agree on what a valid shard is.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_SHAPE = re.compile(r"([0-9]{1,6})/([0-9]{1,6})")


class Shard(NamedTuple):
    """Job ``number`` (1-based) of ``total``."""

    number: int
    total: int

    def __str__(self) -> str:
        return f"{self.number}/{self.total}"


def parse_shard(text: str) -> Shard:
    """``"2/4"`` -> ``Shard(2, 4)``; a :class:`ValueError` saying what is wrong otherwise."""
    match = _SHAPE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"--shard takes K/N, e.g. 1/4, got {text!r}")
    shard = Shard(int(match.group(1)), int(match.group(2)))
    if not 1 <= shard.number <= shard.total:
        raise ValueError(f"--shard K/N needs 1 <= K <= N, got {text!r}")
    return shard
