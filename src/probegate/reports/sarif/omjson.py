"""sarif-om objects as plain JSON data, under the SARIF schema's property names.

``sarif-om`` is the object model generated from the OASIS schema; its attrs classes carry every
optional property with its default (``rank: -1``, ``kind: "fail"``, ``language: "en-US"``...).
:func:`to_json` writes each attribute under its schema name (``ruleId``, ``$schema``) and leaves
out what is unset or equal to the schema default: that noise is what a naive ``attr.asdict``
would write. Levels are always written, because a missing result level would fall back to the
rule's level rather than mean "warning".
"""

from __future__ import annotations

import functools
from typing import Any

import attr

from probegate.errors import ReportError

# Attributes written even when equal to the schema default (see the module docstring).
_ALWAYS_WRITE = frozenset({"level"})
_SCALARS = frozenset({str, int, float, bool})


@functools.cache
def _fields(cls: type) -> dict[str, tuple[str, Any]]:
    """attribute -> (schema name, default) of a sarif-om class, computed once per class."""
    out: dict[str, tuple[str, Any]] = {}
    for f in attr.fields(cls):
        default = f.default
        if isinstance(default, attr.Factory):  # type: ignore[arg-type]
            default = default.factory()
        elif default is attr.NOTHING:
            default = None
        if f.name in _ALWAYS_WRITE:
            default = attr.NOTHING
        out[f.name] = (f.metadata["schema_property_name"], default)
    return out


def to_json(obj: Any, memo: dict[int, Any] | None = None) -> Any:
    """A sarif-om object graph as plain JSON data.

    Plain dicts (property bags, ``partialFingerprints``) keep their keys as given; ``None``
    values are dropped everywhere. Scalars are passed through without a call (this runs about
    a hundred times per finding), and an object met twice (the shared taxonomy links) is
    converted once: ``memo`` maps ``id(obj)`` to its JSON for the duration of one call, so the
    JSON shares the object too (the schema check then shapes it once).
    """
    cls = type(obj)
    if cls in _SCALARS or obj is None:
        return obj
    if memo is None:
        memo = {}
    if cls is dict:
        return {
            k: v if type(v) in _SCALARS else to_json(v, memo)
            for k, v in obj.items()
            if v is not None
        }
    if cls is list or cls is tuple:
        return [v if type(v) in _SCALARS else to_json(v, memo) for v in obj]
    done = memo.get(id(obj))
    if done is not None:
        return done
    if not attr.has(cls):
        raise ReportError(f"cannot write {cls.__name__} to SARIF")
    fields = _fields(cls)
    out: dict[str, Any] = {}
    for name, value in vars(obj).items():  # sarif-om classes are plain (non-slotted) attrs
        if value is None:
            continue
        json_name, default = fields[name]
        if value == default:
            continue
        out[json_name] = value if type(value) in _SCALARS else to_json(value, memo)
    memo[id(obj)] = out
    return out
