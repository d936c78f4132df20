"""SARIF objects as plain JSON data, named and defaulted by ``sarif-om``.

``sarif-om`` is the object model generated from the OASIS schema; its attrs classes carry every
optional property with its default (``rank: -1``, ``kind: "fail"``, ``language: "en-US"``...).
:func:`node` writes one object of such a class straight as JSON: each keyword argument, named
as the class's attribute, lands under its schema name (``ruleId``, ``$schema``), and what is
unset or equal to the schema default is left out: that noise is what a naive ``attr.asdict``
would write. Levels are always written, because a missing result level would fall back to the
rule's level rather than mean "warning".

The attrs objects themselves are never built: building ten thousand results and rules as
objects and then walking the graph into JSON took as long as everything else in the SARIF
emitter together. Nor is ``sarif-om`` imported to render: creating its hundred attrs classes
took 40-60 ms of every SARIF render. The names and defaults of the classes used here are read
from :data:`FIELDS_FILE`, which a test holds equal to what ``sarif-om`` says (and rewrites
with ``PROBEGATE_UPDATE_GOLDEN=1``), so the classes are still the one source of both; an
attribute a class does not have is a ``TypeError``, as its constructor would raise.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from importlib import resources
from typing import Any

from probegate.errors import ReportError

# Per sarif-om class (by name): each attribute's schema name, and the defaults that are not
# None (None is never written either).
FIELDS_FILE = "data/sarif-om-fields.json"

# Attributes written even when equal to the schema default (see the module docstring).
_ALWAYS_WRITE = frozenset({"level"})
_SCALARS = frozenset({str, int, float, bool})


@functools.cache
def om_fields() -> dict[str, dict[str, dict[str, Any]]]:
    """The bundled names and defaults of the sarif-om classes :func:`node` writes."""
    text = resources.files("probegate.reports").joinpath(FIELDS_FILE).read_text(encoding="utf-8")
    fields: dict[str, dict[str, dict[str, Any]]] = json.loads(text)
    return fields


@functools.cache
def _fields(cls: str) -> tuple[dict[str, str], dict[str, Any]]:
    """A sarif-om class's attribute -> schema name, and attribute -> default for the defaults
    that are left out, read once per class."""
    entry = om_fields().get(cls)
    if entry is None:
        raise TypeError(f"no sarif-om class {cls!r} in {FIELDS_FILE}")
    defaults = {k: v for k, v in entry["defaults"].items() if k not in _ALWAYS_WRITE}
    return entry["names"], defaults


def node(cls: str, /, **attributes: Any) -> dict[str, Any]:
    """The JSON object of the sarif-om class named ``cls`` with these attributes (already JSON
    values: other nodes, lists of them, :func:`plain` property bags, scalars)."""
    names, defaults = _fields(cls)
    out: dict[str, Any] = {}
    for name, value in attributes.items():
        json_name = names.get(name)
        if json_name is None:
            raise TypeError(f"{cls} has no attribute {name!r}")
        if value is not None and (name not in defaults or value != defaults[name]):
            out[json_name] = value
    return out


def plain(value: Any) -> Any:
    """A property bag (or any value in one) as JSON data: ``None`` values dropped everywhere,
    tuples as lists; anything but JSON data (an enum, a model) is a :class:`ReportError`."""
    cls = type(value)
    if cls in _SCALARS or value is None:
        return value
    if cls is dict:
        return {
            k: v if type(v) in _SCALARS else plain(v) for k, v in value.items() if v is not None
        }
    if cls is list or cls is tuple:
        return [v if type(v) in _SCALARS else plain(v) for v in value]
    raise ReportError(f"cannot write {cls.__name__} to SARIF")


class Shared:
    """Objects many rules or results carry (a location, a taxon link, a level), made once per
    document: the JSON shares them, so the schema check shapes each once. Not kept between
    documents, so a caller that edits one document's JSON cannot change the next one."""

    def __init__(self) -> None:
        self._made: dict[tuple[Any, ...], Any] = {}

    def get(self, make: Callable[..., Any], *args: Any) -> Any:
        """``make(*args)``, made on the first call with these arguments."""
        key = (make, *args)
        try:
            return self._made[key]
        except KeyError:
            made = self._made[key] = make(*args)
            return made
