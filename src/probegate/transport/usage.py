"""What one exchange with a peer (a target, a guard, the judge) cost, and how it can fail.

A failed exchange raises :class:`TransportError` so the attempt ends *unjudged* with a reason,
never resisted (docs/scoring.md).
"""

from __future__ import annotations

from dataclasses import dataclass


class TransportError(Exception):
    """The peer could not be asked or its answer could not be read; the attempt is unjudged."""

    def __init__(self, reason: str, *, fatal: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        # fatal: the target as a whole is unusable (bad credentials, wrong URL), stop the scan.
        self.fatal = fatal


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
