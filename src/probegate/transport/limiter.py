"""The limits every request a scan sends passes through: rate, budgets, time.

One :class:`RequestLimiter` per scan, shared by all worker threads and by every peer the scan
talks to (the target, a guard in front of it, the LLM judge), so ``--rps``, ``--max-requests``
and ``--budget-usd`` bound the scan as a whole (docs/targets.md). ``acquire`` blocks for the
rate limit and raises :class:`BudgetExhausted` at the hard cap; the runner stops scheduling new
attempts at the soft cap (80 % by default) so a scan finishes cleanly instead of being cut.
When the runner stops a scan for good (fatal target error, hopeless target, interrupt) it
``close``\\ s the limiter, so attempts in flight end at once instead of spending their retries
on a target that is known to be unusable, or waiting for a slow agent's reply: whoever waits
on the scan's behalf (the HTTP client's requests in flight, an in-process agent's call) asks
to be told with :meth:`RequestLimiter.when_closed`, and stops waiting.

Time is a budget too (docs/targets.md, "Deadline"): ``deadline`` seconds after the limiter is
made, no request is sent, every wait (a rate slot, a backoff, a ``Retry-After`` pause) ends,
and the HTTP client cuts the request in flight. ``max_wait`` caps the seconds the whole scan
spends paused on ``Retry-After``: a server that asks every reply to wait two minutes would
otherwise hold the scan for hours. Waits go through :meth:`RequestLimiter.sleep`, which wakes
as soon as the limiter is closed, so a stopped scan never sleeps out a pause.

It lives in the transport layer, below the engine, the targets and the judge, because all
three spend from it and none of them owns it (docs/architecture.md).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from probegate.models.causes import Cause


class BudgetExhausted(Exception):
    """The hard request or dollar cap is reached; the attempt in flight ends unjudged."""

    def __init__(self, reason: str, *, cause: Cause = Cause.BUDGET) -> None:
        super().__init__(reason)
        self.cause = cause


class ScanStopped(BudgetExhausted):
    """The runner stopped the scan, or its deadline passed; no further request may be sent.
    ``cause`` says which (the runner gives its stop's cause to :meth:`RequestLimiter.close`)."""


@dataclass
class BudgetState:
    requests: int = 0
    cost_usd: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class RequestLimiter:
    """Rate limiter (evenly spaced slots) plus request/dollar accounting, thread-safe."""

    def __init__(
        self,
        *,
        rps: float | None = None,
        max_requests: int | None = None,
        budget_usd: float | None = None,
        soft_stop_fraction: float = 0.8,
        deadline: float | None = None,
        max_wait: float | None = None,
    ) -> None:
        self.rps = rps
        self.max_requests = max_requests
        self.budget_usd = budget_usd
        self.soft_stop_fraction = soft_stop_fraction
        self.deadline = deadline
        self.max_wait = max_wait
        self.state = BudgetState()
        self._lock = threading.Lock()
        self._next_slot = time.monotonic()
        self._closed: tuple[str, Cause] | None = None
        self._wake = threading.Event()
        self._on_close: dict[int, Callable[[], None]] = {}
        self._listeners = itertools.count()
        self._deadline_at = None if deadline is None else time.monotonic() + deadline
        self._waited = 0.0
        self._priced = 0
        self._unpriced = 0

    # -- time ----------------------------------------------------------------------------
    @property
    def deadline_at(self) -> float | None:
        """When the scan's deadline passes, on the ``time.monotonic`` clock; None: never."""
        return self._deadline_at

    def remaining(self) -> float | None:
        """Seconds until the deadline (0 once it passed); None without a deadline."""
        if self._deadline_at is None:
            return None
        return max(0.0, self._deadline_at - time.monotonic())

    def expired(self) -> bool:
        return self._deadline_at is not None and time.monotonic() >= self._deadline_at

    def _deadline_passed(self) -> ScanStopped:
        return ScanStopped(
            f"the scan's deadline of {self.deadline:g}s passed", cause=Cause.DEADLINE
        )

    def _stopped(self) -> ScanStopped:
        reason, cause = self._closed or ("scan stopped", Cause.STOPPED)
        return ScanStopped(reason, cause=cause)

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, unless the scan stops first: then raise :class:`ScanStopped`."""
        remaining = self.remaining()
        limit = seconds if remaining is None else min(seconds, remaining)
        woken = self._wake.wait(max(limit, 0.0))
        if self.expired() or (not woken and remaining is not None and remaining <= seconds):
            raise self._deadline_passed()
        if woken:
            raise self._stopped()

    def check(self) -> None:
        """Raise :class:`ScanStopped` once the scan stopped or its deadline passed."""
        if self.expired():
            raise self._deadline_passed()
        if self._closed is not None:
            raise self._stopped()

    def allow_wait(self, seconds: float) -> bool:
        """Take ``seconds`` of ``Retry-After`` pause from the scan's total, if it has them."""
        with self._lock:
            if self.max_wait is not None and self._waited + seconds > self.max_wait:
                return False
            self._waited += seconds
            return True

    # -- requests ------------------------------------------------------------------------
    def acquire(self) -> None:
        """Wait for a rate slot and count one request; raise at the hard caps."""
        if self.expired():
            raise self._deadline_passed()
        with self._lock:
            if self._closed is not None:
                raise self._stopped()
            if self.max_requests is not None and self.state.requests >= self.max_requests:
                raise BudgetExhausted(f"request budget of {self.max_requests} exhausted")
            if self.budget_usd is not None and self._projected_cost(1) > self.budget_usd:
                raise BudgetExhausted(f"budget of ${self.budget_usd:.2f} exhausted")
            self.state.requests += 1
            wait = 0.0
            if self.rps:
                now = time.monotonic()
                slot = max(now, self._next_slot)
                self._next_slot = slot + 1.0 / self.rps
                wait = slot - now
        if wait > 0:
            self.sleep(wait)

    def _projected_cost(self, more: int) -> float:
        """Spent so far plus what the requests in flight and ``more`` will likely cost.

        A reply's cost is known only after it arrives, so without this a dollar cap would be
        overshot by every request in flight at the moment it is reached.
        """
        if not self._priced:
            return self.state.cost_usd
        per_request = self.state.cost_usd / self._priced
        in_flight = max(0, self.state.requests - self._priced - self._unpriced)
        return self.state.cost_usd + per_request * (in_flight + more)

    def record_usage(self, prompt_tokens: int, completion_tokens: int, cost_usd: float) -> None:
        with self._lock:
            self._priced += 1
            self.state.prompt_tokens += prompt_tokens
            self.state.completion_tokens += completion_tokens
            self.state.cost_usd += cost_usd

    def record_failure(self) -> None:
        """A request that ended without a reply (and so without a cost) is no longer in flight."""
        with self._lock:
            self._unpriced += 1

    def preload(self, *, requests: int, cost_usd: float) -> None:
        """Count what a resumed scan already spent before this process started."""
        with self._lock:
            self.state.requests += requests
            self.state.cost_usd += cost_usd
            self._priced += requests

    def close(self, reason: str, cause: Cause = Cause.STOPPED) -> None:
        """Refuse every further request with ``reason``, as ``cause``; tell whoever asked to
        be told."""
        with self._lock:
            if self._closed is None:
                self._closed = (reason, cause)
            told, self._on_close = list(self._on_close.values()), {}
        self._wake.set()
        for tell in told:
            tell()

    @property
    def closed(self) -> bool:
        """Whether the scan stopped: no request may be sent."""
        return self._closed is not None

    def when_closed(self, tell: Callable[[], None]) -> Callable[[], None]:
        """Call ``tell`` when the scan stops (at once if it has); the result forgets it."""
        with self._lock:
            closed = self._closed is not None
            if not closed:
                key = next(self._listeners)
                self._on_close[key] = tell
        if closed:
            tell()
            return lambda: None

        def forget() -> None:
            with self._lock:
                self._on_close.pop(key, None)

        return forget

    def admits(self, requests: float, cost_usd: float) -> bool:
        """Whether spending this much more would stay under the soft caps."""
        with self._lock:
            if self.max_requests is not None and (
                self.state.requests + requests > self.soft_stop_fraction * self.max_requests
            ):
                return False
            return self.budget_usd is None or (
                self.state.cost_usd + cost_usd <= self.soft_stop_fraction * self.budget_usd
            )

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


class Unlimited:
    """The limiter of a request no scan spends from (the proxy's upstream calls, a one-off
    request): nothing to wait for, count or stop, so the HTTP client asks it like any other
    and never branches on whether there is one."""

    deadline_at: float | None = None
    max_wait: float | None = None

    def acquire(self) -> None:
        return None

    def check(self) -> None:
        return None

    def record_failure(self) -> None:
        return None

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def allow_wait(self, seconds: float) -> bool:
        return True

    def when_closed(self, tell: Callable[[], None]) -> Callable[[], None]:
        return lambda: None


UNLIMITED = Unlimited()
# What the HTTP client spends from: a scan's limiter, or none.
Limits = RequestLimiter | Unlimited
