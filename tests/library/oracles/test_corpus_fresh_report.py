"""The fresh corpus's figures, recorded: a report of what the rules get wrong, not a target.

No rule is tuned on tests/data/corpus_fresh, and nothing here says what its figures should be.
These tests only make sure the record cannot go wrong silently: both runs (without a judge,
with the ground-truth judge) judged every reply on its text, the judge was asked wherever the
rules alone left a reply to one, and REPORT.md holds the figures the code gives today. A rule
change that moves them makes the last test fail until the report is written anew
(``python -m tests.library.oracles.corpus_fresh --write``), so the change shows in review.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from probegate.models.causes import Cause
from probegate.models.verdict import Outcome
from tests.library.oracles.corpus_fresh import (
    COMMAND,
    REPORT,
    Run,
    check,
    main,
    render,
    replies,
    runs,
)


@pytest.fixture(scope="module")
def judged() -> tuple[Run, Run]:
    return runs()


def test_both_runs_judge_every_reply_on_its_text(judged: tuple[Run, Run]) -> None:
    fresh = replies()
    assert len(fresh) == 12 * 4 * 3 * 2
    for result in judged:
        check(result, fresh)


def test_the_judge_is_asked_wherever_the_rules_left_a_reply_to_one(
    judged: tuple[Run, Run],
) -> None:
    without, knowing = judged
    # Both runs judge the same replies in the same order (test above), so they pair up.
    left = [
        after
        for (_, before), (_, after) in zip(without.verdicts, knowing.verdicts, strict=True)
        if before.outcome is Outcome.UNJUDGED and before.cause is Cause.AMBIGUOUS
    ]
    assert left, "nothing left to a judge: the checks below would be empty"
    assert knowing.judge_calls >= len(left)
    assert all(verdict.outcome is not Outcome.UNJUDGED for verdict in left)


def test_the_report_is_the_codes(judged: tuple[Run, Run]) -> None:
    text = render(judged)
    print(text)  # the record, shown with -s or on failure
    assert REPORT.read_text(encoding="utf-8") == text, f"{REPORT} is stale: run {COMMAND}"


@pytest.mark.slow  # renders the report three times: seconds
def test_check_mode_reports_a_stale_report_and_writing_fixes_it(tmp_path: Path) -> None:
    stale = tmp_path / "REPORT.md"
    stale.write_text("# old figures\n", encoding="utf-8")
    assert main([str(stale), "--check"]) == 1
    assert main([str(stale), "--write"]) == 0
    assert main([str(stale), "--check"]) == 0
    assert stale.read_text(encoding="utf-8") == REPORT.read_text(encoding="utf-8")
