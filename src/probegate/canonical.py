"""Canonical JSON: the one byte form that is signed, stored and compared.

Sorted keys, UTF-8 without ASCII escaping, no insignificant whitespace, and a trailing newline
only where a file is written. Floats are rounded where they are produced, never here, so the
same model always gives the same bytes.
"""

from __future__ import annotations

import json
from typing import Any


def canonical_bytes(obj: Any) -> bytes:
    """Serialise ``obj`` as canonical JSON bytes (no trailing newline)."""
    return json.dumps(
        obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode("utf-8")


def pretty_bytes(obj: Any) -> bytes:
    """Sorted, indented JSON for files people also read; still deterministic."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, indent=2, allow_nan=False)
    return (text + "\n").encode("utf-8")
