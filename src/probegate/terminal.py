"""The terminal: untrusted text made safe for it, and colour only where it helps.

Everything an agent says is printed through :func:`clean` (or :func:`one_line`), so a reply
cannot move the cursor, retitle the window, hide text or make a line read backwards (bidi
controls such as U+202E are dropped). Colour is used only on a terminal, never in a pipe or a
CI log file, and never when ``NO_COLOR`` is set (https://no-color.org) or ``TERM`` is ``dumb``.
"""

from __future__ import annotations

import os
import re
from typing import TextIO

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b.")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> str:
    """Strip ANSI/OSC escapes, control and bidi characters; keep newlines and tabs."""
    return _CONTROL.sub("", _ANSI.sub("", text))


def one_line(text: str, limit: int = 120) -> str:
    """:func:`clean`, every run of whitespace (newlines too) one space, at most ``limit`` chars."""
    flat = " ".join(clean(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def colour_enabled(stream: TextIO) -> bool:
    """Colour for this stream: a terminal, ``NO_COLOR`` unset or empty, ``TERM`` not dumb."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


class Style:
    """Colours for one stream, or plain text when :func:`colour_enabled` says no."""

    def __init__(self, stream: TextIO, *, enabled: bool | None = None) -> None:
        self.enabled = colour_enabled(stream) if enabled is None else enabled

    def __call__(self, text: str, *names: str) -> str:
        if not self.enabled or not names:
            return text
        codes = ";".join(_CODES[n] for n in names)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def severity(self, text: str, severity: str) -> str:
        """``text`` in its severity's colour (critical and high red, medium yellow)."""
        names = {
            "critical": ("bold", "red"),
            "high": ("red",),
            "medium": ("yellow",),
            "low": ("cyan",),
        }.get(severity, ())
        return self(text, *names)
