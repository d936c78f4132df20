"""The fresh reply corpus (tests/data/corpus_fresh) has the shape its README states.

Shape only, no verdict: twelve files, each naming a library probe whose harm is what the agent
tells the user (its oracles read the reply or the claim in it, plus the tool calls a claim is
checked against); four voices in English, Italian and Portuguese, each a careful reply and a
different twin of at most 120 words; a third of the files answer a mutated payload that is what
the mutator gives today (seed 0, key "corpus"), each with another mutator, on (mutator, probe)
pairs neither mutated set holds; tool calls name demo tools with arguments those tools take.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from probegate.library.loader import load_library
from probegate.library.mutators import MUTATORS, mutate
from probegate.targets.demo.tools import DEMO_TOOLS

DATA = Path(__file__).resolve().parents[2] / "data"
FRESH = DATA / "corpus_fresh"
FILES = sorted(FRESH.glob("*.yaml"))
VOICES = ("compliance", "bullets", "table", "tldr")
LANGUAGES = ("en", "it", "pt")
REPLY_KEYS = {"careful", "twin", "careful_calls", "twin_calls"}
MAX_WORDS = 120
# The oracle kinds whose evidence is what the agent says (or claims against its tool log).
TEXT_ORACLES = {"output_pattern", "no_action"}
PROBES = load_library().by_id()
TOOLS = {tool.name: tool for tool in DEMO_TOOLS}


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path.name}: not a mapping"
    return data


def test_twelve_probes_a_third_of_them_mutated_each_by_another_mutator() -> None:
    # Every other test is parametrised over the files: with none, they would pass unseen.
    assert len(FILES) == 12
    assert sorted(p.name for p in FRESH.iterdir() if p.is_file() and p.suffix != ".yaml") == [
        "README.md",
        "REPORT.md",
    ]
    mutators = [_load(p).get("mutator") for p in FILES]
    mutated = [m for m in mutators if m is not None]
    assert len(mutated) == len(FILES) // 3
    assert len(set(mutated)) == len(mutated)


def test_the_mutated_files_answer_pairs_no_other_set_holds() -> None:
    # The other sets are named by their paths only (<mutator>/<probe id>.yaml): their replies
    # are not read, so this set stays written apart from them.
    others = {(p.parent.name, p.stem) for p in (DATA / "corpus_mutated").glob("*/*/*.yaml")}
    assert others, "no mutated sets found to compare with"
    fresh = {(d["mutator"], d["probe"]) for d in map(_load, FILES) if "mutator" in d}
    assert not fresh & others


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_file_names_a_probe_whose_harm_is_told_and_todays_payload(path: Path) -> None:
    data = _load(path)
    assert set(data) in ({"probe", "voices"}, {"probe", "mutator", "payload", "voices"})
    assert data["probe"] == path.stem
    probe = PROBES.get(data["probe"])
    assert probe is not None, f"{data['probe']} is not a probe of the library"
    assert {o.kind for o in probe.oracles} <= TEXT_ORACLES, "its harm is not what it says"
    if "mutator" in data:
        assert data["mutator"] in MUTATORS
        assert probe.payload, f"{probe.id} has no payload for a mutator to rewrite"
        expected = mutate(probe.payload, data["mutator"], 0, "corpus")
        assert data["payload"] == expected, "the mutator's output changed: rewrite the replies"
        assert expected != probe.payload


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_four_voices_in_three_languages_with_a_different_twin(path: Path) -> None:
    voices = _load(path)["voices"]
    assert tuple(voices) == VOICES
    for voice, languages in voices.items():
        assert tuple(languages) == LANGUAGES, voice
        for language, replies in languages.items():
            where = f"{voice}/{language}"
            assert set(replies) <= REPLY_KEYS, f"{where}: {sorted(set(replies) - REPLY_KEYS)}"
            careful, twin = replies.get("careful"), replies.get("twin")
            assert isinstance(careful, str) and careful.strip(), f"{where}: no careful reply"
            assert isinstance(twin, str) and twin.strip(), f"{where}: no twin"
            assert careful.strip() != twin.strip(), f"{where}: the twin is the careful reply"
            for side, text in (("careful", careful), ("twin", twin)):
                words = len(text.split())
                assert words <= MAX_WORDS, f"{where} {side}: {words} words"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_calls_name_demo_tools_with_their_arguments(path: Path) -> None:
    for voice, languages in _load(path)["voices"].items():
        for language, replies in languages.items():
            for key in ("careful_calls", "twin_calls"):
                calls = replies.get(key, [])
                where = f"{voice}/{language} {key}"
                assert isinstance(calls, list), f"{where}: not a list"
                for call in calls:
                    assert set(call) == {"name", "arguments"}, where
                    tool = TOOLS.get(call["name"])
                    assert tool is not None, f"{where}: {call['name']} is not a demo tool"
                    arguments = call["arguments"]
                    assert isinstance(arguments, dict), where
                    schema = tool.parameters
                    assert set(arguments) <= set(schema["properties"]), where
                    assert set(schema.get("required", [])) <= set(arguments), where
