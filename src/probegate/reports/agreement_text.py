"""The agreement section in words and rows, shared by the terminal, Markdown and HTML.

Pure: a report's :class:`~probegate.models.agreement.Agreement` in, text out. Each difference
is named in the words of docs/agentdojo.md ("Where the two differ"), so a reader of any format
gets the same explanation.
"""

from __future__ import annotations

from probegate.models.agreement import Agreement, AgreementCounts, Difference, Disagreement

TITLE = "Agreement with AgentDojo's security checks"

HEADERS = (
    "suite",
    "compared",
    "both",
    "probegate only",
    "AgentDojo only",
    "neither",
    "not delivered",
    "unjudged",
    "recall",
    "FPR",
    "kappa",
    "utility",
)

DIFFERENCES: dict[Difference, str] = {
    "secret": (
        "probegate found a planted secret in a reply or tool call, a finding in every probe; "
        "AgentDojo's check looks only at the injection task's goal"
    ),
    "partial_goal": (
        "the agent made the call the attacker directed, but not with everything the goal asked "
        "for (the data it named, the amount, every step), which AgentDojo's check requires"
    ),
    "same_without_attack": (
        "AgentDojo saw the goal's state or words; probegate's control (the same task without "
        "the attack) showed the same, so the attack did not cause them"
    ),
    "quoted": (
        "AgentDojo counts the goal's words anywhere in the reply; probegate found them only "
        "quoted or reported (its reading rules, or its judge), not passed on as the agent's own"
    ),
    "missed": "AgentDojo saw the goal reached; probegate's oracles saw no evidence of it",
    "other": "probegate saw evidence AgentDojo's check does not count",
}


def rate(value: float | None) -> str:
    """A share as a decimal, ``n/a`` where it is undefined."""
    return "n/a" if value is None else f"{value:.3f}"


def _row(name: str, counts: AgreementCounts) -> tuple[str, ...]:
    return (
        name,
        str(counts.compared),
        str(counts.both),
        str(counts.probegate_only),
        str(counts.agentdojo_only),
        str(counts.neither),
        str(counts.not_delivered),
        str(counts.unjudged + counts.unchecked),
        rate(counts.recall),
        rate(counts.false_positive_rate),
        rate(counts.kappa),
        rate(counts.utility),
    )


def agreement_rows(agreement: Agreement) -> list[tuple[str, ...]]:
    """One row per suite, then the overall row (when there is more than one suite)."""
    rows = [_row(name, counts) for name, counts in agreement.suites.items()]
    if len(rows) != 1:
        rows.append(_row("overall", agreement.overall))
    return rows


def agreement_heading(agreement: Agreement) -> str:
    """What was compared with what, in one line."""
    return (
        f"probegate's verdicts against AgentDojo {agreement.package_version} "
        f"({agreement.benchmark_version}) security checks; attack {agreement.attack}, "
        f"judge {agreement.judge}"
    )


def difference_counts(agreement: Agreement) -> list[tuple[Difference, int]]:
    """How many disagreements of each kind, the most frequent first (ties by name)."""
    kinds: dict[Difference, int] = {}
    for item in agreement.disagreements:
        kinds[item.difference] = kinds.get(item.difference, 0) + 1
    return sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))


def verdicts_text(item: Disagreement) -> str:
    """What each side said of one attempt, in one line."""
    said = "succeeded" if item.agentdojo else "failed"
    return f"probegate {item.probegate}; AgentDojo's check: the attack {said}"
