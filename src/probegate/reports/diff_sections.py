"""What a comparison of two scans says, in the order it says it, for both of its renderings.

``diff_markdown`` lays it out for a job summary and ``diff_text`` for a terminal; the buckets,
their titles and what each means (docs/gating.md) are written once, here, so the two never say
different things. Pure: no clock, no file system.
"""

from __future__ import annotations

from dataclasses import dataclass

from probegate.models.comparison import Comparison, FindingRef
from probegate.reports.headline import NO_SCORE, unjudged_note

# What a comparison decided on, named once for every rendering.
METHOD = "one-sided Fisher exact test, Benjamini-Hochberg over {tests} test(s)"

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
            "Changed beyond noise",
            c.changed,
            about="In both scans, their counts rose (worse: a regression unless suppressed) or "
            "fell (better) beyond chance.",
            reasons=any(r.suppressed for r in c.changed),
        ),
        Bucket(
            "Fixed findings",
            c.fixed,
            about="This scan judged these probes and saw them resisted. Refresh the baseline "
            "(`probegate compare BASELINE CURRENT --write-baseline BASELINE`) to drop them.",
        ),
        Bucket(
            "Within noise",
            c.within_noise,
            about="On one side only, but their counts do not differ beyond chance: a sampled "
            "model does that. Neither new nor fixed; "
            '"too few attempts" means no count could have shown a change '
            '(docs/gating.md, "Sampled models").',
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
    ]
    if c.level is not None:
        worse = sum(1 for r in c.changed if r.change == "worse")
        out.append(("changed", f"{len(c.changed)} ({worse} worse)"))
    out += [
        ("fixed", str(len(c.fixed))),
        (
            "persisting",
            f"{len(c.persisting)} ({sum(1 for f in c.persisting if f.suppressed)} suppressed)",
        ),
    ]
    if c.level is not None:
        out.append(("within noise", str(len(c.within_noise))))
    out.append(("not re-judged", str(len(c.unconfirmed))))
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


def method(c: Comparison) -> str:
    """What the comparison decided on, in one sentence; "" for one written before counts."""
    if c.level is None:
        return ""
    return (
        f"New, fixed and changed are decided on counts (vulnerable of judged attempts) at the "
        f"level {c.level:g}: {METHOD.format(tests=c.tests)}."
    )


def aivss_change(c: Comparison) -> str:
    """The score's change, and what of it is beyond noise when the noise moved it."""
    text = signed(c.aivss_delta)
    beyond = c.aivss_delta_beyond_noise
    if beyond is not None and beyond != c.aivss_delta:
        text += f" ({signed(beyond)} beyond noise)"
    return text + ("" if c.score_gated else " (not gated)")


def versus(ref: FindingRef) -> str:
    """A finding's counts, baseline to current: ``0 of 30 -> 18 of 30``; "" when the
    comparison kept none."""
    if ref.baseline_counts is None and ref.current_counts is None:
        return ""
    was = ref.baseline_counts.text() if ref.baseline_counts else "not judged"
    now = ref.current_counts.text() if ref.current_counts else "not judged"
    text = f"{was} -> {now}"
    if ref.confirm_counts is not None:
        text += f" (confirm runs {ref.confirm_counts.text()})"
    if ref.p_value is not None:
        text += f", p {ref.p_value:.2g}"
    if ref.too_few_attempts:
        text += ", too few attempts to tell"
    return text


CONFIRM_HEADERS = ("probe", "first run", "reproduced", "pooled", "baseline", "decision")


@dataclass(frozen=True)
class ConfirmRow:
    """One probe ``--confirm N`` ran again: its counts in the first run, in the confirm runs
    (what reproduced) and pooled, the baseline's, and the bucket the pooled count landed in."""

    probe_id: str
    first: str
    reproduced: str
    pooled: str
    baseline: str
    decision: str

    def cells(self) -> tuple[str, str, str, str, str, str]:
        """The row under :data:`CONFIRM_HEADERS`."""
        return (
            self.probe_id,
            self.first,
            self.reproduced,
            self.pooled,
            self.baseline,
            self.decision,
        )


def confirm_heading(c: Comparison) -> str:
    """What ``--confirm N`` did, in one line; "" without it."""
    conf = c.confirmation
    if conf is None:
        return ""
    stopped = "" if conf.stopped_reason == "completed" else f"; stopped: {conf.stopped_reason}"
    again = sum(1 for p in conf.probes if p.confirm.vulnerable)
    return (
        f"The probes of {len(conf.probes)} finding(s) the baseline lacked or held less often "
        f"ran {conf.runs} more time(s), pooled with the first run{stopped}: {again} of "
        f"{len(conf.probes)} reproduced."
    )


def confirm_rows(c: Comparison) -> list[ConfirmRow]:
    """Per confirmed probe: its first run, its confirm runs, the pooled and the baseline's
    counts, the decision."""
    if c.confirmation is None:
        return []
    refs = {r.probe_id: (bucket, r) for bucket, rs in _decided(c) for r in rs}
    rows = []
    for probe in c.confirmation.probes:
        bucket, ref = refs.get(probe.probe_id, ("not compared", None))
        if ref is not None and ref.p_value is not None:
            bucket += f", p {ref.p_value:.2g}"
        if ref is not None and ref.too_few_attempts:
            bucket += ": too few attempts to tell"
        was = ref.baseline_counts.text() if ref and ref.baseline_counts else "not judged"
        pooled = ref.current_counts.text() if ref and ref.current_counts else "not judged"
        reproduced = probe.confirm.text()
        if probe.confirm.judged != probe.planned:
            reproduced += f" ({probe.planned} planned)"
        rows.append(ConfirmRow(probe.probe_id, probe.first.text(), reproduced, pooled, was, bucket))
    return rows


def _decided(c: Comparison) -> list[tuple[str, list[FindingRef]]]:
    return [
        ("new: a regression", c.new),
        ("new, suppressed", c.new_suppressed),
        *[
            (f"changed: {r.change}" + (" (suppressed)" if r.suppressed else ""), [r])
            for r in c.changed
        ],
        ("persisting", c.persisting),
        ("within noise", c.within_noise),
    ]
