"""The terminal: untrusted text made safe for it, and colour only where it helps.

Everything an agent says is printed through :func:`clean` (or :func:`one_line`), so a reply
cannot move the cursor, retitle the window, hide text, make a line read backwards (bidi
controls such as U+202E are dropped) or start a GitHub workflow command in a CI log; ``--json``
output goes through :func:`json_text`. The character set is defined here once, and the
document emitters (probegate.reports.escape) strip the same one.

Colour is used only on a terminal, never in a pipe or a CI log file, and never when
``NO_COLOR`` is set (https://no-color.org) or ``TERM`` is ``dumb``.
"""

from __future__ import annotations

import os
import re
from typing import TextIO

# ANSI/VT escape sequences: CSI (ESC [ ... final), OSC (ESC ] ... up to BEL or ESC \, or to the
# end when unterminated, as a terminal would swallow it), the two-byte forms (ESC + one of @-Z \
# ] ^ _) and a lone ESC. The C1 CSI (U+009B) is one of the control characters below.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[@-Z\\^_]"
    r"|\x1b"
)

# What a terminal or a log acts on, or what makes text read other than it is: the C0 controls
# but TAB and LF (CR returns to the line start and hides what came before it; ESC starts every
# escape sequence), DEL, the C1 block (U+009B is a CSI of its own, U+0085 a line break), the
# bidirectional controls and marks ("Trojan Source": U+202E makes a line read backwards) and
# lone surrogates (half a character: no encoder writes one). One class, so every sink strips
# the same set (probegate.reports.escape builds its fast paths on it).
CONTROL_CHARS = (
    r"\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
)
_CONTROL = re.compile(f"[{CONTROL_CHARS}]")

# A line that starts with "::" (after blanks, which the runner trims) is a GitHub workflow command.
_COMMAND_LINE = re.compile(r"^(\s*)::", re.MULTILINE)

# In JSON text these can only stand inside strings (JSON's own syntax is ASCII, and encoders
# escape C0 controls themselves), where their \u escape is the same character.
JSON_UNSAFE_CHARS = (
    r"\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff"
)
_JSON_UNSAFE = re.compile(f"[{JSON_UNSAFE_CHARS}]")


def strip_controls(text: str) -> str:
    """``text`` without ANSI escapes, control characters, bidi controls or lone surrogates.

    TAB and LF stay; every other character the terminal or a log would act on is dropped.
    """
    if _CONTROL.search(text) is None:  # the common case: one scan, nothing to change
        return text
    return _CONTROL.sub("", _ANSI.sub("", text))


def defuse_commands(text: str) -> str:
    """A backslash before ``::`` that starts a line (after blanks, as the runner trims).

    GitHub reads a log line starting with ``::`` as a workflow command (``::error::``,
    ``::add-mask::``, ``::stop-commands::``), and anything probegate prints may be such a log
    (``probegate scan`` in a workflow's ``run:`` step, a CI reporter printing JUnit text), so
    untrusted text never puts ``::`` at the start of a line.
    """
    if "::" not in text:
        return text
    return _COMMAND_LINE.sub(r"\1\\::", text)


def clean(text: str) -> str:
    """Untrusted text for the terminal or a CI log: :func:`strip_controls`, then no line of it
    starts a workflow command (:func:`defuse_commands`). Newlines and tabs stay."""
    return defuse_commands(strip_controls(text))


def one_line(text: str, limit: int = 120) -> str:
    """:func:`clean` text on one line: every run of whitespace (newlines too) one space, at most
    ``limit`` characters."""
    flat = " ".join(strip_controls(text).split())
    flat = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    return defuse_commands(flat)


def json_text(text: str) -> str:
    """JSON text, as an encoder wrote it, fit for a terminal: every character :func:`clean`
    would drop that the encoder left raw (DEL, C1, bidi controls, lone surrogates; and U+2028,
    U+2029) is written as its ``\\uXXXX`` escape, so a parser reads the very same value.

    ``--json`` output is for machines, but it lands in terminals and CI logs all the same.
    """
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


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
