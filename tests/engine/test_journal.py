"""The journal survives a write torn by a hard kill."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from probegate.cli import main
from probegate.engine.journal import Journal, JournalHeader, read_journal
from probegate.errors import UsageError
from probegate.models.verdict import Attempt, Outcome

HEADER = JournalHeader(
    scan_id="s",
    plan="p",
    created_at="2026-01-01T00:00:00Z",
    target="demo",
    redaction_salt="x",
    config={},
)


def attempt(n: int) -> Attempt:
    return Attempt(attempt_id=f"p#seed#{n}", probe_id="p", outcome=Outcome.RESISTED)


def test_torn_last_line_is_skipped_and_the_next_record_starts_fresh(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal(path, HEADER)
    journal.record(attempt(0))
    journal.close()
    with path.open("ab") as fh:
        fh.write(b'{"kind": "attempt", "attempt": {"attempt_id": "p#se')  # killed mid-write
    contents = read_journal(path)
    assert contents.header == HEADER and set(contents.attempts) == {"p#seed#0"}
    resumed = Journal(path, HEADER)
    resumed.record(attempt(1))
    resumed.close()
    assert set(read_journal(path).attempts) == {"p#seed#0", "p#seed#1"}


# --------------------------------------------------------------------- lines written in part


def _journal_with(tmp_path: Path, *bad: bytes) -> Path:
    path = tmp_path / "journal.jsonl"
    journal = Journal(path, HEADER)
    journal.record(attempt(0))
    journal.close()
    with path.open("ab") as fh:
        for line in bad:
            fh.write(line + b"\n")
    resumed = Journal(path, HEADER)
    resumed.record(attempt(1))
    resumed.close()
    return path


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ('{"kind":"attempt","attempt":{"reason":"caf\u00e9'.encode()[:-1], "not UTF-8"),
        (b'{"kind":"attempt","attempt":{"attempt_id":"p#s\xff\xfeed#9"}}', "not UTF-8"),
        (b"[1, 2, 3]", "not a journal record"),
        (b'"just a string"', "not a journal record"),
        (b"null", "not a journal record"),
        (b'{"kind":"attempt","attempt":[]}', "not a valid attempt"),
        (b'{"kind":"something else"}', "not a journal record"),
        (b'{"kind":"attempt","attempt":{"attempt_id":', "not complete JSON"),
        (b"[" * 100_000, "nested too deeply"),
    ],
)
def test_a_line_that_cannot_be_read_is_skipped_and_counted(
    tmp_path: Path, bad: bytes, why: str
) -> None:
    contents = read_journal(_journal_with(tmp_path, bad))
    assert set(contents.attempts) == {"p#seed#0", "p#seed#1"}
    assert [n for n, _ in contents.skipped] == [3]
    assert contents.skipped[0][1].startswith(why)
    assert contents.warning().endswith("their attempts run again")


def test_the_journal_is_private_and_never_opened_through_a_symlink(tmp_path: Path) -> None:
    path = tmp_path / "store" / "scans" / "s" / "journal.jsonl"
    Journal(path, HEADER).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    victim = tmp_path / "victim"
    victim.write_text("keep")
    path.unlink()
    path.symlink_to(victim)
    with pytest.raises(UsageError, match="cannot write the scan journal"):
        Journal(path, HEADER)
    assert victim.read_text() == "keep"


# --------------------------------------------------------------------------- resume, end to end


def _scan(tmp: Path, *extra: str) -> int:
    args = ["scan", "demo", "--store", str(tmp / "s"), "--output-dir", str(tmp / "o")]
    return main([*args, "--no-sign", "--quiet", *extra])


@pytest.mark.parametrize(
    "damage",
    ["torn inside a character", "not an object", "not UTF-8", "an attempt of another plan"],
)
def test_resume_survives_any_damaged_line_and_ends_with_a_report(
    tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _scan(tmp_path) == 0
    finished = json.loads((tmp_path / "o" / "scan.json").read_text())
    journal = next((tmp_path / "s" / "scans").glob("*/journal.jsonl"))
    lines = journal.read_bytes().splitlines(keepends=True)
    victim = json.loads(lines[5])["attempt"]["attempt_id"]
    if damage == "torn inside a character":
        line = lines[5].replace(b'"reason":"', '"reason":"\u2603'.encode(), 1)
        lines[5] = line[: line.index("\u2603".encode()) + 1] + b"\n"
    elif damage == "not an object":
        lines[5] = b'["attempt", 1]\n'
    elif damage == "not UTF-8":
        lines[5] = lines[5][:30] + b"\xff\xfe" + lines[5][30:]
    else:
        other = json.loads(lines[6])
        other["attempt"]["attempt_id"] = "asi99.not-a-probe.v1#seed#0"
        lines.insert(6, json.dumps(other).encode() + b"\n")
    journal.write_bytes(b"".join(lines))
    (tmp_path / "o" / "scan.json").unlink()
    capsys.readouterr()

    assert _scan(tmp_path, "--resume", journal.parent.name) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: journal ") and err.count("\n") == 1, err
    resumed = json.loads((tmp_path / "o" / "scan.json").read_text())
    assert resumed["results"] == finished["results"]
    assert resumed["completeness"] == finished["completeness"]
    ids = set(read_journal(journal).attempts)
    assert victim in ids  # its attempt ran again and was journaled
    assert "asi99.not-a-probe.v1#seed#0" not in {r["probe_id"] for r in resumed["results"]}


# --------------------------------------------------------------------------- the header


def test_the_header_reads_back_as_it_was_written(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    Journal(path, HEADER).close()
    assert read_journal(path).header == HEADER
    assert json.loads(path.read_text(encoding="utf-8"))["kind"] == "probegate-journal-v1"


@pytest.mark.parametrize("missing", ["created_at", "target", "redaction_salt", "config"])
def test_a_header_without_a_field_is_no_header(tmp_path: Path, missing: str) -> None:
    """A header missing ``created_at`` once reached the report as the string "None"."""
    path = tmp_path / "journal.jsonl"
    Journal(path, HEADER).close()
    header = json.loads(path.read_text(encoding="utf-8"))
    del header[missing]
    path.write_text(json.dumps(header) + "\n", encoding="utf-8")
    with pytest.raises(UsageError, match="has no readable header"):
        read_journal(path)


def test_a_damaged_header_after_a_good_one_is_skipped_and_counted(tmp_path: Path) -> None:
    path = _journal_with(tmp_path, b'{"kind":"probegate-journal-v1","scan_id":7}')
    contents = read_journal(path)
    assert contents.header == HEADER
    assert contents.skipped == [(3, "not a valid journal header")]
