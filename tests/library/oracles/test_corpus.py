"""The rules that read words, on corpora of replies written without them (tests/data).

``corpus`` was written first, by an author who had not seen the rules, and the rules were
tuned on it; ``corpus_heldout`` was written later by another author and measures them on
wording they were not written against. On both: no careful reply is a finding, no twin (the
same wording falling for the bait) is called resisted, and a judge is asked about the
ambiguous replies and only those. ``corpus_mutated/tuned`` answers mutated payloads in three
languages: no careful reply is a finding in any mutator, voice or language, with or without a
judge. Its held-out half is measured, not held to a figure here (docs/scoring.md reports it,
test_corpus_tables.py keeps the report true). ``python -m tests.library.oracles.corpus`` and
``... corpus_mutated`` print the tables.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from probegate.models.verdict import Outcome
from tests.library.oracles import corpus_mutated
from tests.library.oracles.corpus import (
    CORPUS,
    HELDOUT,
    KnowingJudge,
    judge,
    replies,
    table,
)

CORPORA = [CORPUS, HELDOUT]


@pytest.mark.parametrize("corpus", CORPORA, ids=lambda p: p.name)
def test_no_careful_reply_is_a_finding_and_no_twin_escapes(corpus: Path) -> None:
    rows = table(with_judge=False, corpus=corpus)
    assert sum(r.false_findings for r in rows.values()) == 0, rows
    assert sum(r.missed for r in rows.values()) == 0, rows
    # The rules decide a good share of the twins without a judge, in every voice.
    assert sum(r.found for r in rows.values()) >= 0.5 * sum(r.twins for r in rows.values())
    assert all(r.found for r in rows.values()), rows


@pytest.mark.parametrize("corpus", CORPORA, ids=lambda p: p.name)
def test_with_a_judge_every_reply_is_decided_and_the_words_ask_it(corpus: Path) -> None:
    """With a judge, the judge is final on words (docs/judge.md, "What goes to the judge"):
    every ambiguous reply asks it, and so do replies the rules decided from words alone (a
    relay, a match set aside); a reply decided by deeds never does."""
    judge_fn = KnowingJudge()
    ambiguous = by_words = 0
    for reply in replies(corpus):
        alone = judge(reply).outcome
        ambiguous += alone is Outcome.UNJUDGED
        before = judge_fn.calls
        decided = judge(reply, judge_fn).outcome
        assert decided is (Outcome.RESISTED if reply.careful else Outcome.VULNERABLE), reply
        if alone is not Outcome.UNJUDGED:
            by_words += judge_fn.calls > before
            if judge_fn.calls == before:
                assert decided is alone
    assert ambiguous > 0 and judge_fn.calls >= ambiguous + by_words and by_words > 0


@pytest.mark.parametrize("with_judge", [False, True], ids=["rules", "judge"])
def test_no_careful_reply_to_a_mutated_attack_is_a_finding_in_any_mutator_voice_or_language(
    with_judge: bool,
) -> None:
    tables = corpus_mutated.tables(corpus_mutated.TUNED, with_judge=with_judge)
    for what, rows in tables.items():
        assert {k: r.false_findings for k, r in rows.items() if r.false_findings} == {}, what
        assert all(r.careful == 162 // len(rows) for r in rows.values()), what
    # What the rules leave ambiguous the judge decides: nothing is left to it afterwards.
    if with_judge:
        assert all(r.careful_ambiguous == r.twin_ambiguous == 0 for r in tables["voice"].values())
    else:
        # Twins found without a judge in every voice: the rules still decide some.
        assert all(r.found for r in tables["voice"].values()), tables["voice"]
