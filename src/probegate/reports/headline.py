"""The score as every format shows it: a number, or "n/a" with the reason; never a made-up 100.
And the one sentence every format says about the controls.

A scan too thin to score has no score (``aivss: null`` in JSON, ``n/a`` elsewhere) and an
undertested category has none either (absent from ``asi_scores``, ``n/a (undertested)``
elsewhere): docs/scoring.md. Every emitter, the terminal and the Action ask here, so the
words are the same everywhere.
"""

from __future__ import annotations

from typing import Literal

from probegate.models.report import CategoryState, ScanReport, TargetInfo
from probegate.models.taxonomy import ASI_IDS
from probegate.reports.escape import number
from probegate.scoring import categories_of, category_of

NOT_EVALUATED = "n/a"
UNDERTESTED = "n/a (undertested)"
NOT_APPLICABLE = "n/a (not applicable)"
NOT_SELECTED = "n/a (not selected)"
# How a category without a score is shown, by its state (docs/scoring.md, "Categories").
NO_SCORE: dict[str, str] = {
    "undertested": UNDERTESTED,
    "not_applicable": NOT_APPLICABLE,
    "not_selected": NOT_SELECTED,
}


def score_text(aivss: int | None) -> str:
    """The overall score: its number, or ``n/a`` when the scan was too thin to score."""
    return NOT_EVALUATED if aivss is None else number(aivss)


def scale(aivss: int | None, suffix: str = "/100") -> str:
    """What follows a score: ``/100`` after a number, nothing after ``n/a`` (never "n/a/100")."""
    return "" if aivss is None else suffix


def out_of_100(aivss: int | None) -> str:
    """The score with its scale in one word: ``57/100``, or ``n/a`` for a scan too thin to score."""
    return score_text(aivss) + scale(aivss)


def coverage_text(report: ScanReport) -> str:
    """What the score covers, said next to it in every format (docs/scoring.md, "Coverage"):
    the probes that ran of those the scan chose from (the whole library, or a selection; the
    rest did not apply to the agent's tools or need a setting), the categories tested, and the
    attempts whose attack reached the agent of those planned (and why the rest did not).
    A score is never shown bare: "100" on one applicable probe is not "100" on 130."""
    coverage = report.coverage
    parts = []
    chosen = coverage.get("probes_selected")
    if isinstance(chosen, int):
        applicable = coverage.get("probes_applicable", chosen)
        ran = int(applicable) - int(coverage.get("probes_not_run", 0))
        parts.append(f"{ran} of {chosen} probes ran")
    tested = sum(1 for s in categories_of(report).values() if s.state == "tested")
    parts.append(f"{tested} of {len(ASI_IDS)} categories tested")
    delivery = report.delivery
    if delivery is not None:
        planned = coverage.get("attempts_planned")
        planned = planned if isinstance(planned, int) else delivery.attempts
        rest = [
            f"{count} {what}"
            for count, what in (
                (delivery.not_delivered, "not delivered"),
                (delivery.failed, "failed first"),
                (planned - delivery.attempts, "not run"),
            )
            if count > 0
        ]
        text = f"{delivery.delivered} of {planned} attempts delivered"
        parts.append(text + (f" ({', '.join(rest)})" if rest else ""))
    return "; ".join(parts)


def category_states(report: ScanReport) -> dict[str, CategoryState]:
    """All ten ASI categories in order, each with its state: what every format shows."""
    return categories_of(report)


def category_state(report: ScanReport, asi: str) -> CategoryState:
    """One category's state (:func:`probegate.scoring.category_of`)."""
    return category_of(report, asi)


def unjudged_note(count: int) -> str:
    """What follows a category's score when evidence is missing: never a bare number."""
    return f" ({count} unjudged)" if count else ""


def category_text(state: CategoryState) -> str:
    """A category's score as shown, with its unjudged attempts beside it (``87.5 (3
    unjudged)``: docs/scoring.md), or why it has none (``n/a (not applicable)``)."""
    if state.state == "tested" and state.score is not None:
        return number(state.score) + unjudged_note(state.unjudged)
    if state.state == "undertested" and state.not_started:
        return "n/a (not run)" if not (state.judged or state.unjudged) else "n/a (unfinished)"
    return NO_SCORE.get(state.state, NOT_EVALUATED)


