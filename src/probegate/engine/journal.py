"""The journal: one JSON line per completed attempt, written as it completes.

Each line is flushed to the OS before the next attempt is recorded, so a crash or ``kill -9``
loses at most the attempts still in flight (a killed process's written data stays in the
kernel's page cache; only a power cut needs the ``fsync`` done at close); ``--resume`` reads
the lines back and skips those attempts. Attempts are journaled in the stored form of
redaction (:mod:`probegate.models.placeholders`), already judged; the header
(:class:`JournalHeader`) keeps the salt of the scan's redaction tokens so a resumed scan
stores the same value under the same token, and a digest of each key of the effective config
that decides verdicts (:func:`config_digests`), so a resumed scan is never judged under a
config other than the one it started with.

The file is created 0600 in a 0700 directory and never opened through a symlink. Reading it
back trusts nothing: a line cut short by a hard kill (also inside a multi-byte character), a
line that is not UTF-8, not JSON, not an object or not an attempt is skipped and counted, and
its attempt simply runs again; the resumed journal starts on a fresh line. The header is
parsed like an attempt line, into a model: a journal without a readable header is no journal.
Where the journal and the scan's other files live is models/store_layout.py's to say.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from probegate.canonical import canonical_bytes, canonical_line
from probegate.errors import UsageError
from probegate.files import MAX_INPUT_BYTES, open_private_append, read_text, write_atomic
from probegate.models.store_layout import ScanFiles
from probegate.models.verdict import Attempt

HEADER_KIND = "probegate-journal-v1"
ATTEMPT_KIND = "attempt"


class JournalHeader(BaseModel):
    """The journal's first line: which scan it is, and what a resume must find unchanged."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["probegate-journal-v1"] = "probegate-journal-v1"
    scan_id: str
    # The plan's fingerprint (engine/plan.py): a resume with other settings is refused.
    plan: str
    created_at: str
    # The target's reference (TargetInfo.ref): a resume continues on its own target.
    target: str
    # The key of the scan's redaction tokens (models/redaction.py ``stored_key``).
    redaction_salt: str
    # A digest of each key of the effective config that decides verdicts (config_digests).
    config: dict[str, str]


def write_invocation(files: ScanFiles, invocation: dict[str, Any]) -> None:
    """Keep how the scan was started beside its journal (names of variables, never secrets)."""
    write_atomic(files.invocation, canonical_bytes(invocation), private=True)


def read_invocation(store: Path, scan_id: str) -> dict[str, Any]:
    """How scan ``scan_id`` was started; a usage error that says where it looked, if unknown."""
    if "/" in scan_id or "\\" in scan_id or scan_id in (".", ".."):
        raise UsageError(f"{scan_id!r} is not a scan id (pg-... as the scan printed it)")
    files = ScanFiles.of(store, scan_id)
    path = files.invocation
    if not path.is_file():
        where = "" if files.journal.exists() else " and no journal"
        raise UsageError(
            f"no scan {scan_id} to resume in {store}{where}: give the store it used "
            "(--store DIR), or the same target and flags as the scan that started it"
        )
    try:
        data = json.loads(read_text(path, what="scan invocation", max_bytes=MAX_INPUT_BYTES))
    except (ValueError, RecursionError):
        raise UsageError(f"{path}: not a probegate scan invocation (invalid JSON)") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a probegate scan invocation")
    return data


def config_digests(config: dict[str, Any], salt: str) -> dict[str, str]:
    """Each key of the effective config that decides verdicts, as a digest keyed with the
    scan's salt: the header can tell a resumed scan which keys changed without keeping any
    value (a declared canary is a real secret)."""
    return {
        key: hmac.new(salt.encode(), canonical_bytes(value), hashlib.sha256).hexdigest()[:16]
        for key, value in sorted(config.items())
    }


def changed_keys(header: JournalHeader, digests: dict[str, str]) -> list[str]:
    """The keys whose digest differs from the header's (a key only one side has counts too)."""
    stored = header.config
    return sorted(k for k in set(stored) | set(digests) if stored.get(k) != digests.get(k))


class Journal:
    """Append-only attempt log for one scan."""

    def __init__(self, path: Path, header: JournalHeader) -> None:
        self.path = path
        try:
            fd = open_private_append(path)
        except OSError as exc:
            raise UsageError(
                f"{path}: cannot write the scan journal: {exc.strerror or exc} (see --store)"
            ) from None
        self._fh = os.fdopen(fd, "ab")
        size = os.fstat(fd).st_size
        if size and not _ends_with_newline(path):
            # A hard kill cut the last line short: end it, so the next record is a line of its
            # own instead of being glued to (and lost with) the torn one.
            self._fh.write(b"\n")
        if not size:
            self._fh.write(canonical_line(header.model_dump(mode="json")))
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


@dataclass
class JournalContents:
    """What a journal holds: its header, the completed attempts by id (last write wins), and
    the lines that could not be read, as ``(line number, why)``."""

    header: JournalHeader
    attempts: dict[str, Attempt]
    skipped: list[tuple[int, str]] = field(default_factory=list)
    path_shown: str = ""

    def warning(self) -> str:
        """One line about the skipped lines, or "" when every line was read."""
        if not self.skipped:
            return ""
        shown = "; ".join(f"line {n}: {why}" for n, why in self.skipped[:3])
        more = f" (and {len(self.skipped) - 3} more)" if len(self.skipped) > 3 else ""
        return (
            f"journal {self.path_shown}: skipped {len(self.skipped)} unreadable line(s) "
            f"({shown}{more}); their attempts run again"
        )


def read_journal(path: Path) -> JournalContents:
    """Read a journal back; only a missing file or a missing header is an error (exit 2)."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise UsageError(f"no journal at {path}: nothing to resume") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the journal: {exc.strerror or exc}") from None
    header: JournalHeader | None = None
    attempts: dict[str, Attempt] = {}
    skipped: list[tuple[int, str]] = []
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            record = _read_line(raw)
            if isinstance(record, str):
                skipped.append((number, record))
            elif isinstance(record, JournalHeader):
                header = record
            else:
                attempts[record.attempt_id] = record
    if header is None:
        raise UsageError(f"journal {path} has no readable header: not a probegate journal")
    return JournalContents(header, attempts, skipped, path_shown=str(path))


def _read_line(raw: bytes) -> JournalHeader | Attempt | str:
    """One line as the header or an attempt; why it could not be read, as text, otherwise."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8 (cut inside a character?)"
    try:
        obj = json.loads(text)
    except ValueError:  # JSONDecodeError, and numbers Python refuses to convert
        return "not complete JSON (cut short?)"
    except RecursionError:
        return "nested too deeply"
    if not isinstance(obj, dict):
        return "not a journal record"
    kind = obj.get("kind")
    if kind == HEADER_KIND:
        try:
            return JournalHeader.model_validate(obj)
        except ValidationError:
            return "not a valid journal header"
    if kind != ATTEMPT_KIND:
        return "not a journal record"
    try:
        return Attempt.model_validate(obj.get("attempt"))
    except (ValidationError, RecursionError):
        return "not a valid attempt"
