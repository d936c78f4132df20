"""files.py: one message per unreadable file, YAML errors with their place, atomic writes."""

from __future__ import annotations

import errno
import os
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
