"""What the guard did across the scan: counts per stage, actions, spans, latencies, failures.

One :class:`GuardStats` is shared by every worker thread; :meth:`GuardStats.summary` turns it
into the report's typed ``guard`` section (``probegate.models.sections``, docs/guard.md).
"""

from __future__ import annotations

import math
import threading
from collections import Counter

from probegate.clock import pinned
from probegate.models.sections import (
    BenignNotRun,
    BenignRun,
    GuardEventCounts,
    GuardSpans,
    GuardSummary,
    Percentiles,
    TimingKey,
)
from probegate.models.transcript import GuardAction, GuardStage
from probegate.targets.guard.events import GuardVerdict, Rewrite

MAX_FAILURE_REASONS = 5
STAGES: tuple[GuardStage, ...] = ("tools", "input", "tool_call", "tool_result", "output")


def percentiles(values: list[float]) -> Percentiles | None:
    """Nearest-rank p50/p95 (and the sample count), or None without samples."""
    if not values:
        return None
    ordered = sorted(values)

    def rank(p: float) -> float:
        return round(ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)], 3)

    return Percentiles(p50=rank(50), p95=rank(95), n=len(ordered))


class GuardStats:
    """What the guard did across the scan; shared by every worker thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.stages = {stage: GuardEventCounts() for stage in STAGES}
        self.actions: Counter[GuardAction] = Counter()
        self.spans_applied = 0
        self.spans_unresolved = 0
        self.obligations_ignored = 0
        self.latency_ms: list[float] = []
        self.round_trip_ms: list[float] = []
        self.handler_ms: list[float] = []
        self.network_delay_ms: list[float] = []
        self.failures: list[str] = []

    def verdict(self, stage: GuardStage, verdict: GuardVerdict, round_trip_ms: float) -> None:
        with self._lock:
            counts = self.stages[stage]
            counts.evaluated += 1
            if verdict.decision == "block":
                counts.blocked += 1
            else:
                counts.allowed += 1
            if verdict.unjudged:
                counts.unjudged += 1
            self.obligations_ignored += len(verdict.obligations)
            if verdict.latency_ms is not None:
                self.latency_ms.append(verdict.latency_ms)
            self.round_trip_ms.append(round_trip_ms)
            handler = verdict.timing.handler_ms() if verdict.timing is not None else None
            if handler is not None and handler >= 0:
                self.handler_ms.append(handler)
                # (received back - dispatched) - (responded_at - received_at) is the round
                # trip's network time with the two clocks' offset cancelled (docs/guard.md).
                self.network_delay_ms.append(max(0.0, round_trip_ms - handler))

    def failure(self, stage: GuardStage, reason: str, *, verdict_less: bool = True) -> None:
        """Why an attempt ended unjudged at the guard; ``verdict_less``: no verdict came back."""
        with self._lock:
            if verdict_less:
                self.stages[stage].failed += 1
            if reason not in self.failures and len(self.failures) < MAX_FAILURE_REASONS:
                self.failures.append(reason)

    def enforced(self, stage: GuardStage, action: GuardAction, rewrite: Rewrite | None) -> None:
        with self._lock:
            self.actions[action] += 1
            if action == "modified":
                self.stages[stage].modified += 1
            if rewrite is not None:
                self.spans_applied += rewrite.applied
                self.spans_unresolved += rewrite.unresolved

    def summary(
        self,
        *,
        url: str,
        behind: str,
        http_status: dict[int, int],
        benign: BenignRun | BenignNotRun,
    ) -> GuardSummary:
        """The report's ``guard`` section; timings are left out under a pinned clock."""
        with self._lock:
            totals = GuardEventCounts()
            for counts in self.stages.values():
                totals = totals.plus(counts)
            timing: dict[TimingKey, Percentiles] = {}
            if not pinned():
                measured: dict[TimingKey, list[float]] = {
                    "latency_ms": self.latency_ms,
                    "round_trip_ms": self.round_trip_ms,
                    "handler_ms": self.handler_ms,
                    "network_delay_ms": self.network_delay_ms,
                }
                for key, values in measured.items():
                    summary = percentiles(values)
                    if summary is not None:
                        timing[key] = summary
            statuses = dict(sorted(http_status.items()))
            return GuardSummary(
                url=url,
                behind=behind,
                events=totals,
                by_stage={s: c.model_copy() for s, c in self.stages.items()},
                actions=dict(sorted(self.actions.items())),
                spans=GuardSpans(applied=self.spans_applied, unresolved=self.spans_unresolved),
                obligations_ignored=self.obligations_ignored,
                failures=list(self.failures),
                timing=timing,
                http_status={str(k): v for k, v in statuses.items()},
                refusals={str(k): v for k, v in statuses.items() if k != 200},
                benign=benign,
            )
