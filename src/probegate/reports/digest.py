"""What a reader needs first, in words: why the scan stopped, whether its score counts, what it
found in one line per finding, and why attempts went unjudged, grouped by cause with the fix.

The terminal summary, ``summary.md`` and ``report.html`` all say these things, so they are
decided once here, as plain text from the report alone (no clock, no file system). Each emitter
escapes the text for its own medium; nothing here is trusted to be safe markup.

Unjudged attempts are grouped by *cause*, not by their exact reason string: a 500 from the
target with twenty different bodies is one problem with one fix, and listing 150 near-identical
rows hides the one line that matters (docs/report-format.md, "Unjudged attempts"). The cause is
the attempt's own typed field (models/causes.py), never read back from its reason; only a cause
nobody named (``other``) is grouped by the shape of its reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from probegate.models.causes import CAUSE_TEXT, Cause
from probegate.models.report import Finding, ScanReport, UnjudgedAttempt
from probegate.models.transcript import text_at
from probegate.scoring import CONDITION_WORDS

# How many probe ids a group names before "and N more".
GROUP_PROBES = 3


@dataclass
class ReasonGroup:
    """Unjudged attempts that share one cause."""

    cause: Cause
    count: int = 0
    probes: list[str] = field(default_factory=list)
    example: str = ""

    @property
    def label(self) -> str:
        return CAUSE_TEXT[self.cause].label or self.example

    @property
    def fix(self) -> str:
        return CAUSE_TEXT[self.cause].fix

    def probes_text(self, limit: int = GROUP_PROBES) -> str:
        shown = ", ".join(self.probes[:limit])
        more = len(self.probes) - limit
        return shown + (f" and {more} more" if more > 0 else "")


def replies_read(report: ScanReport) -> bool:
    """Whether any reply of the scan was read: an attempt was judged, so the target answers in
    its kind's shape, and a reply that could not be read was a transient fault, not a wrong
    ``--protocol``."""
    return any(r.vulnerable or r.resisted for r in report.results)


def unjudged_groups(report: ScanReport) -> list[ReasonGroup]:
    """The report's unjudged attempts by cause (:func:`group_unjudged`)."""
    return group_unjudged(report.unjudged, replies_read=replies_read(report))


def group_unjudged(
    items: Iterable[UnjudgedAttempt], *, replies_read: bool = True
) -> list[ReasonGroup]:
    """The unjudged attempts by cause, largest group first; an unknown reason is its own group.

    Unreadable replies are a flaky endpoint's when others were read (``replies_read``), and a
    wrong protocol's when none was.
    """
    groups: dict[str, ReasonGroup] = {}
    for item in items:
        cause = item.cause
        if cause is Cause.UNREADABLE and not replies_read:
            cause = Cause.BAD_REPLY
        key = cause.value if cause is not Cause.OTHER else "other:" + _shape(item.reason)
        group = groups.setdefault(key, ReasonGroup(cause, example=item.reason))
        group.count += 1
        if item.probe_id not in group.probes:
            group.probes.append(item.probe_id)
    return sorted(groups.values(), key=lambda g: (-g.count, g.label))


def _shape(reason: str) -> str:
    """A reason with its numbers and quoted parts blanked, so near-identical ones group."""
    return re.sub(r"\d+", "N", re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", reason))[:120]


def stop_text(report: ScanReport) -> str:
    """Why the scan ended, in one sentence."""
    done = report.completeness
    ran = f"{done.turns_used} of {done.turns_planned} planned attempts ran" if done else ""
    budget = report.budget
    if report.stopped_reason == "completed":
        return f"ran to the end: {ran}" if ran else "ran to the end"
    if report.stopped_reason == "budget":
        spent = ""
        if budget is not None and budget.max_requests is not None:
            spent = f"{budget.requests_used} of --max-requests {budget.max_requests} requests used"
        elif budget is not None and budget.cap_usd is not None:
            spent = f"${budget.spent_usd:.2f} of --budget-usd {budget.cap_usd:.2f} spent"
        if spent and budget is not None:
            share = round(budget.soft_stop_fraction * 100)
            spent += f"; new attempts stop at {share}% so the ones running can finish"
        return (
            "stopped at the budget"
            + (f" ({spent})" if spent else "")
            + (f"; {ran}; raise the budget to run the rest" if ran else "")
        )
    if report.stopped_reason == "cancelled":
        return "interrupted" + (f": {ran}; the rest can be resumed" if ran else "")
    groups = unjudged_groups(report)
    why = f": {groups[0].label}" if groups else ""
    return f"stopped early, the target could not be judged{why}" + (f"; {ran}" if ran else "")


def authority_text(report: ScanReport) -> str:
    """Whether the score counts, and what that means for the gates."""
    authority = report.authority
    if authority.authoritative:
        return (
            "authoritative: full mode, real evaluation, every finding checked against its "
            "control, complete coverage; --fail-under can pass on this scan"
        )
    reasons = "; ".join(authority_reasons(report))
    return (
        f"not authoritative ({reasons}), so --fail-under exits 3 on this scan; confirmed "
        "findings still count for --fail-on and --baseline"
    )


def authority_reasons(report: ScanReport) -> list[str]:
    """Why the score does not count, each in words with its fix; never a condition's name.

    The report's own reasons come first; a report that names conditions without reasons (one
    read from another tool) gets each condition's words, and the top-level flags are read too,
    so a report whose flags disagree with its ``authority`` block still says why.
    """
    if report.authority.authoritative and report.mode_authoritative and report.scoring_valid:
        return []
    why = list(report.authority.reasons)
    failed = list(report.authority.failed)
    extra = []
    if not report.mode_authoritative and "mode_authoritative" not in failed:
        extra.append("mode_authoritative")
    # The top-level scoring_valid is every condition but the mode: named only when none is.
    if not report.scoring_valid and not set(failed) - {"mode_authoritative"}:
        extra.append("scoring_valid")
    failed += extra
    why += [CONDITION_WORDS[name] for name in extra] if why else []
    if not why:
        why = [CONDITION_WORDS.get(c, c) for c in failed] or [CONDITION_WORDS["authoritative"]]
    return why


def evidence_text(finding: Finding, limit: int = 100) -> str:
    """The finding's first evidence in a line: what the agent did, with the bait it carried."""
    if not finding.evidence:
        return finding.summary
    ev = finding.evidence[0]
    subject = ev.subject if len(ev.subject) <= limit else ev.subject[: limit - 1] + "…"
    place = _place(finding, ev.path)
    if place == "called":
        return f"called {subject} ({ev.category})"
    return f"{place}: {subject!r} ({ev.category})"


_TOOL_PATH = re.compile(r"^turns\.(\d+)\.tool_calls\.(\d+)\.(\w+)(?:\.(.+))?$")
_TURN_PATH = re.compile(r"^turns\.(\d+)\.(content|guard.*)$")


def _place(finding: Finding, path: str) -> str:
    """``send_email(to=…)``-style words for an evidence path, or the path itself."""
    match = _TOOL_PATH.match(path)
    if match and finding.transcript is not None:
        turn, call, part, rest = match.groups()
        name = text_at(finding.transcript, f"turns.{turn}.tool_calls.{call}.name")
        if name is not None:
            if part == "arguments" and rest:
                return f"called {name} with {rest}"
            if part == "name":
                return "called"
            return f"{name} {part}"
    match = _TURN_PATH.match(path)
    if match and match.group(2) == "content":
        return "replied"
    return path
