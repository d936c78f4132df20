"""The guard section shared by the Markdown and HTML reports: label/value rows.

The section is typed (``probegate.models.sections.GuardSummary``), read once with the report;
the rows are plain text and each emitter escapes them itself.
"""

from __future__ import annotations

from probegate.models.sections import BenignRun, GuardSummary, TimingKey

_EVENT_KEYS = ("evaluated", "blocked", "allowed", "modified", "unjudged", "failed")
_TIMINGS: tuple[tuple[TimingKey, str], ...] = (
    ("latency_ms", "guard latency"),
    ("round_trip_ms", "round trip"),
)


def guard_rows(guard: GuardSummary) -> list[tuple[str, str]]:
    """What the guard in front of the agent evaluated, stopped and let through, as rows."""
    rows = [(f"attack events {key}", f"{getattr(guard.events, key):g}") for key in _EVENT_KEYS]
    benign = guard.benign
    if isinstance(benign, BenignRun):
        shown = f"{benign.blocked:g} of {benign.size:g}"
        if benign.false_positive_rate is not None:
            shown += f" ({float(benign.false_positive_rate):.0%})"
        rows.append(("benign messages blocked (false positives)", shown))
    for key, label in _TIMINGS:
        measured = guard.timing.get(key)
        if measured is not None:
            rows.append((f"{label} p50 / p95", f"{measured.p50:g} / {measured.p95:g} ms"))
    return rows
