"""The fresh reply corpus (tests/data/corpus_fresh) judged as a scan judges it.

The set was written after the reading rules of issue 32 landed, by an author who had not read
them, and no rule is ever tuned on it: it is run only to report what the rules get wrong on
wording nobody fitted them to. Twelve probes, four voices (``compliance``, ``bullets``,
``table``, ``tldr``), English, Italian and Portuguese, a careful reply and its twin that falls
for the bait in each; four of the files answer a mutated payload (``mutator``, ``payload``).

Every reply is judged in its probe's conversation (the mutated payload where a file has one),
by the probe's oracles, without a judge and with the ground-truth judge of
:mod:`tests.library.oracles.corpus`. The tables count, per probe, voice, language,
voice x language and mutator, the careful replies found (false findings), the twins missed
(judged resisted) and each side left to a judge; the listing after them names every error and
says whether the probe's own bait pattern (``probegate probes show``) is in the reply at all.

``python -m tests.library.oracles.corpus_fresh`` prints the report; ``--write`` stores it in
tests/data/corpus_fresh/REPORT.md and ``--check`` says whether that file is the code's (exit 1
when not). The figures are a record, not a target: ``test_corpus_fresh_report.py`` checks that
every reply was judged and that REPORT.md is current, never what the figures should be.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from probegate.judge.attempt import Judgement
from probegate.library.loader import load_library
from probegate.library.oracles import AllOfOracle, NoActionOracle, Oracle, OutputPatternOracle
from probegate.library.probe import Probe
from probegate.models.patterns import compile_pattern
from probegate.models.verdict import Outcome
from tests.library.oracles.corpus import (
    DATA,
    KnowingJudge,
    Reply,
    Row,
    _call,
    judge,
    markdown,
    tally,
)

FRESH = DATA / "corpus_fresh"
REPORT = FRESH / "REPORT.md"
VOICES = ("compliance", "bullets", "table", "tldr")
LANGUAGES = ("en", "it", "pt")
SEED = "seed"  # the mutator of a file that answers the probe's own payload
COMMAND = "python -m tests.library.oracles.corpus_fresh --write"


def replies(corpus: Path = FRESH) -> list[Reply]:
    """Every reply of the set, in file, voice, language order, careful before twin."""
    probes = load_library().by_id()
    out: list[Reply] = []
    for path in sorted(corpus.glob("*.yaml")):
        data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
        probe = probes[data["probe"]]
        payload: str | None = data.get("payload")
        mutator: str = data.get("mutator", SEED)
        for voice in VOICES:
            for language in LANGUAGES:
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
                            mutator=mutator,
                            payload=payload,
                        )
                    )
    return out


@dataclass(frozen=True)
class Run:
    """Every reply with its judgement, and how often the ground-truth judge was asked."""

    verdicts: list[tuple[Reply, Judgement]]
    judge_calls: int


def run(corpus: list[Reply], *, with_judge: bool) -> Run:
    judge_fn = KnowingJudge() if with_judge else None
    verdicts = [(reply, judge(reply, judge_fn)) for reply in corpus]
    return Run(verdicts, judge_fn.calls if judge_fn else 0)


def tables(result: Run) -> dict[str, dict[str, Row]]:
    """The counts per probe, voice, language, voice x language and mutator."""
    corpus = [reply for reply, _ in result.verdicts]
    probes = list(dict.fromkeys(r.probe.id for r in corpus))
    mutators = list(dict.fromkeys(r.mutator for r in corpus))
    pairs = [f"{v}/{lang}" for v in VOICES for lang in LANGUAGES]
    verdicts = result.verdicts
    return {
        "probe": tally(verdicts, lambda r: r.probe.id, probes),
        "voice": tally(verdicts, lambda r: r.voice, VOICES),
        "language": tally(verdicts, lambda r: r.language, LANGUAGES),
        "voice/language": tally(verdicts, lambda r: f"{r.voice}/{r.language}", pairs),
        "mutator": tally(verdicts, lambda r: r.mutator, mutators),
    }


def _baits(oracles: Iterable[Oracle]) -> Iterator[str]:
    """The probe's patterns for what a reply says: output patterns and false claims."""
    for oracle in oracles:
        if isinstance(oracle, OutputPatternOracle):
            yield oracle.pattern
        elif isinstance(oracle, NoActionOracle) and oracle.claims is not None:
            yield oracle.claims
        elif isinstance(oracle, AllOfOracle):
            yield from _baits(oracle.oracles)


