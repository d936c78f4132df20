"""The OASIS SARIF 2.1.0 schema, checked by ``jsonschema.Draft4Validator``.

An invalid document is a :class:`ReportError` before any file is written, never a file GitHub
rejects later. jsonschema makes every decision; two of its keywords are replaced through its
own extension point (``jsonschema.validators.extend``) because, as shipped, they make a large
scan's log take minutes:

- ``uniqueItems`` is quadratic for arrays of objects (thousands of rules); here it hashes each
  item's JSON value once (:func:`items_unique`), with jsonschema's notion of equality.
- ``items`` validates every item; here an item whose *shape* (:class:`Shapes`) equals an
  earlier item's in the same array is skipped, because it is valid exactly when that one is.
  A SARIF run has thousands of results and rules but a handful of shapes.

An item's property bag (a member whose schema is an open object: ``additionalProperties``
true, nothing required) is shaped by the entries its schema declares only (a bag's ``tags``):
no other entry, whatever its name or value, can make the item invalid (:meth:`Shapes.bags`).

A shape keeps everything this schema's keywords can tell apart -- object keys, array lengths,
which array items are equal, JSON types (an integer is not a float in draft 4), the values the
schema enumerates, how numbers compare with the schema's bounds, and, for a string where a
``pattern`` can apply, which patterns it matches -- and drops the rest (the text of a message,
a finding's id). Which patterns can apply is read off the schema: a pattern applies to strings
under the property names that lead to it (through ``$ref``, ``items``, ``anyOf``, ``oneOf``), or
under any name when it sits below ``additionalProperties``. A schema keyword the shape does not
account for makes the validator refuse to build, so a new schema cannot silently weaken it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator
from importlib import resources
from typing import Any

import jsonschema
import jsonschema.protocols
import jsonschema.validators

from probegate.errors import ReportError

SCHEMA_FILE = "data/sarif-schema-2.1.0.json"

# The keywords the SARIF schema uses, each of whose outcome a shape preserves, and annotations
# that never affect validity (``format`` is not asserted by Draft4Validator without a format
# checker, and none is given). Any other keyword makes :class:`Shapes` refuse the schema.
_SHAPED = frozenset(
    {
        "type", "enum", "pattern", "minimum", "maximum", "minItems", "uniqueItems", "items",
        "properties", "additionalProperties", "required", "anyOf", "oneOf", "$ref",
    }
)  # fmt: skip
_ANNOTATIONS = frozenset({"description", "default", "title", "id", "$schema", "format"})
# Subschema-valued keywords that keep an instance at the same property name.
_SAME_PLACE = ("items", "anyOf", "oneOf")
_ANY_KEY = "*"  # patterns under additionalProperties apply whatever the key
# What a property bag's schema may say and still leave its undeclared entries unconstrained.
_OPEN = frozenset({"type", "properties", "additionalProperties"}) | _ANNOTATIONS
_NO_BAGS: dict[str, frozenset[str]] = {}


@functools.cache
def sarif_schema() -> dict[str, Any]:
    """The bundled OASIS SARIF 2.1.0 schema (errata 01, JSON Schema draft-04)."""
    text = resources.files("probegate.reports").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


# --- uniqueItems ------------------------------------------------------------------------------


def json_key(value: Any) -> Any:
    """A hashable key equal for JSON-equal values (``1 == 1.0``, ``True != 1``), as jsonschema."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, dict):
        return ("object", frozenset((k, json_key(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("array", tuple(json_key(v) for v in value))
    return ("other", repr(value))


def _coarse_key(value: Any) -> Any:
    """A cheap key that JSON-equal values always share: an object's keys and top-level strings,
    an array's length. Only values sharing it need the full :func:`json_key`."""
    if isinstance(value, dict):
        strings = tuple(sorted((k, v) for k, v in value.items() if isinstance(v, str)))
        return ("object", frozenset(value), strings)
    if isinstance(value, list):
        return ("array", len(value))
    return json_key(value)


def items_unique(items: list[Any]) -> bool:
    """JSON Schema ``uniqueItems`` in about linear time."""
    if len(items) < 2:
        return True
    buckets: dict[Any, list[Any]] = {}
    for item in items:
        buckets.setdefault(_coarse_key(item), []).append(item)
    for group in buckets.values():
        if len(group) > 1:
            keys = [json_key(x) for x in group]
            if len(set(keys)) != len(keys):
                return False
    return True


def _unique_items(
    validator: Any, unique: Any, instance: Any, schema: Any
) -> Iterator[jsonschema.ValidationError]:
    if unique and validator.is_type(instance, "array") and not items_unique(instance):
        yield jsonschema.ValidationError(f"array of {len(instance)} items has non-unique elements")


# --- shapes -----------------------------------------------------------------------------------


class Shapes:
    """What of a JSON value the schema can see: values of one shape are valid alike."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self._root = schema
        self.enum_values: set[Any] = set()
        self._bounds: set[float] = set()
        self._patterns: dict[str, list[re.Pattern[str]]] = {}
        self._walk(schema, _ANY_KEY, set())
        self.bounds = tuple(sorted(self._bounds))
        anywhere = tuple(self._patterns.get(_ANY_KEY, ()))
        # Per property name, the patterns that can apply to a string under it. A string whose
        # property name is not known (an item of the array being checked) gets every pattern.
        self.patterns = {k: (*v, *anywhere) for k, v in self._patterns.items() if k != _ANY_KEY}
        self.anywhere = anywhere
        self.every = tuple(p for v in self._patterns.values() for p in v)
        self.enum_strings = frozenset(v for t, v in self.enum_values if t == "str")

    def _walk(self, node: Any, key: str, seen: set[tuple[int, str]]) -> None:
        """Collect enums, numeric bounds and, per property name, the patterns under it."""
        if not isinstance(node, dict) or (id(node), key) in seen:
            return
        seen.add((id(node), key))
        unknown = set(node) - _SHAPED - _ANNOTATIONS - {"definitions"}
        if unknown:
            raise NotImplementedError(f"schema keyword(s) {sorted(unknown)} are not shaped")
        for value in node.get("enum", ()):
            self.enum_values.add(json_key(value))
        for bound in ("minimum", "maximum"):
            if bound in node:
                self._bounds.add(node[bound])
        if "pattern" in node:
            self._patterns.setdefault(key, []).append(re.compile(node["pattern"]))
        if "$ref" in node:
            self._walk(self._resolve(node["$ref"]), key, seen)
        for name in _SAME_PLACE:
            sub = node.get(name)
            for s in sub if isinstance(sub, list) else [sub]:
                self._walk(s, key, seen)
        for name, sub in (node.get("properties") or {}).items():
            self._walk(sub, name, seen)
        self._walk(node.get("additionalProperties"), _ANY_KEY, seen)
        for sub in (node.get("definitions") or {}).values():
            self._walk(sub, _ANY_KEY, seen)  # also reached through $ref, with their keys

    def bags(self, items: Any) -> dict[str, frozenset[str]]:
        """The property bags of the objects ``items`` describes: each member whose schema is an
        open object, with the entry names that schema declares.

        Draft 4 checks an undeclared entry of an object whose ``additionalProperties`` is true
        (or absent) against nothing, and without ``required`` its presence is not checked
        either: only the declared entries can make the bag, so the item, invalid. Anything this
        cannot read as that (``anyOf``, ``oneOf``, a ``$ref`` with siblings that validate, a
        ``required``) has no bags: its items are shaped in full.
        """
        node = self._plain_ref(items)
        if (
            not isinstance(node, dict)
            or set(node) - {"type", "properties", "required", "additionalProperties"} - _ANNOTATIONS
        ):
            return _NO_BAGS
        found: dict[str, frozenset[str]] = {}
        for name, sub in (node.get("properties") or {}).items():
            bag = self._plain_ref(sub)
            if (
                isinstance(bag, dict)
                and not set(bag) - _OPEN
                and bag.get("type") == "object"
                and bag.get("additionalProperties", True) is True
            ):
                found[name] = frozenset(bag.get("properties") or ())
        return found

    def _plain_ref(self, node: Any) -> Any:
        """``node`` with ``$ref`` followed (draft 4 ignores a ``$ref``'s siblings; only
        annotations are accepted beside one here, so nothing is ignored that could validate)."""
        for _ in range(32):
            if not isinstance(node, dict) or "$ref" not in node:
                return node
            if set(node) - {"$ref"} - _ANNOTATIONS:
                return None
            node = self._resolve(node["$ref"])
        return None

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise NotImplementedError(f"remote $ref {ref!r}")
        node: Any = self._root
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def of(self, value: Any, key: str | None, memo: dict[int, Any]) -> Any:
        """The shape of ``value`` found under property ``key`` (list items keep their key).

        ``memo`` maps ``id()`` of objects already shaped to their shape: the builder shares
        objects (the taxonomy links every rule carries), and they are shaped once. It must not
        outlive one unchanged document. (This runs for every node of a large log: the common
        cases are inlined.)
        """
        kind = type(value)
        if kind is str:
            return self._string(value, self.every if key is None else self._of_key(key))
        if kind is dict:
            done = memo.get(id(value))
            if done is None:
                done = memo[id(value)] = self._object(value, memo)
            return done
        if kind is list:
            return self._array(value, key, memo)
        if kind is bool or value is None:
            return value
        if kind is int or kind is float:
            if ("number", value) in self.enum_values:  # json_key(value), inlined
                return (kind.__name__, value)
            return (kind.__name__, *[(value > b) - (value < b) for b in self.bounds])
        return ("other", repr(value))

    def item(self, value: Any, bags: dict[str, frozenset[str]], memo: dict[int, Any]) -> Any:
        """The shape of an item of the array being checked, whose property bags are ``bags``."""
        if type(value) is dict:
            return self._object(value, memo, bags)
        return self.of(value, None, memo)

    def _bag(self, value: dict[str, Any], declared: frozenset[str], memo: dict[int, Any]) -> Any:
        # Read by the declared entries (a bag's tags), not by the bag's own: a result's bag
        # holds a dozen entries and declares none.
        return ("bag", *[(k, self.of(value[k], k, memo)) for k in declared if k in value])

    def _of_key(self, key: str) -> tuple[re.Pattern[str], ...]:
        return self.patterns.get(key, self.anywhere)

    def _string(self, value: str, patterns: tuple[re.Pattern[str], ...]) -> Any:
        if value in self.enum_strings:
            return ("=", value)
        if not patterns:
            return "s"
        return ("s", *[p.search(value) is not None for p in patterns])

    def _array(self, value: list[Any], key: str | None, memo: dict[int, Any]) -> Any:
        patterns = self.every if key is None else self._of_key(key)
        if patterns:  # its strings' shapes depend on the key it is under: shaped each time
            return self._array_of(value, patterns, key, memo)
        # No pattern applies under this key, so none under its nested arrays either: the shape
        # is the same under every such key, and a list the builder shares (a rule's tags, its
        # relationships) is shaped once, as a shared object is. Under a key with patterns the
        # same list is shaped again, never looked up here.
        done = memo.get(id(value))
        if done is None:
            done = memo[id(value)] = self._array_of(value, patterns, key, memo)
        return done

    def _array_of(
        self,
        value: list[Any],
        patterns: tuple[re.Pattern[str], ...],
        key: str | None,
        memo: dict[int, Any],
    ) -> Any:
        strings = True
        shapes: list[Any] = []
        for v in value:
            kind = type(v)
            if kind is str:
                shapes.append(self._string(v, patterns))
                continue
            strings = False
            if kind is dict:  # of(v, key, memo), inlined: most items are objects
                done = memo.get(id(v))
                if done is None:
                    done = memo[id(v)] = self._object(v, memo)
                shapes.append(done)
            else:
                shapes.append(self.of(v, key, memo))
        if len(value) < 2 or len(set(shapes)) == len(shapes):
            return ("a", *shapes)
        if strings:  # equal strings are equal JSON: no key to build
            firsts: dict[Any, int] = {}
            return ("a=", *shapes, *[firsts.setdefault(v, i) for i, v in enumerate(value)])
        return ("a=", *shapes, *_equal_items(value, shapes))

    def _object(
        self,
        value: dict[str, Any],
        memo: dict[int, Any],
        bags: dict[str, frozenset[str]] = _NO_BAGS,
    ) -> Any:
        """``bags`` (:meth:`bags`): members whose dict value is shaped by its declared entries.
        An array's item passes them; its nested objects do not (their schema is not known)."""
        # Keys and their values' shapes alternate in one flat tuple ("o", k1, s1, k2, s2...):
        # as telling as a pair per key, without a tuple per key (most of a SARIF log is objects).
        out: list[Any] = ["o"]
        add = out.extend
        enum_strings, patterns = self.enum_strings, self.patterns
        plain = not self.anywhere  # no pattern applies to a string under any key
        # of(v, k, memo), inlined for the kinds a SARIF object mostly holds.
        for k, v in value.items():
            kind = type(v)
            if kind is str and plain and k not in patterns:
                add((k, ("=", v) if v in enum_strings else "s"))
            elif kind is dict:
                if k in bags:  # its undeclared entries cannot fail: not shaped, not memoised
                    add((k, self._bag(v, bags[k], memo)))
                    continue
                done = memo.get(id(v))
                if done is None:
                    done = memo[id(v)] = self._object(v, memo)
                add((k, done))
            elif kind is list:
                add((k, self._array(v, k, memo)))
            else:
                add((k, self.of(v, k, memo)))
        return tuple(out)


def _equal_items(items: list[Any], shapes: list[Any]) -> list[int]:
    """For each item, the index of the first item equal to it (what uniqueItems decides).
    Items of different shapes differ, so an item's key is its shape and its JSON value."""
    firsts: dict[Any, int] = {}
    pairs = enumerate(zip(shapes, items, strict=True))
    return [firsts.setdefault((s, json_key(v)), i) for i, (s, v) in pairs]


@functools.cache
def _shapes() -> Shapes:
    return Shapes(sarif_schema())


_DRAFT4_ITEMS = jsonschema.Draft4Validator.VALIDATORS["items"]


def _items_by_shape(
    validator: Any, items: Any, instance: Any, schema: Any
) -> Iterator[jsonschema.ValidationError]:
    """``items``, validating one item per shape (see the module docstring)."""
    if not validator.is_type(instance, "array") or len(instance) < 2 or isinstance(items, list):
        yield from _DRAFT4_ITEMS(validator, items, instance, schema)
        return
    shapes = _shapes()
    bags = shapes.bags(items)
    seen: set[Any] = set()
    memo: dict[int, Any] = {}
    for index, item in enumerate(instance):
        shape = shapes.item(item, bags, memo)
        if shape in seen:
            continue
        seen.add(shape)
        yield from validator.descend(item, items, path=index)


_SarifValidator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft4Validator, {"uniqueItems": _unique_items, "items": _items_by_shape}
)


@functools.cache
def sarif_validator() -> jsonschema.protocols.Validator:
    """``jsonschema.Draft4Validator`` on the OASIS schema, with the two keywords above."""
    _shapes()  # refuses a schema whose keywords the shapes do not cover
    validator: jsonschema.protocols.Validator = _SarifValidator(sarif_schema())
    return validator


# Where a run's rules and results are in the log, and the schema of one of each.
RULES = ("runs/0/tool/driver/rules", ("toolComponent", "rules"))
RESULTS = ("runs/0/results", ("run", "results"))


def validate_items(
    items: Iterable[Any], place: tuple[str, tuple[str, str]], unique_by: str | None = None
) -> Iterator[Any]:
    """Each item of a list of the log (``place``: :data:`RULES` or :data:`RESULTS`), checked
    against the schema's items there as it comes (one per shape, as :func:`_items_by_shape`
    checks a list's items), then passed on: a streamed log's lists are checked as the whole
    log's would be, without being held together. ``unique_by``: a key whose values differ
    between the items, which makes them unique (a list the schema wants ``uniqueItems``)."""
    where, (definition, name) = place
    schema = sarif_schema()["definitions"][definition]["properties"][name]
    validator = _items_validator(definition, name)
    shapes = _shapes()
    bags = shapes.bags(schema["items"])
    seen: set[Any] = set()
    keys: set[Any] = set()
    for index, item in enumerate(items):
        shape = shapes.item(item, bags, {})
        if shape not in seen:
            errors = list(validator.iter_errors(item))
            if errors:
                _refuse(errors, f"{where}/{index}/")
            seen.add(shape)
        if unique_by is not None:
            key = item.get(unique_by) if isinstance(item, dict) else None
            if key is None or key in keys:
                raise ReportError(f"SARIF output: {where}/{index} has non-unique {unique_by}")
            keys.add(key)
        yield item


@functools.cache
def _items_validator(definition: str, name: str) -> jsonschema.protocols.Validator:
    """:func:`sarif_validator` on one item of a list (its ``$ref`` read in the whole schema)."""
    items = sarif_schema()["definitions"][definition]["properties"][name]["items"]
    validator: jsonschema.protocols.Validator = sarif_validator().evolve(schema=items)
    return validator


def _refuse(errors: list[jsonschema.ValidationError], prefix: str = "") -> None:
    first = min(errors, key=lambda e: [(isinstance(p, str), p) for p in e.absolute_path])
    where = prefix + "/".join(str(p) for p in first.absolute_path) or "<root>"
    raise ReportError(
        f"SARIF output would be invalid against the OASIS schema; first error at {where}: "
        f"{first.message[:300]}"
    )


def validate(document: dict[str, Any]) -> None:
    """Raise :class:`ReportError` unless ``document`` is valid against the OASIS schema."""
    errors = list(sarif_validator().iter_errors(document))
    if errors:
        _refuse(errors)
