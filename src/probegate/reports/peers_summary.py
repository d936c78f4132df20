"""The ``peers`` section shared by the Markdown, HTML and PDF reports: label/value rows.

The section is typed (``probegate.models.sections.PeersSummary``), read once with the report;
it holds counts only, so the rows are the report's own words and numbers. Each emitter still
escapes them, as it does every row.
"""

from __future__ import annotations

from pydantic import BaseModel

from probegate.models.sections import PeersSummary

TITLE = "A2A peers served by probegate"
# Each reason a count is kept under, in words (models/sections.py says what each one is).
_REASONS = {
    "ended": "after its conversation ended",
    "unknown_peer": "to a peer not declared",
    "malformed": "malformed",
    "oversized": "too large",
    "flood": "past the message limit",
    "requests": "to an address never issued",
    "refused": "over the connection cap",
    "timed_out": "timed out",
    "invalid": "not HTTP",
}


def peer_rows(peers: PeersSummary) -> list[tuple[str, str]]:
    """What the agent did with the A2A peers the scan served it (target.peers), as rows."""
    return [
        ("conversations", str(peers.conversations)),
        ("agent cards served", str(peers.cards)),
        ("messages received", str(peers.messages)),
        ("tasks answered", str(peers.tasks)),
        ("requests refused", _by_reason(peers.rejected)),
        ("traffic without a token (not the agent's)", _by_reason(peers.unauthenticated)),
    ]


def _by_reason(counts: BaseModel) -> str:
    """The total, then each reason that counted any, in the section's field order."""
    reasons = {name: getattr(counts, name) for name in type(counts).model_fields}
    shown = [f"{n} {_REASONS.get(name, name)}" for name, n in reasons.items() if n]
    total = str(sum(reasons.values()))
    return f"{total} ({', '.join(shown)})" if shown else total
