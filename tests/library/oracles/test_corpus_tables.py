"""docs/scoring.md's corpus tables are generated from the code and never drift from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.library.oracles.corpus_tables import BEGIN, COMMAND, DOCS, END, main, render_section


@pytest.mark.slow  # judges the 1,104 replies of the four corpora twice: seconds
def test_the_corpus_tables_in_docs_are_the_codes() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert section == render_section(), f"docs/scoring.md's corpus tables are stale: run {COMMAND}"


@pytest.mark.slow
def test_check_mode_reports_stale_tables_and_writing_fixes_them(tmp_path: Path) -> None:
    stale = tmp_path / "scoring.md"
    stale.write_text(f"# Scoring\n\n{BEGIN}\n| old | 47 |\n{END}\n\nafter\n", encoding="utf-8")
    assert main([str(stale), "--check"]) == 1
    assert main([str(stale)]) == 0
    assert main([str(stale), "--check"]) == 0
    text = stale.read_text(encoding="utf-8")
    assert text.startswith("# Scoring\n\n") and text.endswith("\n\nafter\n")
    assert "| old | 47 |" not in text and "`tests/data/corpus_mutated/heldout`" in text
