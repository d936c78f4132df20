"""Reading the user's files and writing ours: one message per problem, no torn file.

Every file probegate reads from the user (a config, a suppression file, a probe, a scenario
suite, a stored report) goes through :func:`read_bytes`, :func:`read_text` or
:func:`read_yaml`, so an unreadable path is one line naming the file and the reason, raised as
the caller's own :class:`~probegate.errors.UsageError` subclass (exit 2). Reading is bounded: a
file larger than the caller's limit is refused before it is read, and YAML is checked event by
event (libyaml's parser, no tree built) before anything is constructed from it, so a document
nested too deep, or whose aliases would expand it to more values than its limit (an "alias
bomb", kilobytes on disk and gigabytes in memory), is one line in milliseconds instead of an
exhausted machine.

Every file probegate writes for the user (reports, baselines, recordings, comparisons, the
scan store) goes through :func:`write_atomic`: written to a fresh temporary file beside its
destination (created exclusively, so a symlink planted under the temporary name is never
followed) and renamed over it, so a crash or a full disk never leaves half a report that the
next run would read, and a symlink at the destination is replaced rather than written through.
``private`` files (the scan store and recordings hold transcripts) are created 0600 in
directories created 0700 (docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from probegate.errors import UsageError

# libyaml's safe loader parses several times faster; the pure-Python one is the fallback.
_SafeLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Far above any config, suite, probe, prompt or key file (the largest bundled file is under
# 200 KB), far below what takes a parser more than a moment.
MAX_YAML_BYTES = 8 * 1024 * 1024
MAX_INPUT_BYTES = MAX_YAML_BYTES
# Stored reports, comparisons and recordings: a 10,000-finding report is tens of megabytes.
MAX_REPORT_BYTES = 256 * 1024 * 1024
# Values (scalars and collections) a YAML document may expand to once its aliases are followed.
MAX_YAML_VALUES = 1_000_000
# Alias uses per document: configs repeat a block now and then, never thousands of times.
MAX_YAML_ALIASES = 10_000
# Nesting depth: deeper input would exhaust the recursion of the tools that read it afterwards.
MAX_YAML_DEPTH = 100

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def read_bytes(
    path: Path,
    *,
    what: str = "file",
    error: type[UsageError] = UsageError,
    max_bytes: int | None = None,
) -> bytes:
    """The file's bytes, or one ``error`` line: ``PATH: <what> not found``, or why not.

    With ``max_bytes``, only a regular file of at most that size is read (a device or a pipe
    could be endless).
    """
    if max_bytes is None:
        try:
            return path.read_bytes()
        except OSError as exc:
            raise _unreadable(path, what, error, exc) from None
    with open_bounded(path, what=what, error=error, max_bytes=max_bytes) as read:
        return read(max_bytes + 1)


@contextlib.contextmanager
def open_bounded(
    path: Path, *, what: str = "file", error: type[UsageError] = UsageError, max_bytes: int
) -> Iterator[Callable[[int], bytes]]:
    """The regular file at ``path``, open to be read a piece at a time, for a reader that does
    not need all of it in memory at once: ``read(n)`` gives its next ``n`` bytes (fewer at its
    end). Whatever :func:`read_bytes` refuses is refused with the same line, a file larger than
    ``max_bytes`` as soon as more than that has been read."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise _unreadable(path, what, error, exc) from None
    with handle:
        try:
            regular = stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
        except OSError as exc:
            raise _unreadable(path, what, error, exc) from None
        if not regular:
            raise error(f"{path}: not a regular file, not a {what}")
        total = 0

        def read(size: int) -> bytes:
            nonlocal total
            try:
                data = handle.read(size)
            except OSError as exc:
                raise _unreadable(path, what, error, exc) from None
            total += len(data)
            if total > max_bytes:
                raise error(
                    f"{path}: {what} is larger than {_size(max_bytes)}; refusing to read it"
                )
            return data

        yield read


def _unreadable(path: Path, what: str, error: type[UsageError], exc: OSError) -> UsageError:
    if isinstance(exc, FileNotFoundError):
        return error(f"{path}: {what} not found")
    if isinstance(exc, IsADirectoryError):
        return error(f"{path}: is a directory, not a {what}")
    return error(f"{path}: cannot read {what}: {exc.strerror or exc}")


