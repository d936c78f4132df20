"""The agreement arithmetic and its section, on attempts built by hand (no AgentDojo needed)."""

from __future__ import annotations

import pytest

from probegate.benchmarks.agreement import agreement, cohens_kappa
from probegate.models.causes import Cause
from probegate.models.taxonomy import Severity
from probegate.models.verdict import Attempt, Evidence, Outcome, ReferenceCheck


def _evidence(detector: str) -> Evidence:
    return Evidence(
        category="security.data_exfiltration",
        severity=Severity.CRITICAL,
        path="turns.1.tool_calls.0.arguments.to",
        start=0,
        end=4,
        score=1.0,
        fp="f" * 32,
        subject="evil",
        detector=detector,
    )


def _attempt(
    n: int,
    outcome: Outcome,
    succeeded: bool | None,
    *,
    suite: str = "banking",
    detector: str = "tool_call:args",
    control: str = "",
    variant: str = "seed",
    utility: bool | None = True,
    delivered: bool | None = True,
) -> Attempt:
    return Attempt(
        attempt_id=f"asi01.agentdojo-{suite}-u{n}-i0.v1#{variant}#0",
        probe_id=f"asi01.agentdojo-{suite}-u{n}-i0.v1",
        variant=variant,
        outcome=outcome,
        evidence=[_evidence(detector)] if outcome is Outcome.VULNERABLE else [],
        cause=Cause.TIMEOUT if outcome is Outcome.UNJUDGED else None,
        control=control,
        reference=ReferenceCheck(
            suite=suite,
            user_task=f"user_task_{n}",
            injection_task="injection_task_0",
            attack_succeeded=succeeded,
            utility=utility,
            delivered=delivered,
        ),
    )


def test_kappa_matches_the_textbook_example() -> None:
    # 20 yes-yes, 5 yes-no, 10 no-yes, 15 no-no: po 0.7, pe 0.5, kappa 0.4.
    assert cohens_kappa(20, 5, 10, 15) == pytest.approx(0.4)
    assert cohens_kappa(10, 0, 0, 10) == 1.0
    assert cohens_kappa(0, 5, 5, 0) == -1.0
    assert str(cohens_kappa(0, 0, 20, 929)) == "0.0"  # never -0.0


@pytest.mark.parametrize("counts", [(0, 0, 0, 0), (0, 0, 0, 9), (9, 0, 0, 0)])
def test_kappa_is_undefined_when_chance_already_agrees(counts: tuple[int, int, int, int]) -> None:
    assert cohens_kappa(*counts) is None


def test_rates_count_each_decision_once_per_suite_and_overall() -> None:
    attempts = [
        _attempt(0, Outcome.VULNERABLE, True),
        _attempt(1, Outcome.VULNERABLE, False),
        _attempt(2, Outcome.RESISTED, True),
        _attempt(3, Outcome.RESISTED, False),
        _attempt(4, Outcome.RESISTED, False, suite="slack", utility=False),
        _attempt(5, Outcome.UNJUDGED, True),  # not a decision of probegate's: in no rate
        _attempt(6, Outcome.VULNERABLE, None),  # AgentDojo could not check: in no rate
        _attempt(7, Outcome.VULNERABLE, False, variant="control"),  # a control: not counted
    ]
    found = agreement(
        attempts, package_version="0.1.35", benchmark_version="v1.2.2", attack="a", judge="off"
    )
    banking = found.suites["banking"]
    assert (banking.both, banking.probegate_only, banking.agentdojo_only, banking.neither) == (
        1,
        1,
        1,
        1,
    )
    assert (banking.unjudged, banking.unchecked) == (1, 1)
    assert banking.recall == 0.5 and banking.false_positive_rate == 0.5
    assert banking.kappa == 0.0
    assert found.overall.neither == 2 and found.overall.compared == 5
    assert found.suites["slack"].utility == 0.0
    assert [d.probe_id for d in found.disagreements] == [
        "asi01.agentdojo-banking-u1-i0.v1",
        "asi01.agentdojo-banking-u2-i0.v1",
    ]


def test_each_disagreement_says_why() -> None:
    attempts = [
        _attempt(1, Outcome.VULNERABLE, False, detector="canary_leak:plain"),
        _attempt(2, Outcome.VULNERABLE, False),
        _attempt(3, Outcome.RESISTED, True, control="probe#control#0"),
        _attempt(4, Outcome.RESISTED, True),
        _attempt(5, Outcome.VULNERABLE, False, detector="output_pattern"),
    ]
    found = agreement(
        attempts, package_version="0.1.35", benchmark_version="v1.2.2", attack="a", judge="off"
    )
    assert [d.difference for d in found.disagreements] == [
        "secret",
        "partial_goal",
        "same_without_attack",
        "missed",
        "other",
    ]


def test_users_and_injections_are_listed_in_number_order() -> None:
    attempts = [_attempt(n, Outcome.VULNERABLE, False) for n in (10, 2, 1)]
    found = agreement(
        attempts, package_version="0.1.35", benchmark_version="v1.2.2", attack="a", judge="off"
    )
    assert [d.user_task for d in found.disagreements] == [
        "user_task_1",
        "user_task_2",
        "user_task_10",
    ]


def test_an_attack_that_never_reached_the_agent_is_in_no_rate() -> None:
    """Resisted by an agent that never read it is no agreement: counted apart."""
    attempts = [
        _attempt(1, Outcome.RESISTED, False, delivered=False),
        _attempt(2, Outcome.VULNERABLE, True),
    ]
    found = agreement(
        attempts, package_version="0.1.35", benchmark_version="v1.2.2", attack="a", judge="off"
    )
    assert found.overall.not_delivered == 1
    assert (found.overall.neither, found.overall.both, found.overall.compared) == (0, 1, 1)
