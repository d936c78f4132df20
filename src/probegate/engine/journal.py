"""The journal: one JSON line per completed attempt, written as it completes.

Each line is flushed to the OS before the next attempt is recorded, so a crash or ``kill -9``
loses at most the attempts still in flight (a killed process's written data stays in the
kernel's page cache; only a power cut needs the ``fsync`` done at close); ``--resume`` reads
the lines back and skips them. A truncated last line (the kill landed mid-write) is ignored,
not fatal, and the resumed journal starts on a fresh line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from probegate.canonical import canonical_bytes
from probegate.errors import UsageError
from probegate.files import read_text, write_atomic
from probegate.models.verdict import Attempt

HEADER_KIND = "probegate-journal-v1"
# The command line a scan was started with, so ``--resume SCAN_ID`` needs nothing else.
INVOCATION_FILE = "invocation.json"


def scan_dir(store: Path, scan_id: str) -> Path:
    return store / "scans" / scan_id


def write_invocation(directory: Path, invocation: dict[str, Any]) -> None:
    """Keep how the scan was started beside its journal (names of variables, never secrets)."""
    write_atomic(directory / INVOCATION_FILE, canonical_bytes(invocation))


def read_invocation(store: Path, scan_id: str) -> dict[str, Any]:
    """How scan ``scan_id`` was started; a usage error that says where it looked, if unknown."""
    if "/" in scan_id or "\\" in scan_id or scan_id in (".", ".."):
        raise UsageError(f"{scan_id!r} is not a scan id (pg-... as the scan printed it)")
    path = scan_dir(store, scan_id) / INVOCATION_FILE
    if not path.is_file():
        where = "" if (scan_dir(store, scan_id) / "journal.jsonl").exists() else " and no journal"
        raise UsageError(
            f"no scan {scan_id} to resume in {store}{where}: give the store it used "
            "(--store DIR), or the same target and flags as the scan that started it"
        )
    try:
        data = json.loads(read_text(path, what="scan invocation"))
    except json.JSONDecodeError:
        raise UsageError(f"{path}: not a probegate scan invocation (invalid JSON)") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a probegate scan invocation")
    return data


class Journal:
    """Append-only attempt log for one scan."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not path.exists() or path.stat().st_size == 0
        torn = not fresh and not _ends_with_newline(path)
        self._fh: IO[bytes] = path.open("ab")
        if torn:
            # A hard kill cut the last line short: end it, so the next record is a line of its
            # own instead of being glued to (and lost with) the torn one.
            self._fh.write(b"\n")
        if fresh:
            self._write({"kind": HEADER_KIND, **header})

    def _write(self, obj: dict[str, Any]) -> None:
        self._fh.write(canonical_bytes(obj) + b"\n")
        self._fh.flush()

    def record(self, attempt: Attempt) -> None:
        # pydantic's own serializer: the journal is read back, never signed, so it need not be
        # canonical, and this runs once per attempt on the runner's single writer thread.
        line = b'{"kind":"attempt","attempt":' + attempt.model_dump_json().encode() + b"}\n"
        self._fh.write(line)
        self._fh.flush()

    def close(self) -> None:
        try:
            self._fh.flush()
            os.fsync(self._fh.fileno())
        finally:
            self._fh.close()


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def read_journal(path: Path) -> tuple[dict[str, Any], dict[str, Attempt]]:
    """The header and the completed attempts by id; last write wins for an id."""
    if not path.exists():
        raise UsageError(f"no journal at {path}: nothing to resume")
    header: dict[str, Any] = {}
    attempts: dict[str, Attempt] = {}
    with path.open("rb") as fh:
        for raw in fh:
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError:
                continue  # a line cut short by a hard kill
            if obj.get("kind") == HEADER_KIND:
                header = obj
            elif obj.get("kind") == "attempt":
                try:
                    attempt = Attempt.model_validate(obj["attempt"])
                except (ValidationError, KeyError):
                    continue
                attempts[attempt.attempt_id] = attempt
    if not header:
        raise UsageError(f"journal {path} has no header: not a probegate journal")
    return header, attempts