def bait_in(probe: Probe, text: str) -> bool:
    """Whether any of the probe's own bait patterns (as ``probes show`` prints them) matches
    the text, case-insensitively: a miss without one is a wording no pattern of the probe
    covers, a miss with one is a match the rules read as harmless."""
    return any(compile_pattern(p, ignore_case=True).search(text) for p in _baits(probe.oracles))


def where(reply: Reply) -> str:
    side = "careful" if reply.careful else "twin"
    return f"{reply.probe.id} {reply.voice}/{reply.language} {side}"


def _matched(reply: Reply, verdict: Judgement) -> str:
    """What the first piece of evidence points at, on one line."""
    e = verdict.evidence[0]
    snippet = reply.text[e.start : e.end] if e.path.endswith(".content") else e.subject
    return f"{e.detector} {' '.join(snippet.split())[:100]!r}"


def errors(verdicts: Iterable[tuple[Reply, Judgement]]) -> list[str]:
    """One line per error: a careful reply found (false finding) or a twin judged resisted
    (miss), with what decided it."""
    lines: list[str] = []
    for reply, verdict in verdicts:
        if reply.careful and verdict.outcome is Outcome.VULNERABLE:
            lines.append(f"- false finding: {where(reply)}: {_matched(reply, verdict)}")
        elif not reply.careful and verdict.outcome is Outcome.RESISTED:
            bait = "bait pattern in it" if bait_in(reply.probe, reply.text) else "no bait pattern"
            lines.append(f"- miss: {where(reply)}: resisted by {verdict.judged_by}, {bait}")
    return lines


def check(result: Run, corpus: list[Reply]) -> None:
    """The harness judged every reply on its text: one judgement each, in order, and none
    unjudged for a cause other than ambiguity (an attack that did not arrive would be one).
    The report is not written from a run that fails this."""
    judged_replies = [reply for reply, _ in result.verdicts]
    assert judged_replies == corpus, "the run did not judge every reply of the set once"
    total = tally(result.verdicts, lambda r: "all", ["all"])["all"]
    assert total.careful + total.twins == len(corpus)
    assert total.unjudged == 0, f"{total.unjudged} replies unjudged for another cause"


def runs(corpus: Path = FRESH) -> tuple[Run, Run]:
    """The set judged without a judge, then with the ground-truth judge."""
    fresh = replies(corpus)
    return run(fresh, with_judge=False), run(fresh, with_judge=True)


def render(judged: tuple[Run, Run] | None = None) -> str:
    """The report (REPORT.md): both runs' tables and errors."""
    without, knowing = judged if judged is not None else runs()
    fresh = replies()
    lines = [
        "# The fresh corpus, judged",
        "",
        f"Generated by `{COMMAND}`; do not edit by hand.",
        "A record, never a target: no rule is tuned on this set (README.md). The columns are",
        "corpus.py's: careful replies found are false findings, twins judged resisted are",
        "misses, and each side left to a judge is unjudged with the cause `ambiguous`. A miss",
        "says whether the probe's own bait pattern (as `probegate probes show` prints it) is in",
        f"the reply at all, case-insensitively. {len(fresh)} replies.",
        "",
    ]
    for with_judge, result in ((False, without), (True, knowing)):
        check(result, fresh)
        label = "With the ground-truth judge" if with_judge else "Without a judge"
        lines.append(f"## {label}")
        lines.append("")
        if with_judge:
            lines.extend([f"The judge was asked {result.judge_calls} times.", ""])
        for what, rows in tables(result).items():
            lines.extend([f"Per {what}:", "", *markdown(rows, what), ""])
        found = errors(result.verdicts)
        lines.extend([f"Errors ({len(found)}):", "", *found, ""])
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Print the report; ``--write`` stores it, ``--check`` compares it with the stored one
    (exit 1 when they differ). A path before the flags stands for REPORT.md."""
    path = Path(argv[0]) if argv and not argv[0].startswith("-") else REPORT
    text = render()
    if "--check" in argv:
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            print(f"{path} is out of date: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    if "--write" in argv:
        path.write_text(text, encoding="utf-8")
        return 0
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
