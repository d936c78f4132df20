"""What a comparison of two scans says, in the order it says it, for both of its renderings.

``diff_markdown`` lays it out for a job summary and ``diff_text`` for a terminal; the buckets,
their titles and what each means (docs/gating.md) are written once, here, so the two never say
different things. Pure: no clock, no file system.
"""

from __future__ import annotations

from dataclasses import dataclass

from probegate.models.comparison import Comparison, FindingRef
from probegate.reports.headline import NO_SCORE, unjudged_note

DEFAULT_MAX_ROWS = 50


@dataclass(frozen=True)
class Bucket:
    """One list of findings a comparison shows, with what it means."""

    title: str
    refs: list[FindingRef]
    # One sentence under the title; `code` in it is a command to type.
    about: str = ""
    # Whether each finding's suppression reason is shown.
    reasons: bool = False


def buckets(c: Comparison) -> list[Bucket]:
    """The finding buckets, most important first; a renderer skips the empty ones."""
    out = [
        Bucket("New findings", c.new),
        Bucket(
            "New findings, suppressed",
            c.new_suppressed,
            about="Accepted in the suppression file: listed, not a regression.",
            reasons=True,
        ),
        Bucket(
            "Fixed findings",
            c.fixed,
            about="This scan judged these probes and saw them resisted. Refresh the baseline "
            "(`probegate compare BASELINE CURRENT --write-baseline BASELINE`) to drop them.",
        ),
        Bucket(
            "Not re-judged",
            c.unconfirmed,
            about="In the baseline, but this scan did not judge their probes (not run, "
            "unjudged or not applicable), so they are neither fixed nor persisting.",
        ),
    ]
    if c.common_probes_only:
        out.append(
            Bucket("Not compared", c.not_compared, about="Their probes are not in both scans.")
        )
    return out


def counts(c: Comparison) -> list[tuple[str, str]]:
    """``(label, count)`` of every bucket, for the one line that sums the comparison up."""
    out = [
        ("new", str(len(c.new))),
        ("new but suppressed", str(len(c.new_suppressed))),
        ("fixed", str(len(c.fixed))),
        (
            "persisting",
            f"{len(c.persisting)} ({sum(1 for f in c.persisting if f.suppressed)} suppressed)",
        ),
        ("not re-judged", str(len(c.unconfirmed))),
    ]
    if c.common_probes_only:
        out.append(("not compared", str(len(c.not_compared))))
    return out


MISMATCH_TAIL = (
    "Only the probes present in both scans are compared, and the score change is not gated."
)


def signed(value: float) -> str:
    """A change with its sign (``+3``, ``-12``), and ``0`` for none."""
    if value == 0:
        return "0"
    return f"{value:+g}"


def num(value: float | None) -> str:
    """A category's score, ``n/a`` where that side did not score it."""
    return "n/a" if value is None else f"{value:g}"


def side(score: float | None, state: str, unjudged: int) -> str:
    """One side of a category as every format shows it: ``87.5 (3 unjudged)``, or ``n/a
    (not applicable)`` and the like (docs/scoring.md, "Categories"); a comparison written
    before states were kept shows the score alone."""
    if score is not None:
        return num(score) + unjudged_note(unjudged)
    return NO_SCORE.get(state, "n/a")
