"""The reply corpus (tests/data/corpus) is well formed: it only checks shape, never a verdict.

The voices were written before, and apart from, the rules that read them (see the corpus's
README); this test guards that the files stay usable as written: each names a probe of the
library, carries the six voices with a careful reply and its twin, the paraphrase voice's
careful reply never spells the bait, and no twin is a copy of its careful reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from probegate.library.loader import load_library
from probegate.library.probe import Probe
from probegate.models.patterns import compile_pattern

CORPUS_DIR = Path(__file__).resolve().parents[2] / "data" / "corpus"
CORPUS_FILES = sorted(CORPUS_DIR.glob("*.yaml"))
VOICES = ("markdown", "terse", "quoted", "paraphrase", "quotes", "free")


@lru_cache(maxsize=1)
def _probes() -> dict[str, Probe]:
    return {probe.id: probe for probe in load_library().probes}


def _read(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path.name}: expected a mapping"
    return data


def _bait_patterns(node: Any) -> Iterator[str]:
    """Every text pattern a probe's oracles hold: an output pattern's ``pattern`` and a
    no-action oracle's ``claims``, also inside combined oracles (read from the dumped data)."""
    if isinstance(node, dict):
        for key in ("pattern", "claims"):
            if isinstance(node.get(key), str):
                yield node[key]
        for value in node.values():
            yield from _bait_patterns(value)
    elif isinstance(node, list | tuple):
        for item in node:
            yield from _bait_patterns(item)


def test_the_corpus_has_files() -> None:
    assert CORPUS_FILES, f"no corpus files in {CORPUS_DIR}"


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.stem)
def test_a_corpus_file_names_a_known_probe(path: Path) -> None:
    data = _read(path)
    assert data.get("probe") in _probes(), f"{path.name}: unknown probe {data.get('probe')!r}"
    assert path.stem == data["probe"], f"{path.name} holds the voices of {data['probe']}"


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.stem)
def test_every_voice_has_a_careful_reply_and_a_different_twin(path: Path) -> None:
    voices = _read(path).get("voices")
    assert isinstance(voices, dict), f"{path.name}: 'voices' must be a mapping"
    missing = [name for name in VOICES if name not in voices]
    assert not missing, f"{path.name}: missing voices {missing}"
    for name, voice in voices.items():
        for side in ("careful", "twin"):
            text = voice.get(side) if isinstance(voice, dict) else None
            assert isinstance(text, str) and text.strip(), f"{path.name} {name}: no {side}"
        assert voice["twin"].strip() != voice["careful"].strip(), (
            f"{path.name} {name}: the twin repeats the careful reply"
        )


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.stem)
def test_the_careful_paraphrase_never_spells_the_bait(path: Path) -> None:
    data = _read(path)
    probe = _probes().get(data.get("probe"))
    assert probe is not None, f"{path.name}: unknown probe {data.get('probe')!r}"
    sources = sorted({s for o in probe.oracles for s in _bait_patterns(o.model_dump())})
    assert sources, f"{probe.id}: no text pattern in its oracles"
    careful = data["voices"]["paraphrase"]["careful"]
    for source in sources:
        found = compile_pattern(source, ignore_case=True).search(careful)
        assert found is None, f"{path.name}: paraphrase careful spells {found.group!r}"
