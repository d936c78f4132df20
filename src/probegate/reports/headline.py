"""The score as every format shows it: a number, or "n/a" with the reason; never a made-up 100.
And the one sentence every format says about the controls.

A scan too thin to score has no score (``aivss: null`` in JSON, ``n/a`` elsewhere) and an
undertested category has none either (absent from ``asi_scores``, ``n/a (undertested)``
elsewhere): docs/scoring.md. Every emitter, the terminal and the Action ask here, so the
words are the same everywhere.
"""

from __future__ import annotations

from probegate.models.report import CategoryState, ScanReport, TargetInfo
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
    return NO_SCORE.get(state.state, NOT_EVALUATED)


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
