"""The --shard K/N parser and the MODULE:ATTR loader: one rule each, wherever they are read."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from probegate.cli import main
from probegate.errors import UsageError
from probegate.inprocess import load_attribute, split_spec
from probegate.models.shard import Shard, parse_shard


@pytest.mark.parametrize(("text", "shard"), [("1/1", Shard(1, 1)), (" 2/4 ", Shard(2, 4))])
def test_valid_shards(text: str, shard: Shard) -> None:
    assert parse_shard(text) == shard and str(parse_shard(text)) == str(shard)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1", "takes K/N"),
        ("1/2/3", "takes K/N"),
        ("a/b", "takes K/N"),
        ("-1/2", "takes K/N"),
        ("0/2", "1 <= K <= N"),
        ("3/2", "1 <= K <= N"),
        ("1/0", "1 <= K <= N"),
    ],
)
def test_invalid_shards(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_shard(text)


def test_scan_refuses_a_bad_shard_before_running(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["scan", "demo", "--quiet", "--shard", "3/2"]) == 2
    assert "shard: --shard K/N needs 1 <= K <= N, got '3/2'" in capsys.readouterr().err
    assert not (in_tmp / ".probegate").exists()


@pytest.mark.parametrize(
    ("spec", "dotted_form", "expected"),
    [
        ("pkg.mod:Agent", False, ("pkg.mod", "Agent")),
        ("pkg.mod:Agent.run", False, ("pkg.mod", "Agent.run")),
        ("pkg.mod.Agent", True, ("pkg.mod", "Agent")),
        ("pkg.mod:Agent", True, ("pkg.mod", "Agent")),
    ],
)
def test_specs(spec: str, dotted_form: bool, expected: tuple[str, str]) -> None:
    assert split_spec(spec, flag="--x", dotted_form=dotted_form) == expected


@pytest.mark.parametrize(
    ("spec", "dotted_form"),
    [
        ("pkg.mod.Agent", False),  # the dotted form is --adapter's alone
        ("justaname", True),
        (".relative:run", False),
        ("mod:", False),
        (":run", False),
        ("my-agent:run", False),
        ("mod:run()", False),
        ("../x:run", False),
        ("mod:a..b", False),
    ],
)
def test_bad_specs(spec: str, dotted_form: bool) -> None:
    with pytest.raises(UsageError, match=r"--x takes MODULE:ATTR \(e\.g\. my_agent"):
        split_spec(spec, flag="--x", dotted_form=dotted_form)


def test_search_paths_are_only_there_for_the_import(tmp_path: Path) -> None:
    (tmp_path / "pg_user_agent_mod.py").write_text("def run(text, context):\n    return text\n")
    before = list(sys.path)
    try:
        func = load_attribute("pg_user_agent_mod:run", flag="--python", search=[tmp_path])
        assert func("hi", None) == "hi"
        assert sys.path == before
    finally:
        sys.modules.pop("pg_user_agent_mod", None)


def test_what_an_import_raises_is_the_users_error(tmp_path: Path) -> None:
    (tmp_path / "pg_exits_on_import.py").write_text("raise SystemExit(3)\n")
    try:
        with pytest.raises(UsageError) as info:
            load_attribute("pg_exits_on_import:run", flag="--python", search=[tmp_path])
    finally:
        sys.modules.pop("pg_exits_on_import", None)
    assert info.value.message == "--python: cannot import 'pg_exits_on_import': SystemExit: 3"


def test_the_same_rule_for_both_flags(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (in_tmp / "s.yml").write_text("suite: s\nscenarios: [{name: a, input: b}]\n", "utf-8")
    for argv in (
        ["scan", "--python", "my-agent:run"],
        ["run", "s.yml", "--adapter", "my-agent:run"],
    ):
        assert main(argv) == 2
        assert "takes MODULE:ATTR" in capsys.readouterr().err
