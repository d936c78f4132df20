"""The guard section shared by the Markdown and HTML reports: label/value rows.

The ``guard`` section of a report is free-form JSON (a stored report may come from anywhere),
so every value is read defensively and rendered as text; each emitter escapes the rows itself.
"""

from __future__ import annotations

from typing import Any

_EVENT_KEYS = ("evaluated", "blocked", "allowed", "modified", "unjudged", "failed")


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _num(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return f"{value:g}"


def guard_rows(guard: dict[str, Any]) -> list[tuple[str, str]]:
    """What the guard in front of the agent evaluated, stopped and let through, as rows."""
    rows: list[tuple[str, str]] = []
    for key in _EVENT_KEYS:
        value = _num(_get(guard, "events", key))
        if value is not None:
            rows.append((f"attack events {key}", value))
    size, blocked = _num(_get(guard, "benign", "size")), _num(_get(guard, "benign", "blocked"))
    rate = _get(guard, "benign", "false_positive_rate")
    if size is not None and blocked is not None:
        shown = f"{blocked} of {size}"
        if _num(rate) is not None:
            shown += f" ({float(rate):.0%})"
        rows.append(("benign messages blocked (false positives)", shown))
    for key, label in (("latency_ms", "guard latency"), ("round_trip_ms", "round trip")):
        p50, p95 = _num(_get(guard, "timing", key, "p50")), _num(_get(guard, "timing", key, "p95"))
        if p50 is not None and p95 is not None:
            rows.append((f"{label} p50 / p95", f"{p50} / {p95} ms"))
    return rows