def read_text(
    path: Path,
    *,
    what: str = "file",
    error: type[UsageError] = UsageError,
    max_bytes: int | None = None,
) -> str:
    """:func:`read_bytes` decoded as UTF-8; text in another encoding is one ``error`` line."""
    data = read_bytes(path, what=what, error=error, max_bytes=max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{path}: not UTF-8 text") from None


def parse_yaml(text: str, *, source: str, error: type[UsageError] = UsageError) -> Any:
    """YAML text -> plain data (safe loader), or ``SOURCE: invalid YAML ...`` with the place.

    The message names a line of the file (a problem at the very end is placed on the last line,
    never on one after it), says what the parser expected, and hints at the usual cause. The
    document is checked against the nesting, alias and size limits first (see the module
    docstring); a document over a limit is ``SOURCE: <what is wrong>``.
    """
    return parse_yaml_document(text, source=source, error=error)[0]


def parse_yaml_document(
    text: str, *, source: str, error: type[UsageError] = UsageError
) -> tuple[Any, yaml.Node | None]:
    """:func:`parse_yaml`, also returning the composed node, whose marks give the line of each
    value (``probegate probes lint``). The same limits, checked first, for every reader.

    A syntax error is raised from the parser's own error (``__cause__``), whose ``problem_mark``
    says where it is.
    """
    if len(text) > MAX_YAML_BYTES:
        raise error(f"{source}: YAML document is larger than {_size(MAX_YAML_BYTES)}")
    try:
        problem = _bounds_problem(text)
        if problem is not None:
            raise error(f"{source}: {problem}")
        loader = _SafeLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
        return data, node
    except yaml.YAMLError as exc:
        raise error(f"{source}: {yaml_problem(exc, text)}") from exc
    except RecursionError:  # belt and braces: the depth check comes first
        raise error(f"{source}: YAML nested too deeply") from None


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


def _bounds_problem(text: str) -> str | None:
    """What makes ``text`` too deep or too big once its aliases are followed, if anything.

    One pass over libyaml's events: a stack of the open collections, each counting the values
    it expands to; an anchored value's count is remembered, and each alias adds the count of
    its anchor, so the expanded size is known without expanding anything. An alias to a value
    still open is a recursive document, which nothing downstream could serialise.
    """
    counts: list[int] = [0]
    anchors_open: list[str | None] = [None]
    sizes: dict[str, int] = {}
    aliases = 0
    for event in yaml.parse(text, Loader=_SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(counts) > MAX_YAML_DEPTH:
                return f"YAML nested more than {MAX_YAML_DEPTH} levels deep"
            counts.append(1)
            anchors_open.append(event.anchor)
        elif isinstance(event, yaml.CollectionEndEvent):
            size = counts.pop()
            anchor = anchors_open.pop()
            if anchor is not None:
                sizes[anchor] = size
            counts[-1] += size
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                sizes[event.anchor] = 1
            counts[-1] += 1
        elif isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_YAML_ALIASES:
                return f"YAML uses more than {MAX_YAML_ALIASES} aliases"
            if event.anchor in anchors_open:
                return f"YAML alias *{event.anchor} refers to a value that contains it"
            counts[-1] += sizes.get(str(event.anchor), 1)
        else:
            continue
        if counts[-1] > MAX_YAML_VALUES:
            return (
                f"YAML expands to more than {MAX_YAML_VALUES:,} values through its aliases "
                "(an alias bomb?)"
            )
    return None


def read_yaml(
    path: Path,
    *,
    what: str = "file",
    error: type[UsageError] = UsageError,
    max_bytes: int = MAX_YAML_BYTES,
) -> Any:
    """:func:`read_text` then :func:`parse_yaml`, every problem one line naming ``path``."""
    text = read_text(path, what=what, error=error, max_bytes=max_bytes)
    return parse_yaml(text, source=str(path), error=error)


def make_dirs(path: Path, *, private: bool = False) -> None:
    """Create ``path`` and its missing parents; with ``private``, each one created is 0700.

    Only directories created here get the private mode: an existing one is the user's.
    """
    if not private:
        path.mkdir(parents=True, exist_ok=True)
        return
    missing: list[Path] = []
    node = path
    while not node.is_dir():
        missing.append(node)
        if node.parent == node:
            break
        node = node.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:
            if not directory.is_dir():
                raise
        else:
            directory.chmod(PRIVATE_DIR)  # the umask may have narrowed it further; never widened


def check_writable_dir(path: Path, *, what: str, error: type[UsageError] = UsageError) -> None:
    """Refuse, before any work, a directory that could not be created or written to.

    Nothing is created: the nearest existing ancestor must be a directory this process may
    write into (the check a scan makes before it spends a single request).
    """
    node = path
    while not os.path.lexists(node) and node.parent != node:
        node = node.parent
    if not node.is_dir():
        shown = "" if node == path else f" ({node} is not a directory)"
        raise error(f"{path}: cannot be used as the {what}: not a directory{shown}")
    if not os.access(node, os.W_OK | os.X_OK):
        shown = "" if node == path else f" ({node})"
        raise error(f"{path}: cannot be used as the {what}: not writable{shown}")


def write_atomic(
    path: Path,
    data: bytes | str,
    *,
    error: type[UsageError] = UsageError,
    private: bool = False,
    executable: bool = False,
) -> None:
    """Write ``data`` (str as UTF-8) to ``path`` all at once, creating its directory.

    The bytes go to a hidden temporary file with a random name, created exclusively in the same
    directory, which is then renamed over ``path``: readers see the old file or the new one,
    never a part, and neither a symlink at ``path`` nor one planted under a temporary name is
    ever written through. ``private`` makes the file 0600 (0700 when ``executable``) and any
    directory created for it 0700; otherwise the umask decides, as for any file a tool writes.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    write_atomic_pieces(
        path, lambda write: write(payload), error=error, private=private, executable=executable
    )


Produce = Callable[[Callable[[bytes], object]], object]


def write_atomic_pieces(
    path: Path,
    produce: Produce,
    *,
    error: type[UsageError] = UsageError,
    private: bool = False,
    executable: bool = False,
) -> None:
    """:func:`write_atomic` of the bytes ``produce`` hands to the ``write`` it is given, a piece
    at a time, so a large file's whole text is never held. The file appears only once
    ``produce`` has returned: if it raises, the temporary file is removed and nothing is
    written."""
    write_atomic_files([(path, produce)], error=error, private=private, executable=executable)


def write_atomic_files(
    files: list[tuple[Path, Produce]],
    *,
    error: type[UsageError] = UsageError,
    private: bool = False,
    executable: bool = False,
) -> None:
    """:func:`write_atomic_pieces` of several files, each produced into its temporary file in
    turn and all renamed into place only once every one is produced: one that fails to be made
    leaves every file as it was (the output formats of one report)."""
    mode = (0o777 if executable else 0o666) & (0o700 if private else 0o777)
    staged: list[tuple[Path, Path]] = []
    path = files[0][0] if files else Path()
    try:
        for path, produce in files:
            if path.parent != Path():
                make_dirs(path.parent, private=private)
            fd, tmp = _exclusive(path, mode)
            staged.append((tmp, path))
            with os.fdopen(fd, "wb") as handle:
                produce(handle.write)
        while staged:
            tmp, path = staged[0]
            os.replace(tmp, path)
            staged.pop(0)
    except OSError as exc:
        raise error(f"{path}: cannot write: {exc.strerror or exc}") from None
    finally:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)


def _exclusive(path: Path, mode: int) -> tuple[int, Path]:
    """A new temporary file beside ``path``: O_EXCL and O_NOFOLLOW, never an existing one."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(16):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def open_private_append(path: Path) -> int:
    """A descriptor appending to ``path`` (created 0600, its directory 0700), never through a
    symlink. An existing file of ours is narrowed to 0600 as well."""
    make_dirs(path.parent, private=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)
    except OSError:
        os.close(fd)
        raise
    return fd


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n} bytes"
