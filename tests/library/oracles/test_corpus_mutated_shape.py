"""The mutated-reply corpus (tests/data/corpus_mutated) has the shape its READMEs state.

Shape only, no verdict, for both sets (``tuned/`` and the held-out ``heldout/``, which has
French where the tuned set has Spanish): each file parses, names a probe of the library and one
of its mutators, carries the payload that mutator gives today for (seed 0, key "corpus"), and
holds six voices in three languages, each a careful reply and a different twin; tool calls name
demo tools with arguments those tools take. A mutator whose output changes makes its file fail
here, so the replies are rewritten against the new payload rather than left answering an attack
no longer sent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from probegate.library.loader import load_library
from probegate.library.mutators import MUTATORS, mutate
from probegate.targets.demo.tools import DEMO_TOOLS

MUTATED = Path(__file__).resolve().parents[2] / "data" / "corpus_mutated"
# Each set and its languages.
SETS = {"tuned": ("en", "de", "es"), "heldout": ("en", "de", "fr")}
FILES = sorted(path for name in SETS for path in (MUTATED / name).glob("*/*.yaml"))
VOICES = ("analyst", "warm", "reasoning", "terse", "quoted", "free")
REPLY_KEYS = {"careful", "twin", "careful_calls", "twin_calls"}
MAX_WORDS = 120
TOOLS = {tool.name: tool for tool in DEMO_TOOLS}


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path.name}: not a mapping"
    return data


def _file_id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}/{path.stem}"


@pytest.mark.parametrize("name", SETS)
def test_every_mutator_has_a_file(name: str) -> None:
    # One file per mutator and no stray folder: a tenth mutator needs its replies written.
    corpus = MUTATED / name
    files = sorted(corpus.glob("*/*.yaml"))
    assert sorted({path.parent.name for path in files}) == sorted(MUTATORS)
    assert len(files) == len(MUTATORS)
    assert [p.name for p in corpus.iterdir() if p.is_file()] in ([], ["README.md"])


def test_the_sets_answer_different_probes_per_mutator() -> None:
    # The held-out set measures the rules on other wording and other (mutator, probe) pairs.
    pairs = {
        name: {(p.parent.name, p.stem) for p in (MUTATED / name).glob("*/*.yaml")} for name in SETS
    }
    assert not pairs["tuned"] & pairs["heldout"]


@pytest.mark.parametrize("path", FILES, ids=_file_id)
def test_file_names_its_probe_mutator_and_todays_payload(path: Path) -> None:
    data = _load(path)
    assert set(data) == {"probe", "mutator", "payload", "voices"}
    assert data["probe"] == path.stem
    assert data["mutator"] == path.parent.name
    assert data["mutator"] in MUTATORS
    probes = {probe.id: probe for probe in load_library().probes}
    assert data["probe"] in probes, f"{data['probe']} is not a probe of the library"
    payload = probes[data["probe"]].payload
    assert payload, f"{data['probe']} has no payload for a mutator to rewrite"
    expected = mutate(payload, data["mutator"], 0, "corpus")
    assert data["payload"] == expected, "the mutator's output changed: rewrite the replies"
    assert expected != payload


@pytest.mark.parametrize("path", FILES, ids=_file_id)
def test_every_voice_answers_in_three_languages_with_a_different_twin(path: Path) -> None:
    voices = _load(path)["voices"]
    assert tuple(voices) == VOICES
    for voice, languages in voices.items():
        assert tuple(languages) == SETS[path.parent.parent.name], voice
        for language, replies in languages.items():
            where = f"{voice}/{language}"
            assert set(replies) <= REPLY_KEYS, f"{where}: {sorted(set(replies) - REPLY_KEYS)}"
            careful, twin = replies.get("careful"), replies.get("twin")
            assert isinstance(careful, str), f"{where}: no careful reply"
            assert isinstance(twin, str), f"{where}: no twin"
            assert careful.strip(), f"{where}: empty careful reply"
            assert twin.strip(), f"{where}: empty twin"
            assert careful.strip() != twin.strip(), f"{where}: the twin is the careful reply"
            for side, text in (("careful", careful), ("twin", twin)):
                words = len(text.split())
                assert words <= MAX_WORDS, f"{where} {side}: {words} words"


@pytest.mark.parametrize("path", FILES, ids=_file_id)
def test_calls_name_demo_tools_with_their_arguments(path: Path) -> None:
    for voice, languages in _load(path)["voices"].items():
        for language, replies in languages.items():
            for key in ("careful_calls", "twin_calls"):
                calls = replies.get(key, [])
                assert isinstance(calls, list), f"{voice}/{language} {key}: not a list"
                for call in calls:
                    where = f"{voice}/{language} {key}"
                    assert set(call) == {"name", "arguments"}, where
                    tool = TOOLS.get(call["name"])
                    assert tool is not None, f"{where}: {call['name']} is not a demo tool"
                    arguments = call["arguments"]
                    assert isinstance(arguments, dict), where
                    schema = tool.parameters
                    assert set(arguments) <= set(schema["properties"]), where
                    assert set(schema.get("required", [])) <= set(arguments), where
