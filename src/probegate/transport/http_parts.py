"""The HTTP client's small parts (transport/http.py): a URL safe to show, what one failed try
was, a peer's answer passed on as it came, the client's counters and the ``Retry-After``
reader. Apart so the client module holds the client."""

from __future__ import annotations

import email.utils
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from probegate.models.causes import Cause
from probegate.transport.usage import TransportError


def public_url(url: str) -> str:
    """The URL without credentials or query string, safe to show in a report."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass
class Failure:
    """One failed try: why, whether another try may help, and how long the server asked."""

    reason: str
    retry: bool
    cause: Cause
    status: int | None = None
    retry_after: float | None = None
    fatal: bool = False
    # The connection failed before any reply came back (a pooled connection the peer had
    # just closed looks like this): :meth:`HttpClient.forward` tries once more.
    dropped: bool = False


class Dropped(TransportError):
    """The connection dropped before any reply (``forward`` tries once more)."""


@dataclass(frozen=True)
class Forwarded:
    """A peer's answer as it came: any status, its headers, its whole body (within the cap),
    and what the caller's ``parse`` read from it (:meth:`HttpClient.forward`)."""

    status: int
    headers: dict[str, str]
    body: bytes
    read: Any = None


@dataclass
class ClientStats:
    """Counters for tests and the bench; not part of any report."""

    tries: int = 0
    retries: int = 0
    ok: int = 0
    # Replies that came back but could not be read (not JSON, or not the protocol's shape).
    unreadable: int = 0
    by_status: dict[int, int] = field(default_factory=dict)


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = datetime.now(tz=UTC).timestamp() if now is None else now
    return max(0.0, when.timestamp() - current)