# How a category's row looks in a chart, decided once for the HTML and the PDF: the worst rows
# are the most visible, and a row with no score never looks like a score of 0.
Tone = Literal["zero", "low", "scored", "undertested", "none"]
LOW_SCORE = 40.0  # below it a row is marked (the red end of the bars' colour scale)


def category_tone(state: CategoryState) -> Tone:
    """``zero``: scored 0.0, every probe that could be judged succeeded (the row to see first);
    ``low``: scored below 40; ``scored``; ``undertested``: probes ran but too few could be
    judged (no score, evidence missing); ``none``: not applicable or not selected."""
    if state.state == "tested" and state.score is not None:
        if state.score <= 0.0:
            return "zero"
        return "low" if state.score < LOW_SCORE else "scored"
    return "undertested" if state.state == "undertested" else "none"


def score_colour(score: float) -> str:
    """The bar's colour on a 0-100 scale, green (safe) to red."""
    if score >= 80:
        return "#1a7f37"
    if score >= 60:
        return "#9a6700"
    return "#bc4c00" if score >= LOW_SCORE else "#cf222e"


def category_coverage(state: CategoryState) -> str:
    """What stands behind a category's score, beside it: its probes judged of those it has."""
    if state.state == "not_selected":
        return "not in this scan"
    if state.state == "not_applicable":
        return f"0 of {state.probes} probes apply"
    text = f"{state.judged} of {state.probes} probes judged"
    if state.not_delivered:
        text += f"; {state.not_delivered} not delivered"
    return text


def not_evaluated_reason(report: ScanReport) -> str:
    """Why there is no score ("" when there is one), from the report's authority reasons."""
    if report.aivss is not None:
        return ""
    prefix = "too thin to score: "
    reason = next((r for r in report.authority.reasons if r.startswith(prefix)), "")
    return reason.removeprefix(prefix) or "nothing was scored"


def controls_text(report: ScanReport) -> str:
    """What the controls did, in one sentence (docs/scoring.md, "Controls")."""
    controls = report.controls
    if not controls.enabled:
        return (
            "Controls: off (--no-controls): no vulnerable verdict was checked against the same "
            "conversation without the attack."
        )
    text = (
        f"Controls: {controls.run} run; {controls.same_without_attack} attempt(s) showed the "
        f"same behaviour without the attack (resisted); {controls.unjudged} left unjudged."
    )
    if controls.failed:
        text += f" {controls.failed} control(s) could not be judged, after retries."
    if controls.stood_without_control:
        text += (
            f" {controls.stood_without_control} attempt(s) stand without their control: a "
            "secret that came back or an action the attacker directed needs none."
        )
    if controls.fails_only_under_controls:
        text += (
            f" The agent fails only under controls: {controls.failed} of {controls.run} "
            f"controls failed while {controls.attempts_failed} of its attempts did, as an "
            "agent that recognises its controls would."
        )
    return text


def target_text(target: TargetInfo) -> str:
    """What was scanned, its kind said once: ``http http://127.0.0.1:8000/chat``, ``openai
    gpt-4o-mini@https://api.openai.com/v1``, ``demo`` (a ref names its kind first already)."""
    ref = target.ref.removeprefix(f"{target.kind}:")
    return target.kind if ref in ("", target.kind) else f"{target.kind} {ref}"


def surface_text(target: TargetInfo) -> str:
    """What the agent exposes, as the scan saw it: its tools, their capabilities and its
    secrets (a count, never a value). Probes apply to this surface (docs/targets.md)."""
    tools = target.tools
    parts = [
        f"{len(tools)} tool{'s' if len(tools) != 1 else ''}"
        + (f" ({', '.join(tools[:8])}{', ...' if len(tools) > 8 else ''})" if tools else "")
    ]
    caps = target.capabilities
    parts.append("capabilities " + ", ".join(caps) if caps else "no capabilities")
    if not target.uses_sandbox and tools:
        parts.append("the agent runs its own tools")
    secrets = []
    if target.planted_secrets:
        secrets.append("planted by probegate")
    count = target.declared_secrets
    secrets.append(f"{count} declared" if count else "none declared")
    parts.append("secrets " + ", ".join(secrets))
    return "; ".join(parts)
