"""Canonical JSON: the one byte form that is signed, stored and compared.

Sorted keys, UTF-8 without ASCII escaping, no insignificant whitespace differences between
runs. Floats are rounded where they are produced, never here, so the same model always gives
the same bytes.

Files use a line layout rather than a full indent: one top-level field per line and one item of
each top-level list (each finding, each probe result) per line. It diffs well when a baseline
is committed, and it is written by the C encoder: a fully indented dump goes through the
pure-Python encoder and took four times as long on a 10,000-finding report.
"""

from __future__ import annotations

import json
from typing import Any

# No cycle check: what is written is JSON data (model dumps, emitters' documents), which
# cannot hold a cycle, and tracking every container on the way took a tenth of the encoding
# (a cycle would still stop the encoder, at its recursion limit).
_ENCODER = json.JSONEncoder(
    sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
)


def canonical_bytes(obj: Any) -> bytes:
    """Serialise ``obj`` as canonical JSON bytes (no trailing newline): what is signed."""
    return _ENCODER.encode(obj).encode("utf-8")


def pretty_bytes(obj: Any) -> bytes:
    """The file layout: canonical values, one top-level field and list item per line."""
    if isinstance(obj, list) and obj:
        items = ",\n".join("  " + _ENCODER.encode(item) for item in obj)
        return ("[\n" + items + "\n]\n").encode("utf-8")
    if not isinstance(obj, dict) or not obj:
        return (_ENCODER.encode(obj) + "\n").encode("utf-8")
    lines: list[str] = []
    for key in sorted(obj):
        value = obj[key]
        name = _ENCODER.encode(key)
        if isinstance(value, list) and value:
            items = ",\n".join("    " + _ENCODER.encode(item) for item in value)
            lines.append(f"  {name}: [\n{items}\n  ]")
        else:
            lines.append(f"  {name}: {_ENCODER.encode(value)}")
    return ("{\n" + ",\n".join(lines) + "\n}\n").encode("utf-8")
