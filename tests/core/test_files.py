"""files.py: one message per unreadable file, YAML errors with their place, atomic writes."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from probegate import files
from probegate.errors import ConfigError, UsageError
from probegate.files import parse_yaml, read_text, read_yaml, write_atomic


def test_write_atomic_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "scan.json"
    write_atomic(path, b"one")
    write_atomic(path, "two ✓")
    assert path.read_text(encoding="utf-8") == "two ✓"
    assert sorted(p.name for p in path.parent.iterdir()) == ["scan.json"]


def test_a_failed_write_keeps_the_old_file_and_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "scan.json"
    path.write_bytes(b"old")

    def full_disk(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "replace", full_disk)
    with pytest.raises(ConfigError) as info:
        write_atomic(path, b"new", error=ConfigError)
    assert info.value.message == f"{path}: cannot write: No space left on device"
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scan.json"]


def test_writing_under_a_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="cannot write"):
        write_atomic(tmp_path / "file" / "scan.json", b"x")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "{p}: config file not found"),
        (lambda p: p.mkdir(), "{p}: is a directory, not a config file"),
        (lambda p: p.write_bytes(b"a: \xff\n"), "{p}: not UTF-8 text"),
        (lambda p: p.write_text("a: [1,\n"), "{p}: invalid YAML: "),
    ],
)
def test_read_problems_are_one_line_in_the_callers_error(tmp_path, make, message) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "probegate.yml"
    make(path)
    with pytest.raises(ConfigError) as info:
        read_yaml(path, what="config file", error=ConfigError)
    assert info.value.message.startswith(message.format(p=path))
    assert "\n" not in info.value.message


def test_yaml_errors_say_where() -> None:
    with pytest.raises(UsageError) as info:
        parse_yaml("key: value\n  bad: x\n", source="s.yml")
    assert info.value.message == (
        "s.yml: invalid YAML: mapping values are not allowed in this context (line 2, column 6): "
        "a ': ' inside a value (put the value in quotes) or a line indented too far"
    )


def test_yaml_is_read_safely(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="invalid YAML"):
        parse_yaml("!!python/object/apply:os.system ['true']", source="s.yml")
    path = tmp_path / "ok.yml"
    path.write_text("a: [1, 2]\n", encoding="utf-8")
    assert read_yaml(path) == {"a": [1, 2]}
    assert read_text(path) == "a: [1, 2]\n"


# --------------------------------------------------------------------------- bounded YAML


def _alias_bomb(levels: int = 12) -> str:
    """A few hundred bytes that expand to 10**levels values once the aliases are followed."""
    lines = ["target:", "  kind: openai", "  params:", "    a0: &a0 [" + ",".join(["x"] * 10) + "]"]
    for i in range(1, levels):
        lines.append(f"    a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_without_expanding_it() -> None:
    text = _alias_bomb()
    assert len(text) < 1000
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, source="probegate.yml", error=ConfigError)
    assert info.value.message == (
        "probegate.yml: YAML expands to more than 1,000,000 values through its aliases "
        "(an alias bomb?)"
    )


def test_a_few_aliases_are_fine_and_a_recursive_one_is_refused() -> None:
    data = parse_yaml("base: &b {a: 1}\none: *b\ntwo: {<<: *b, c: 2}\n", source="s.yml")
    assert data == {"base": {"a": 1}, "one": {"a": 1}, "two": {"a": 1, "c": 2}}
    with pytest.raises(UsageError, match="alias \\*a refers to a value that contains it"):
        parse_yaml("a: &a [1, *a]\n", source="s.yml")
    many = "x: &x 1\ny: [" + ", ".join(["*x"] * (files.MAX_YAML_ALIASES + 1)) + "]\n"
    with pytest.raises(UsageError, match="more than 10000 aliases"):
        parse_yaml(many, source="s.yml")


def test_deep_yaml_is_one_line_not_a_crash() -> None:
    deep = "a: " + "[" * 500 + "]" * 500 + "\n"
    with pytest.raises(UsageError) as info:
        parse_yaml(deep, source="s.yml")
    assert info.value.message == "s.yml: YAML nested more than 100 levels deep"
    block = "".join("  " * i + "k:\n" for i in range(300)) + "  " * 300 + "v\n"
    with pytest.raises(UsageError, match="nested more than 100 levels deep"):
        parse_yaml(block, source="s.yml")


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "probegate.yml"
    with path.open("wb") as handle:
        handle.write(b"target: {kind: demo}\n# ")
        handle.truncate(100 * 1024 * 1024)  # a 100 MB file (sparse: nothing to write)
    with pytest.raises(ConfigError) as info:
        read_yaml(path, what="config file", error=ConfigError)
    assert info.value.message == f"{path}: config file is larger than 8 MiB; refusing to read it"


def test_only_a_regular_file_is_read_with_a_limit(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yml"
    os.mkfifo(fifo)
    # Opening a FIFO blocks until a writer comes: give it one, then refuse what it is.
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        with pytest.raises(UsageError, match="not a regular file, not a config file"):
            read_yaml(fifo, what="config file")
    finally:
        os.close(writer)


# --------------------------------------------------------------------------- private writes


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_private_files_are_0600_in_new_0700_directories(tmp_path: Path) -> None:
    (tmp_path / "existing").mkdir(mode=0o755)
    path = tmp_path / "existing" / "new" / "deeper" / "journal.jsonl"
    write_atomic(path, b"x", private=True)
    assert _mode(path) == 0o600
    assert _mode(path.parent) == _mode(path.parent.parent) == 0o700
    assert _mode(tmp_path / "existing") == 0o755  # not ours to narrow
    script = tmp_path / "existing" / "new" / "pov.sh"
    write_atomic(script, "#!/bin/sh\n", private=True, executable=True)
    assert _mode(script) == 0o700


def test_a_symlink_is_replaced_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    out = tmp_path / "out"
    out.mkdir()
    (out / "scan.json").symlink_to(victim)
    # Planted under every temporary name a predictable writer could pick.
    for pid in range(1, 50):
        (out / f".scan.json.{pid}.tmp").symlink_to(victim)
    write_atomic(out / "scan.json", b"report")
    assert victim.read_text() == "keep"
    assert not (out / "scan.json").is_symlink()
    assert (out / "scan.json").read_bytes() == b"report"
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]


def test_appending_privately_never_follows_a_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "journal.jsonl").symlink_to(victim)
    with pytest.raises(OSError):
        files.open_private_append(tmp_path / "store" / "journal.jsonl")
    assert victim.read_text() == "keep"
    fd = files.open_private_append(tmp_path / "store" / "s" / "journal.jsonl")
    os.close(fd)
    assert _mode(tmp_path / "store" / "s" / "journal.jsonl") == 0o600
    assert _mode(tmp_path / "store" / "s") == 0o700


def test_a_directory_that_cannot_be_written_is_found_before_anything_is_made(
    tmp_path: Path,
) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError) as info:
        files.check_writable_dir(tmp_path / "file" / "out", what="output directory")
    assert info.value.message == (
        f"{tmp_path / 'file' / 'out'}: cannot be used as the output directory: not a directory "
        f"({tmp_path / 'file'} is not a directory)"
    )
    files.check_writable_dir(tmp_path / "new" / "deep", what="output directory")
    assert not (tmp_path / "new").exists()


def test_a_file_written_in_pieces_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    path = tmp_path / "scan.json"
    path.write_bytes(b"old")

    def produce(write: Callable[[bytes], object]) -> None:
        write(b"one ")
        write(b"two")

    files.write_atomic_pieces(path, produce, private=True)
    assert path.read_bytes() == b"one two"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    def fails(write: Callable[[bytes], object]) -> None:
        write(b"half")
        raise ValueError("no more")

    with pytest.raises(ValueError, match="no more"):
        files.write_atomic_pieces(path, fails)
    assert path.read_bytes() == b"one two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scan.json"]


def test_files_written_together_all_appear_or_none_does(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.html"
    first.write_bytes(b"old a")

    def fails(write: Callable[[bytes], object]) -> None:
        write(b"half")
        raise ValueError("no more")

    with pytest.raises(ValueError, match="no more"):
        files.write_atomic_files([(first, lambda w: w(b"new a")), (second, fails)])
    assert first.read_bytes() == b"old a"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]
    files.write_atomic_files([(first, lambda w: w(b"new a")), (second, lambda w: w(b"b"))])
    assert (first.read_bytes(), second.read_bytes()) == (b"new a", b"b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.html"]
