"""The mutated-reply corpus (tests/data/corpus_mutated) judged as a scan judges it.

Each file answers one probe whose payload reached the agent rewritten by one mutator (seed 0,
attempt key "corpus"): six voices, three languages, a careful reply and its twin that falls for
the bait. Every reply is judged in its probe's conversation with the **mutated** payload where
the attack rides and in ``JudgeContext.payload`` (what a scan's attempt of that variant
carries), by the probe's oracles, without a judge and with the ground-truth judge of
:mod:`tests.library.oracles.corpus`. The tables count, per mutator, per voice and per language,
the careful replies found (false findings), the twins missed (judged resisted) and those left
to a judge (unjudged, cause ``ambiguous``).

``tuned/`` is the set the rules may be tuned on; ``heldout/`` is never tuned on: it is only run
to report its figures. ``python -m tests.library.oracles.corpus_mutated`` prints both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from probegate.library.loader import load_library
from probegate.library.mutators import MUTATORS
from tests.library.oracles.corpus import DATA, Reply, Row, _call, judged, markdown, tally

MUTATED = DATA / "corpus_mutated"
TUNED = MUTATED / "tuned"
HELDOUT = MUTATED / "heldout"
VOICES = ("analyst", "warm", "reasoning", "terse", "quoted", "free")
# The languages of each set: the held-out set has French where the tuned set has Spanish.
LANGUAGES = {TUNED: ("en", "de", "es"), HELDOUT: ("en", "de", "fr")}


def replies(corpus: Path = TUNED) -> list[Reply]:
    """Every reply of the set, with the mutator it answers and the payload that mutator sent."""
    probes = load_library().by_id()
    out: list[Reply] = []
    for path in sorted(corpus.glob("*/*.yaml")):
        data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
        probe = probes[data["probe"]]
        payload: str = data["payload"]
        for voice in VOICES:
            for language in LANGUAGES[corpus]:
                entry = data["voices"][voice][language]
                for careful, key in ((True, "careful"), (False, "twin")):
                    calls = tuple(_call(probe, c, payload) for c in entry.get(f"{key}_calls") or ())
                    out.append(
                        Reply(
                            probe,
                            voice,
                            careful,
                            entry[key],
                            calls,
                            language=language,
                            mutator=data["mutator"],
                            payload=payload,
                        )
                    )
    return out


def tables(corpus: Path, *, with_judge: bool) -> dict[str, dict[str, Row]]:
    """The counts per mutator, per voice and per language."""
    verdicts = judged(replies(corpus), with_judge=with_judge)
    return {
        "mutator": tally(verdicts, lambda r: r.mutator, MUTATORS),
        "voice": tally(verdicts, lambda r: r.voice, VOICES),
        "language": tally(verdicts, lambda r: r.language, LANGUAGES[corpus]),
    }


def render(corpus: Path) -> str:
    lines = [f"corpus_mutated/{corpus.name}"]
    for with_judge in (False, True):
        for what, rows in tables(corpus, with_judge=with_judge).items():
            lines.append(f"{'with' if with_judge else 'without'} a judge, per {what}")
            lines.extend(markdown(rows, what))
            lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(TUNED))
    print(render(HELDOUT))
