"""Shared limits every request to a target passes through: rate, request budget, dollar budget.

One :class:`RequestGate` per scan, shared by all worker threads. ``acquire`` blocks for the
rate limit and raises :class:`BudgetExhausted` at the hard cap; the runner stops scheduling new
attempts at the soft cap (80 % by default) so a scan finishes cleanly instead of being cut.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass


class BudgetExhausted(Exception):
    """The hard request or dollar cap is reached; the attempt in flight ends unjudged."""


@dataclass
class BudgetState:
    requests: int = 0
    cost_usd: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class RequestGate:
    """Rate limiter (token bucket) plus request/dollar accounting, thread-safe."""

    def __init__(
        self,
        *,
        rps: float | None = None,
        max_requests: int | None = None,
        budget_usd: float | None = None,
        soft_stop_fraction: float = 0.8,
    ) -> None:
        self.rps = rps
        self.max_requests = max_requests
        self.budget_usd = budget_usd
        self.soft_stop_fraction = soft_stop_fraction
        self.state = BudgetState()
        self._lock = threading.Lock()
        self._next_slot = time.monotonic()

    def acquire(self) -> None:
        """Wait for a rate slot and count one request; raise at the hard caps."""
        with self._lock:
            if self.max_requests is not None and self.state.requests >= self.max_requests:
                raise BudgetExhausted(f"request budget of {self.max_requests} exhausted")
            if self.budget_usd is not None and self.state.cost_usd >= self.budget_usd:
                raise BudgetExhausted(f"budget of ${self.budget_usd:.2f} exhausted")
            self.state.requests += 1
            wait = 0.0
            if self.rps:
                now = time.monotonic()
                slot = max(now, self._next_slot)
                self._next_slot = slot + 1.0 / self.rps
                wait = slot - now
        if wait > 0:
            time.sleep(wait)

    def record_usage(self, prompt_tokens: int, completion_tokens: int, cost_usd: float) -> None:
        with self._lock:
            self.state.prompt_tokens += prompt_tokens
            self.state.completion_tokens += completion_tokens
            self.state.cost_usd += cost_usd

    def soft_stop(self) -> bool:
        """True once the scan should stop starting new attempts."""
        with self._lock:
            if self.max_requests is not None and (
                self.state.requests >= self.soft_stop_fraction * self.max_requests
            ):
                return True
            return self.budget_usd is not None and (
                self.state.cost_usd >= self.soft_stop_fraction * self.budget_usd
            )
