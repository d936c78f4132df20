"""Where a scan keeps its files in the store (``--store DIR``, default ``.probegate``).

The one owner of every name in the store: code that reads or writes a scan's files asks a
:class:`ScanFiles` for the path, and a report that points into the store (a finding's
``transcript_ref`` and ``pov_reference``) spells it with :func:`journal_ref` and
:func:`reproducer_ref`. One scan's directory holds::

    scans/<scan_id>/
      journal.jsonl      every completed attempt, as it completes (engine/journal.py)
      invocation.json    the command line as data, so ``--resume SCAN_ID`` needs nothing else
      judge-usage.json   what the LLM judge did and cost in the runs of this scan so far
      scan.json          the stored report (models/stored.py reads it back)
      lock               who runs the scan now (engine/lock.py)
      pov/<probe>.sh     a reproducer per finding (scan/reproducers.py), and
      pov/<probe>.replay.py  a standalone replay script where the target kind has one
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SCANS_DIR = "scans"
JOURNAL_FILE = "journal.jsonl"
INVOCATION_FILE = "invocation.json"
JUDGE_USAGE_FILE = "judge-usage.json"
# The stored report; ``--output json`` writes the same bytes under the same name into the
# output directory (reports.FORMATS), so a reader finds one name in both places.
REPORT_FILE = "scan.json"
LOCK_FILE = "lock"
POV_DIR = "pov"


def scans_dir(store: Path) -> Path:
    """The directory of every scan in ``store``."""
    return store / SCANS_DIR


@dataclass(frozen=True)
class ScanFiles:
    """The files of one scan in the store."""

    directory: Path

    @classmethod
    def of(cls, store: Path, scan_id: str) -> ScanFiles:
        return cls(scans_dir(store) / scan_id)

    @property
    def journal(self) -> Path:
        return self.directory / JOURNAL_FILE

    @property
    def invocation(self) -> Path:
        return self.directory / INVOCATION_FILE

    @property
    def judge_usage(self) -> Path:
        return self.directory / JUDGE_USAGE_FILE

    @property
    def report(self) -> Path:
        return self.directory / REPORT_FILE

    @property
    def lock(self) -> Path:
        return self.directory / LOCK_FILE

    @property
    def pov(self) -> Path:
        return self.directory / POV_DIR

    def reproducer(self, probe_id: str) -> Path:
        return self.pov / f"{probe_id}.sh"

    def replay_script(self, probe_id: str) -> Path:
        return self.pov / f"{probe_id}.replay.py"


def journal_ref(store: str, scan_id: str, attempt_id: str) -> str:
    """Where a report says an attempt's transcript is: its line of the scan's journal.

    ``store`` is the store as the report shows it (a path with ``/``); the result is text in
    the report, the same on every machine, never a :class:`Path`.
    """
    return f"{store}/{SCANS_DIR}/{scan_id}/{JOURNAL_FILE}#{attempt_id}"


def reproducer_ref(store: str, scan_id: str, probe_id: str) -> str:
    """Where a report says a finding's reproducer is (see :func:`journal_ref`)."""
    return f"{store}/{SCANS_DIR}/{scan_id}/{POV_DIR}/{probe_id}.sh"
