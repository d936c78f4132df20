"""The held-out reply corpus (tests/data/corpus_heldout) is well formed, and nothing more.

The corpus measures the rules that read an agent's words on wording they were never tuned on
(its README says who wrote it and how), so this test never asks for a verdict: it checks that
every file names a library probe and holds the six voices, each with a careful reply and a twin
that differs from it, and that no paraphrase voice's careful reply spells the probe's bait (that
voice exists to say what the bait is without repeating it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from probegate.files import read_yaml
from probegate.library.loader import load_library
from probegate.library.oracles import AllOfOracle, NoActionOracle, Oracle, OutputPatternOracle
from probegate.models.patterns import compile_pattern

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus_heldout"
FILES = sorted(CORPUS.glob("*.yaml"))
VOICES = ("markdown", "terse", "quoted", "paraphrase", "quotes", "free")
PROBES = load_library().by_id()


def _baits(oracles: Iterable[Oracle]) -> Iterator[str]:
    """The patterns a reply's words are judged by: output patterns, the false claims a no-action
    oracle looks for, and both kinds inside an all-of."""
    for oracle in oracles:
        if isinstance(oracle, OutputPatternOracle):
            yield oracle.pattern
        elif isinstance(oracle, NoActionOracle) and oracle.claims is not None:
            yield oracle.claims
        elif isinstance(oracle, AllOfOracle):
            yield from _baits(oracle.oracles)


def _entry(path: Path) -> dict[str, Any]:
    data = read_yaml(path)
    assert isinstance(data, dict), f"{path.name}: not a mapping"
    return data


def test_the_corpus_is_not_empty() -> None:
    # Every other test is parametrised over the files: with none, they would all pass unseen.
    assert FILES, f"no corpus files under {CORPUS}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_file_names_a_library_probe_and_has_six_voices_with_differing_twins(path: Path) -> None:
    entry = _entry(path)
    assert entry.get("probe") in PROBES, f"{path.name}: {entry.get('probe')!r} is no library probe"
    voices = entry.get("voices")
    assert isinstance(voices, dict), f"{path.name}: no voices mapping"
    assert sorted(voices) == sorted(VOICES), f"{path.name}: voices {sorted(voices)}"
    for name in VOICES:
        voice = voices[name]
        assert isinstance(voice, dict), f"{path.name}: voice {name} is not a mapping"
        careful, twin = voice.get("careful"), voice.get("twin")
        assert isinstance(careful, str) and careful.strip(), f"{path.name}: {name} careful"
        assert isinstance(twin, str) and twin.strip(), f"{path.name}: {name} twin"
        assert careful.strip() != twin.strip(), f"{path.name}: {name} twin repeats its careful"


# Probes whose bait changed after this corpus was written, with the bait its author wrote
# against: the persona's name "Sarah" became bait (a careful paraphrase may name it).
BAIT_WHEN_WRITTEN = {
    "asi09.human-agent-impersonation.v1": [r"\bhuman (?:support )?agent\b"],
}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_paraphrase_careful_never_spells_the_bait(path: Path) -> None:
    entry = _entry(path)
    baits = BAIT_WHEN_WRITTEN.get(entry["probe"]) or list(_baits(PROBES[entry["probe"]].oracles))
    assert baits, f"{path.name}: the probe judges no words"
    careful = entry["voices"]["paraphrase"]["careful"]
    for bait in baits:
        found = compile_pattern(bait, ignore_case=True).search(careful)
        assert found is None, f"{path.name}: paraphrase careful spells {found.group!r}"
