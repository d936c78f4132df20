"""A pydantic ``ValidationError`` as the one line a user reads: where, and what is wrong.

Outside data (configs, probes, suites, suppression files, stored reports, a guard's or a
judge's answer) is validated into models at the edge; when it does not fit, the user gets the
first problem as ``field.path[2].name: reason (and N more)``: the full path of the field,
list indices in brackets, and pydantic's reason without its ``Value error,`` prefix. Every
reader words it this way, so the same mistake reads the same in every file
(docs/architecture.md).
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails


@dataclass(frozen=True)
class Problem:
    """The first error of a :class:`ValidationError`, taken apart for callers that reword it."""

    path: str  # "" when the document itself is wrong
    reason: str
    kind: str  # pydantic's error type, e.g. "extra_forbidden", "missing"
    value: Any  # the offending input
    more: int  # how many further errors the document has
    loc: tuple[int | str, ...] = ()  # pydantic's location, for callers that reword the path

    def line(self, top: str = "(top level)") -> str:
        """``path: reason (and N more)``; ``top`` names the document when the path is empty."""
        more = f" (and {self.more} more)" if self.more else ""
        return f"{self.path or top}: {self.reason}{more}"


def closest(word: str, options: Collection[str]) -> str | None:
    """The one of ``options`` a mistyped ``word`` most likely meant, if any is close enough.

    Compared without case (``psot`` meant ``POST``, ``asi1`` meant ``ASI01``); the option is
    returned as it is spelled."""
    spelled = {option.lower(): option for option in sorted(options, reverse=True)}
    close = difflib.get_close_matches(word.lower(), sorted(spelled), n=1, cutoff=0.6)
    return spelled[close[0]] if close else None


def did_you_mean(word: str, options: Collection[str]) -> str:
    """`` (did you mean 'mode'?)`` for the closest of ``options`` to a mistyped ``word``."""
    close = closest(word, options)
    return f" (did you mean {close!r}?)" if close else ""


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds, through ``X | None``, ``list[X]`` and ``dict[str, X]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is None and not isinstance(annotation, types.UnionType):
        return None
    for arg in reversed(typing.get_args(annotation)):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def fields_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> frozenset[str]:
    """The field names of the model that holds ``loc``'s last key (empty when unknown)."""
    current: type[BaseModel] | None = model
    for key in loc[:-1]:
        if current is None:
            return frozenset()
        if isinstance(key, int):
            continue
        field = current.model_fields.get(key)
        current = _model_in(field.annotation) if field is not None else None
    return frozenset(current.model_fields) if current is not None else frozenset()


# The quoted choices in pydantic's "Input should be 'fast', 'smart' or 'full'".
_CHOICE = re.compile(r"'((?:[^'\\]|\\.)*)'")


def _reason(error: ErrorDetails) -> str:
    """pydantic's message, with a did-you-mean when a choice was mistyped (``mode: fsat``)."""
    reason = str(error["msg"]).removeprefix("Value error, ")
    given = error.get("input")
    if error["type"] in ("literal_error", "enum") and isinstance(given, str):
        expected = str((error.get("ctx") or {}).get("expected", ""))
        reason += did_you_mean(given, _CHOICE.findall(expected))
    return reason


def first_problem(
    exc: ValidationError,
    *,
    data: Any = None,
    hidden: Collection[str] = (),
    model: type[BaseModel] | None = None,
) -> Problem:
    """The first error of ``exc``.

    ``data`` is the validated input: with it, an item of a list whose entries have a ``name``
    is shown with that name (``scenarios[2] ('refund')``), which says more than the index.
    ``hidden`` are location parts that are not fields (the branch labels of a union).
    ``model`` is the model validated: with it, an unknown field gets a did-you-mean.
    """
    errors = exc.errors()
    # A mistyped key shows twice: as an unknown field and as the missing one it meant. The
    # unknown field, with its did-you-mean, is the one that says what to fix.
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    reason = _reason(first)
    if first["type"] == "extra_forbidden":
        reason = "unknown field"
        loc = tuple(k for k in first["loc"] if not (isinstance(k, str) and k in hidden))
        if model is not None and loc and isinstance(loc[-1], str):
            reason += did_you_mean(loc[-1], fields_at(model, loc))
    return Problem(
        path=field_path(first["loc"], data=data, hidden=hidden),
        reason=reason,
        kind=str(first["type"]),
        value=first.get("input"),
        more=len(errors) - 1,
        loc=tuple(first["loc"]),
    )


def all_problems(
    exc: ValidationError,
    *,
    data: Any = None,
    hidden: Collection[str] = (),
    fields: Callable[[tuple[int | str, ...]], Collection[str]] | None = None,
) -> list[Problem]:
    """Every error of ``exc`` in order, for a reader that reports them all in one run.

    ``data`` and ``hidden`` as for :func:`first_problem`; ``fields(loc)`` names the fields that
    may stand where ``loc``'s last key stands, for an unknown field's did-you-mean. A missing
    field that a sibling unknown field's did-you-mean names is left out: it is the same mistake
    (``nme: x`` is no ``name``), said once, where it can be fixed. ``more`` is 0 in each.
    """
    errors = exc.errors()
    out: list[Problem] = []
    meant: set[tuple[int | str, ...]] = set()
    for error in errors:
        loc = tuple(error["loc"])
        reason = _reason(error)
        if error["type"] == "extra_forbidden":
            reason = "unknown field"
            bare = tuple(k for k in loc if not (isinstance(k, str) and k in hidden))
            if fields is not None and bare and isinstance(bare[-1], str):
                guess = closest(bare[-1], fields(bare))
                if guess is not None:
                    reason += f" (did you mean {guess!r}?)"
                    meant.add((*loc[:-1], guess))
        out.append(
            Problem(
                path=field_path(loc, data=data, hidden=hidden),
                reason=reason,
                kind=str(error["type"]),
                value=error.get("input"),
                more=0,
                loc=loc,
            )
        )
    return [p for p in out if not (p.kind == "missing" and p.loc in meant)]


def describe(
    exc: ValidationError,
    *,
    data: Any = None,
    hidden: Collection[str] = (),
    top: str = "(top level)",
    model: type[BaseModel] | None = None,
) -> str:
    """:func:`first_problem` as its one line."""
    return first_problem(exc, data=data, hidden=hidden, model=model).line(top)


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
