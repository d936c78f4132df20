"""The journal survives a write torn by a hard kill."""

from __future__ import annotations

from pathlib import Path

from probegate.engine.journal import Journal, read_journal
from probegate.models.verdict import Attempt, Outcome


def attempt(n: int) -> Attempt:
    return Attempt(attempt_id=f"p#seed#{n}", probe_id="p", outcome=Outcome.RESISTED)


def test_torn_last_line_is_skipped_and_the_next_record_starts_fresh(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal(path, {"scan_id": "s", "plan": "p"})
    journal.record(attempt(0))
    journal.close()
    with path.open("ab") as fh:
        fh.write(b'{"kind": "attempt", "attempt": {"attempt_id": "p#se')  # killed mid-write
    contents = read_journal(path)
    assert contents.header["plan"] == "p" and set(contents.attempts) == {"p#seed#0"}
    resumed = Journal(path, {"scan_id": "s", "plan": "p"})
    resumed.record(attempt(1))
    resumed.close()
    assert set(read_journal(path).attempts) == {"p#seed#0", "p#seed#1"}
