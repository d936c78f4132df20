"""One exit-code table: the README, ``--help`` and every command read the same codes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from probegate.cli import main
from probegate.errors import EXIT_CODES, ExitCode

README = Path(__file__).parents[2] / "README.md"


def exit_code_table() -> str:
    """The README's Markdown table of :data:`EXIT_CODES`, as the README must hold it."""
    lines = ["| code | meaning |", "|---|---|"]
    lines += [f"| {row.code.value} | {row.meaning} |" for row in EXIT_CODES]
    return "\n".join(lines) + "\n"


def test_the_readme_table_is_the_code_table() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|")) + "\n"
    assert table == exit_code_table()


def test_help_lists_every_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for row in EXIT_CODES:
        assert f"{row.code.value} {row.meaning.replace('`', '')}" in out
    assert f"{ExitCode.CLOSED_PIPE.value} the output was cut off by a closed pipe" in out


def test_codes_are_distinct_and_labelled() -> None:
    assert [row.code for row in EXIT_CODES] == [0, 1, 2, 3, 4]
    assert len({row.label for row in EXIT_CODES}) == len(EXIT_CODES)


def test_no_module_keeps_its_own_exit_codes() -> None:
    src = Path(__file__).parents[2] / "src" / "probegate"
    own = re.compile(r"^\s*_?EXIT_[A-Z_]+\s*(?::[^=]+)?=\s*\(?\s*-?\d", re.MULTILINE)
    offenders = [
        str(path.relative_to(src))
        for path in sorted(src.rglob("*.py"))
        if own.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
