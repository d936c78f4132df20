"""Reading the user's files and writing ours: one message per problem, no torn file.

Every file probegate reads from the user (a config, a suppression file, a probe, a scenario
suite, a stored report) goes through :func:`read_bytes`, :func:`read_text` or
:func:`read_yaml`, so an unreadable path is one line naming the file and the reason, raised as
the caller's own :class:`~probegate.errors.UsageError` subclass (exit 2). Every file probegate
writes for the user (reports, baselines, recordings, comparisons) goes through
:func:`write_atomic`: written beside its destination and renamed over it, so a crash or a full
disk never leaves half a report that the next run would read (docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import yaml

from probegate.errors import UsageError

# libyaml's safe loader parses several times faster; the pure-Python one is the fallback.
_SafeLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_bytes(path: Path, *, what: str = "file", error: type[UsageError] = UsageError) -> bytes:
    """The file's bytes, or one ``error`` line: ``PATH: <what> not found``, or why not."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not a {what}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None


def read_text(path: Path, *, what: str = "file", error: type[UsageError] = UsageError) -> str:
    """:func:`read_bytes` decoded as UTF-8; text in another encoding is one ``error`` line."""
    data = read_bytes(path, what=what, error=error)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{path}: not UTF-8 text") from None


def parse_yaml(text: str, *, source: str, error: type[UsageError] = UsageError) -> Any:
    """YAML text -> plain data (safe loader), or ``SOURCE: invalid YAML ...`` with the place.

    The message names a line of the file (a problem at the very end is placed on the last line,
    never on one after it), says what the parser expected, and hints at the usual cause.
    """
    try:
        return yaml.load(text, Loader=_SafeLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise error(f"{source}: {yaml_problem(exc, text)}") from None


# What a parser's complaint usually means, for the people who write configs and probes by hand.
_YAML_HINTS = (
    ("cannot start any token", "\t", "YAML indents with spaces, not tabs"),
    ("tab character", "", "YAML indents with spaces, not tabs"),
    (
        "mapping values are not allowed",
        "",
        "a ': ' inside a value (put the value in quotes) or a line indented too far",
    ),
    ("did not find expected key", "", "check this line's indentation"),
    ("expected '-' indicator", "", "a list item and a key at the same indentation"),
    ("expected node content", "flow", "a '[' or '{' is opened and never closed"),
    ("end of stream", "quoted scalar", "a quote is opened and never closed"),
    ("undefined alias", "", "'*' starts an alias in YAML: put the value in quotes"),
)


def yaml_problem(exc: yaml.YAMLError, text: str) -> str:
    """``invalid YAML: <what> (line 3, column 2), <while what>: <hint>``."""
    lines = text.splitlines() or [""]
    problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
    mark = getattr(exc, "problem_mark", None)
    where = ""
    if mark is not None:
        line, column = mark.line + 1, mark.column + 1
        if line > len(lines):  # the parser ran off the end: the last line is where it broke
            line, column = len(lines), len(lines[-1]) + 1
            where = f" (at the end of the file, line {line})"
        else:
            where = f" (line {line}, column {column})"
        bad = lines[line - 1][column - 1 : column] if line <= len(lines) else ""
    else:
        bad = ""
    context = " ".join(str(getattr(exc, "context", None) or "").split())
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None:
        context += f" started at line {min(context_mark.line + 1, len(lines))}"
    hint = next(
        (
            h
            for needle, extra, h in _YAML_HINTS
            if needle in problem and (not extra or extra in bad or extra in context)
        ),
        "",
    )
    detail = problem + where + (f", {context}" if context else "") + (f": {hint}" if hint else "")
    return f"invalid YAML: {detail}"


def read_yaml(path: Path, *, what: str = "file", error: type[UsageError] = UsageError) -> Any:
    """:func:`read_text` then :func:`parse_yaml`, every problem one line naming ``path``."""
    return parse_yaml(read_text(path, what=what, error=error), source=str(path), error=error)


def write_atomic(path: Path, data: bytes | str, *, error: type[UsageError] = UsageError) -> None:
    """Write ``data`` (str as UTF-8) to ``path`` all at once, creating its directory.

    The bytes go to a hidden temporary file in the same directory, which is then renamed over
    ``path``: readers see the old file or the new one, never a part. The temporary name carries
    the process id, so two processes writing one destination never share a temporary file.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if path.parent != Path():
            path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(payload)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise error(f"{path}: cannot write: {exc.strerror or exc}") from None
