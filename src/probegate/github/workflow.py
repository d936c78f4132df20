"""Workflow commands and step outputs: the two ways the Action talks to the runner.

A workflow command is a line ``::name k=v,...::message`` on stdout; its message and property
values are escaped so no text (an agent's words included) can end the line early or start a
command of its own. Step outputs are appended to ``$GITHUB_OUTPUT`` in the heredoc form, which
is safe for any value.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping

from probegate.terminal import strip_controls

_OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def escape_data(text: str) -> str:
    """Escape the message of a workflow command (what follows the second ``::``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow-command property value (``file=``, ``title=``...)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(
    name: str, message: str, properties: Mapping[str, str | int | None] | None = None
) -> str:
    """One ``::name k=v,...::message`` line (no newline), every value escaped.

    Values are cleaned first (no ANSI escapes, control or bidi override characters): the
    runner shows them as annotations, where U+202E could make a target's error read backwards.
    """
    props = ",".join(
        f"{key}={escape_property(strip_controls(str(value)))}"
        for key, value in (properties or {}).items()
        if value is not None
    )
    head = f"{name} {props}" if props else name
    return f"::{head}::{escape_data(strip_controls(message))}"


def stop_commands_token() -> str:
    """128 random bits: agent text cannot guess the marker that resumes command processing."""
    return secrets.token_hex(16)


def output_entry(name: str, value: str) -> str:
    """``name<<DELIM`` / value / ``DELIM``: the form that is safe for any value, newlines included.

    The delimiter is random and checked against the value, so a value cannot end the entry
    early and append outputs of its own.
    """
    if not _OUTPUT_NAME.fullmatch(name):
        raise ValueError(f"invalid output name {name!r}")
    while True:
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        if delimiter not in value:
            return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"
