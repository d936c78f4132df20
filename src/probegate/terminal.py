"""Make untrusted text safe for a terminal: no escape sequences, no control characters."""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b.")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """Strip ANSI/OSC escapes and control characters; keep newlines and tabs."""
    return _CONTROL.sub("", _ANSI.sub("", text))
