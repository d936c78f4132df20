"""The reply corpus (tests/data/corpus) judged as a scan judges it, voice by voice.

Each file holds, for one probe, replies in six voices: a careful agent's, and its adversarial
twin that starts from the same wording and then falls for the bait. Every reply is judged in
the probe's own conversation (its user turns, the attacker's payload in the fixtures) by the
probe's oracles, without a judge and with a judge that knows the truth (an in-process stand-in
for an LLM judge that answers every ambiguous attempt correctly). The table says, per voice, how
many careful replies became findings, how many twins were missed, and how many of each were
left to a judge.

``python -m tests.library.oracles.corpus`` prints the table (docs/scoring.md quotes it).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from probegate.judge.attempt import Judgement, judge_attempt
from probegate.library.loader import load_library
from probegate.library.oracles.base import JudgeContext, OracleResult, make_evidence
from probegate.library.oracles.judge import JudgeOracle
from probegate.library.probe import Probe
from probegate.models.causes import Cause
from probegate.models.transcript import ToolCall, Transcript, Turn
from probegate.models.verdict import Outcome
from probegate.targets.demo.tools import DEMO_TOOLS
from tests.library.oracles.helpers import context

TOOLS = {t.name: t for t in DEMO_TOOLS}

DATA = Path(__file__).resolve().parents[2] / "data"
# The corpus the rules were tuned on, and the one held out from them (never tuned on).
CORPUS = DATA / "corpus"
HELDOUT = DATA / "corpus_heldout"
VOICES = ("markdown", "terse", "quoted", "paraphrase", "quotes", "free")
PAYLOAD = "{{payload}}"


@dataclass(frozen=True)
class Reply:
    probe: Probe
    voice: str
    careful: bool  # the truth: a careful reply (no finding) or a twin (a finding)
    text: str
    calls: tuple[ToolCall, ...]
    language: str = "en"
    # The mutator whose output the reply answers ("seed": the probe's own payload), and that
    # output, which the attempt sent: in the conversation and in ``JudgeContext.payload``.
    mutator: str = "seed"
    payload: str | None = None

    @property
    def sent(self) -> str:
        """The payload the attempt sent."""
        return self.payload if self.payload is not None else self.probe.payload or ""


def replies(corpus: Path = CORPUS) -> list[Reply]:
    probes = {p.id: p for p in load_library().probes}
    out: list[Reply] = []
    for path in sorted(corpus.glob("*.yaml")):
        data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
        probe = probes[data["probe"]]
        for voice in VOICES:
            entry = data["voices"][voice]
            for careful, key in ((True, "careful"), (False, "twin")):
                calls = tuple(_call(probe, c) for c in entry.get(f"{key}_calls") or ())
                out.append(Reply(probe, voice, careful, entry[key], calls))
    return out


def _call(probe: Probe, data: dict[str, Any], payload: str | None = None) -> ToolCall:
    """A tool call as the sandbox answers it in this probe: failing where the probe's
    fixtures make that tool fail (by its name or a capability of it), with the payload the
    attempt sent (``payload``, else the probe's own) in the error."""
    tool = TOOLS.get(data["name"])
    keys = [data["name"], *(c.value for c in (tool.capabilities if tool else ()))]
    error = next(
        (probe.fixtures.tool_errors[k] for k in keys if k in probe.fixtures.tool_errors), None
    )
    arguments = data.get("arguments") or {}
    if error is not None:
        return ToolCall(
            name=data["name"],
            arguments=arguments,
            error=error.replace(PAYLOAD, payload if payload is not None else probe.payload or ""),
        )
    return ToolCall(name=data["name"], arguments=arguments, result="ok")


def conversation(reply: Reply) -> Transcript:
    """The probe's turns, a short answer to each but the last, then the reply and its calls."""
    turns: list[Turn] = []
    payload = reply.sent
    for i, turn in enumerate(reply.probe.turns):
        role = "user" if turn.sender == "user" else "agent"
        turns.append(Turn(role=role, content=turn.content.replace(PAYLOAD, payload)))
        last = i == len(reply.probe.turns) - 1
        text, calls = (reply.text, list(reply.calls)) if last else ("Sure.", [])
        turns.append(Turn(role="assistant", content=text, tool_calls=calls))
    return Transcript(turns=turns, tools_offered=[])


class KnowingJudge:
    """A judge that answers every ambiguous attempt with the corpus's truth."""

    def __init__(self) -> None:
        self.calls = 0
        self.truth: dict[str, bool] = {}

    def __call__(self, oracle: JudgeOracle, t: Transcript, ctx: JudgeContext) -> OracleResult:
        self.calls += 1
        text = t.turns[-1].content
        if self.truth[text]:
            return OracleResult(True, judged_by="judge")
        path = f"turns.{len(t.turns) - 1}.content"
        evidence = make_evidence(
            ctx, "judge", "security.unsafe_output", path, 0, len(text), text, 0.8
        )
        return OracleResult(True, (evidence,), judged_by="judge")


def judge(reply: Reply, judge_fn: KnowingJudge | None = None) -> Judgement:
    if judge_fn is not None:
        judge_fn.truth[reply.text] = reply.careful
    ctx = dataclasses.replace(context(reply.probe), payload=reply.payload)
    return judge_attempt(conversation(reply), ctx, judge_fn)


@dataclass
class Row:
    """One group's counts: careful replies found (false findings), left to a judge, and twins
    found, missed (judged resisted) and left to a judge. "Left to a judge" is unjudged with
    the cause ``ambiguous``; ``unjudged`` counts any other cause (none is expected)."""

    careful: int = 0
    false_findings: int = 0
    careful_ambiguous: int = 0
    twins: int = 0
    found: int = 0
    missed: int = 0
    twin_ambiguous: int = 0
    unjudged: int = 0

    def add(self, reply: Reply, verdict: Judgement) -> None:
        unjudged = verdict.outcome is Outcome.UNJUDGED
        ambiguous = unjudged and verdict.cause is Cause.AMBIGUOUS
        self.unjudged += unjudged and not ambiguous
        if reply.careful:
            self.careful += 1
            self.false_findings += verdict.outcome is Outcome.VULNERABLE
            self.careful_ambiguous += ambiguous
        else:
            self.twins += 1
            self.found += verdict.outcome is Outcome.VULNERABLE
            self.missed += verdict.outcome is Outcome.RESISTED
            self.twin_ambiguous += ambiguous

    def __iadd__(self, other: Row) -> Row:
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self


def tally(
    judged: Iterable[tuple[Reply, Judgement]], key: Callable[[Reply], str], keys: Iterable[str]
) -> dict[str, Row]:
    """The counts of judged replies grouped by ``key`` (a voice, a language, a mutator), in
    the order of ``keys``."""
    rows: dict[str, Row] = {k: Row() for k in keys}
    for reply, verdict in judged:
        rows[key(reply)].add(reply, verdict)
    return rows


def judged(corpus: list[Reply], *, with_judge: bool) -> list[tuple[Reply, Judgement]]:
    judge_fn = KnowingJudge() if with_judge else None
    return [(reply, judge(reply, judge_fn)) for reply in corpus]


def table(*, with_judge: bool, corpus: Path = CORPUS) -> dict[str, Row]:
    return tally(judged(replies(corpus), with_judge=with_judge), lambda r: r.voice, VOICES)


HEADER = (
    "| {what} | careful | false findings | careful left to a judge | twins | found | missed | "
    "twins left to a judge | unjudged otherwise |\n|---|---|---|---|---|---|---|---|---|"
)


def markdown(rows: dict[str, Row], what: str) -> list[str]:
    """The rows as a Markdown table, with a line for all of them."""
    lines = [HEADER.format(what=what)]
    total = Row()
    for name, r in [*rows.items(), ("all", total)]:
        if name != "all":
            total += r
        lines.append(
            f"| {name} | {r.careful} | {r.false_findings} | {r.careful_ambiguous} | "
            f"{r.twins} | {r.found} | {r.missed} | {r.twin_ambiguous} | {r.unjudged} |"
        )
    return lines


def by_rule(corpus: Path = CORPUS) -> Counter[str]:
    """What decided each twin found without a judge: the evidence detector."""
    counts: Counter[str] = Counter()
    for reply in replies(corpus):
        if reply.careful:
            continue
        verdict = judge(reply)
        if verdict.outcome is Outcome.VULNERABLE:
            counts[verdict.evidence[0].detector] += 1
    return counts


def render(corpus: Path = CORPUS) -> str:
    lines = [f"corpus {corpus.name}"]
    for with_judge in (False, True):
        lines.append(f"{'with' if with_judge else 'without'} a judge")
        lines.extend(markdown(table(with_judge=with_judge, corpus=corpus), "voice"))
        lines.append("")
    lines.append(
        "twins found without a judge, by detector: "
        + ", ".join(f"{k} {v}" for k, v in sorted(by_rule(corpus).items()))
    )
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(CORPUS))
    print()
    print(render(HELDOUT))
