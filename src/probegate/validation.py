"""A pydantic ``ValidationError`` as the one line a user reads: where, and what is wrong.

Outside data (configs, probes, suites, suppression files, stored reports, a guard's or a
judge's answer) is validated into models at the edge; when it does not fit, the user gets the
first problem as ``field.path[2].name: reason (and N more)``: the full path of the field,
list indices in brackets, and pydantic's reason without its ``Value error,`` prefix. Every
reader words it this way, so the same mistake reads the same in every file
(docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError


@dataclass(frozen=True)
class Problem:
    """The first error of a :class:`ValidationError`, taken apart for callers that reword it."""

    path: str  # "" when the document itself is wrong
    reason: str
    kind: str  # pydantic's error type, e.g. "extra_forbidden", "missing"
    value: Any  # the offending input
    more: int  # how many further errors the document has

    def line(self, top: str = "(top level)") -> str:
        """``path: reason (and N more)``; ``top`` names the document when the path is empty."""
        more = f" (and {self.more} more)" if self.more else ""
        return f"{self.path or top}: {self.reason}{more}"


def first_problem(
    exc: ValidationError, *, data: Any = None, hidden: Collection[str] = ()
) -> Problem:
    """The first error of ``exc``.

    ``data`` is the validated input: with it, an item of a list whose entries have a ``name``
    is shown with that name (``scenarios[2] ('refund')``), which says more than the index.
    ``hidden`` are location parts that are not fields (the branch labels of a union).
    """
    errors = exc.errors()
    first = errors[0]
    reason = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        reason = "unknown field"
    return Problem(
        path=field_path(first["loc"], data=data, hidden=hidden),
        reason=reason,
        kind=str(first["type"]),
        value=first.get("input"),
        more=len(errors) - 1,
    )


def describe(
    exc: ValidationError,
    *,
    data: Any = None,
    hidden: Collection[str] = (),
    top: str = "(top level)",
) -> str:
    """:func:`first_problem` as its one line."""
    return first_problem(exc, data=data, hidden=hidden).line(top)


def field_path(
    loc: tuple[int | str, ...], *, data: Any = None, hidden: Collection[str] = ()
) -> str:
    """``("scenarios", 2, "input")`` -> ``scenarios[2].input`` (with the item's name if known)."""
    out = ""
    node: Any = data
    for key in loc:
        if isinstance(key, str) and key in hidden:
            continue
        if isinstance(key, int):
            out += f"[{key}]"
            item = node[key] if isinstance(node, list) and 0 <= key < len(node) else None
            name = item.get("name") if isinstance(item, dict) else None
            if isinstance(name, str) and name:
                out += f" ({name!r})"
            node = item
        else:
            out += f".{key}" if out else str(key)
            node = node.get(key) if isinstance(node, dict) else None
    return out
