"""The judge's verdict cache: the same reply gets the same verdict, across runs and resumes.

A judge at temperature 0 still answers the same question differently now and then, and every
answer costs a call. So each valid answer is kept in the scan store (``--store
DIR/judge-cache/``, docs/judge.md), keyed by the probe and a digest of exactly what the judge
was asked (its prompt, the rubric, the data as sent, already redacted): asked again, the judge
is not called and the verdict is the one it gave.

A judge is who answers (:class:`JudgeIdentity`): the API, the endpoint, the model and the
version of the prompt. Each identity has its own directory, its own verdicts and its own
calibration record, so a judge at another base URL with the same ``--judge`` spec (a local
server instead of the provider, a proxy, another deployment) is calibrated before it is used
and never answers with another's verdicts.

Files are written atomically and privately (0600 in 0700 directories: the transcripts' quotes
are in them), read defensively (what does not parse as a verdict is a miss), and bounded: past
``max_entries`` the oldest are removed when the cache is opened. A cache that cannot be written
is not a failed scan: the verdict is used, only not kept. No file holds the endpoint itself
(its query string could carry a credential): only the spec and the identity's digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from probegate.canonical import canonical_bytes
from probegate.errors import UsageError
from probegate.files import read_bytes, write_atomic

MAX_ENTRIES = 20_000
ENTRY_MAX_BYTES = 16 * 1024
CALIBRATION_FILE = "calibration.json"
# A probe id is a safe directory name; anything else is hashed (docs/custom-probes.md ids).
_SAFE = re.compile(r"^[a-z0-9][a-z0-9.-]{0,127}$")


def endpoint_of(url: str) -> str:
    """The endpoint as part of a judge's identity: scheme and host in lower case, no user or
    password (the same server whoever signs in), no fragment."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), parts.query, ""))


@dataclass(frozen=True)
class JudgeIdentity:
    """Who answers: the API it speaks, the endpoint, the model and the prompt's version."""

    api: str
    endpoint: str
    model: str
    prompt: str

    @property
    def spec(self) -> str:
        """The ``--judge`` spec, as the report names the judge."""
        return f"{self.api}:{self.model}"

    @property
    def digest(self) -> str:
        return hashlib.sha256(canonical_bytes(asdict(self))).hexdigest()


class VerdictCache:
    """One judge's cached answers under ``directory`` (thread-safe; files are the state)."""

    def __init__(
        self, directory: Path, identity: JudgeIdentity, *, max_entries: int = MAX_ENTRIES
    ) -> None:
        self.identity = identity
        self.judge = identity.spec
        self.directory = directory / identity.digest[:16]
        self.max_entries = max_entries
        self.unwritable = False
        self._lock = threading.Lock()
        self._prune()

    def key(self, asked: Any) -> str:
        """The digest of what the judge is asked (any JSON value), with the judge's identity."""
        judge = self.identity.digest
        return hashlib.sha256(canonical_bytes({"judge": judge, "asked": asked})).hexdigest()

    def get(self, probe_id: str, key: str) -> dict[str, Any] | None:
        """The answer kept for ``key``, or None (absent, unreadable or not an object)."""
        path = self._path(probe_id, key)
        if not path.is_file():
            return None
        try:
            data = json.loads(read_bytes(path, max_bytes=ENTRY_MAX_BYTES))
        except (UsageError, ValueError):
            return None
        answer = data.get("answer") if isinstance(data, dict) else None
        return answer if isinstance(answer, dict) else None

    def put(self, probe_id: str, key: str, answer: dict[str, Any]) -> None:
        """Keep ``answer`` for ``key``; a write that fails only leaves it out of the cache."""
        entry = canonical_bytes({"judge": self.judge, "probe": probe_id, "answer": answer})
        if len(entry) > ENTRY_MAX_BYTES:
            return
        try:
            write_atomic(self._path(probe_id, key), entry, private=True)
        except UsageError:
            with self._lock:
                self.unwritable = True

    def calibrated(self, digest: str) -> bool:
        """Whether this judge passed the calibration sets of this ``digest``."""
        path = self.directory / CALIBRATION_FILE
        try:
            data = json.loads(read_bytes(path, max_bytes=ENTRY_MAX_BYTES))
        except (UsageError, ValueError):
            return False
        return (
            isinstance(data, dict)
            and data.get("passed") == digest
            and data.get("identity") == self.identity.digest
        )

    def mark_calibrated(self, digest: str, cases: int, cost: dict[str, float]) -> None:
        """Keep the pass, with what it cost (requests, tokens, seconds)."""
        record = {
            "judge": self.judge,
            "identity": self.identity.digest,
            "passed": digest,
            "cases": cases,
            "cost": cost,
        }
        try:
            write_atomic(self.directory / CALIBRATION_FILE, canonical_bytes(record), private=True)
        except UsageError:
            with self._lock:
                self.unwritable = True

    def _path(self, probe_id: str, key: str) -> Path:
        folder = (
            probe_id if _SAFE.match(probe_id) else hashlib.sha256(probe_id.encode()).hexdigest()
        )
        return self.directory / folder / f"{key}.json"

    def _prune(self) -> None:
        """Remove the oldest entries beyond ``max_entries`` (down to 90 % of it)."""
        if not self.directory.is_dir():
            return
        entries: list[tuple[float, str]] = []
        for root, _, files in os.walk(self.directory):
            for name in files:
                if name.endswith(".json") and name != CALIBRATION_FILE:
                    path = os.path.join(root, name)
                    try:
                        entries.append((os.stat(path).st_mtime, path))
                    except OSError:
                        continue
        if len(entries) <= self.max_entries:
            return
        entries.sort()
        for _, path in entries[: len(entries) - int(self.max_entries * 0.9)]:
            try:
                os.unlink(path)
            except OSError:
                continue
