"""The one place that reads the clock, so reports are reproducible under SOURCE_DATE_EPOCH."""

from __future__ import annotations

import hashlib
import os
import secrets
from datetime import UTC, datetime


def source_date_epoch() -> int | None:
    value = os.environ.get("SOURCE_DATE_EPOCH")
    if value is None or not value.strip():
        return None
    try:
        return int(value)
    except ValueError:
        return None


def pinned() -> bool:
    """The clock is pinned: reports must not show timings (durations are 0)."""
    return source_date_epoch() is not None


def now() -> datetime:
    epoch = source_date_epoch()
    if epoch is not None:
        return datetime.fromtimestamp(epoch, tz=UTC)
    return datetime.now(tz=UTC)


def real_now() -> datetime:
    """The real time even when the clock is pinned: for what never reaches a report (since when
    a process holds a scan's lock, engine/lock.py)."""
    return datetime.now(tz=UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_scan_id(fingerprint: str) -> str:
    """Random per scan; derived from the scan's inputs when SOURCE_DATE_EPOCH pins the clock."""
    epoch = source_date_epoch()
    if epoch is not None:
        return "pg-" + hashlib.sha256(f"{epoch}:{fingerprint}".encode()).hexdigest()[:12]
    return "pg-" + secrets.token_hex(6)
