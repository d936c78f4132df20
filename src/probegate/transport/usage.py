"""What one exchange with a peer (a target, a guard, the judge) cost, and how it can fail.

A failed exchange raises :class:`TransportError` so the attempt ends *unjudged* with a reason,
never resisted (docs/scoring.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from probegate.models.causes import Cause


class TransportError(Exception):
    """The peer could not be asked or its answer could not be read; the attempt is unjudged.

    ``cause`` is what the closing lines group it by and what fixes it (models/causes.py): it
    is given where the failure is seen, never read back from ``reason``.
    """

    def __init__(self, reason: str, *, cause: Cause, fatal: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.cause = cause
        # fatal: the target as a whole is unusable (bad credentials, wrong URL), stop the scan.
        self.fatal = fatal


class MalformedReply(TransportError):
    """The peer answered, but its body is not what the protocol needs (a proxy's HTML page,
    JSON cut off, an empty body, a body without the fields a reply must have).

    Missing evidence is a transient fault, like a 5xx: the HTTP client retries it with the same
    backoff and budget, and only after the retries is the attempt unjudged, with this reason
    (docs/targets.md, "Transient faults"). Raised by the ``parse`` a caller hands to
    :meth:`~probegate.transport.http.HttpClient.request_json`.
    """

    def __init__(self, reason: str, *, fatal: bool = False) -> None:
        super().__init__(reason, cause=Cause.UNREADABLE, fatal=fatal)


# How every reason for a body that could not be read begins, so a reader sees one kind of
# problem in one wording (its cause, Cause.UNREADABLE, is what code reads).
UNREADABLE = "unreadable reply"


@dataclass
class Usage:
    """What a session cost, accumulated across its requests."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
