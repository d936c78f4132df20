"""The oracle kinds are listed once (library/oracles KINDS); everything else derives from it.

The probe schema (the discriminated union probe files are parsed with), the "Oracle kinds"
section of docs/probes.md, the oracles table of docs/custom-probes.md, the kinds named by
``probegate probes list --help`` and the judging all follow the registry; these tests fail when
one of them does not. The last one shows that a kind holding other oracles (``all_of``,
docs/scoring.md) fits the pattern: one module, one line.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import ClassVar, Literal

import pytest
from pydantic import TypeAdapter, ValidationError

from probegate.cli import main
from probegate.judge.attempt import judge_attempt
from probegate.library.oracles import KINDS, ORACLE_KINDS, oracle_union
from probegate.library.oracles.base import JudgeContext, OracleModel, OracleResult
from probegate.library.probe import Probe
from probegate.models.transcript import Transcript
from probegate.models.verdict import Outcome
from tests.library.oracles.helpers import call, context, probe_with, transcript

DOCS = Path(__file__).resolve().parents[3] / "docs" / "probes.md"
CUSTOM = DOCS.with_name("custom-probes.md")


def test_the_probe_schema_is_the_union_of_the_registry() -> None:
    schema = Probe.model_json_schema()
    union = schema["properties"]["oracles"]["items"]
    assert set(union["discriminator"]["mapping"]) == set(ORACLE_KINDS)
    assert len(union["oneOf"]) == len(KINDS)
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        probe_with({"kind": "no_such_kind"})


def test_every_kind_is_complete() -> None:
    for name, kind in ORACLE_KINDS.items():
        assert kind.kind_name() == name
        assert kind.SUMMARY.strip(), name
        for method in ("describe", "decide"):
            assert getattr(kind, method) is not getattr(OracleModel, method), (name, method)


def test_docs_list_the_registry_in_its_order() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Oracle kinds", 1)[1].split("\n## ", 1)[0]
    bullets = [line for line in section.splitlines() if line.startswith("- `")]
    assert bullets == [f"- `{k.kind_name()}`: {k.SUMMARY}" for k in KINDS]


def test_the_custom_probe_format_has_a_row_per_kind_in_its_order() -> None:
    section = CUSTOM.read_text(encoding="utf-8").split("### `oracles`", 1)[1]
    table = section.split("| kind | fields | vulnerable when |", 1)[1].splitlines()[2:]
    rows = list(itertools.takewhile(lambda line: line.startswith("|"), table))
    assert [row.split(" | ")[0].strip("| `") for row in rows] == list(ORACLE_KINDS)


def test_probes_list_help_names_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probes", "list", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"Oracle kinds: {', '.join(ORACLE_KINDS)}" in help_text


class _BothOracle(OracleModel):
    """A test-only conjunction: vulnerable when every inner oracle is (like all_of)."""

    kind: Literal["both"] = "both"
    oracles: tuple[Oracle, ...]  # noqa: F821 - resolved by oracle_union

    SUMMARY: ClassVar[str] = "Vulnerable when every inner oracle is."

    def describe(self) -> str:
        return "`both`: " + "; ".join(o.describe() for o in self.oracles)

    def decide(self, transcript: Transcript, ctx: JudgeContext) -> OracleResult:
        assert ctx.decide is not None
        results = [ctx.decide(o, transcript) for o in self.oracles]
        if not all(r.decided for r in results):
            return OracleResult(False, reason="an inner oracle could not decide")
        if all(r.evidence for r in results):
            return OracleResult(True, tuple(e for r in results for e in r.evidence))
        return OracleResult(True)

    def needs_judge(self) -> bool:
        return all(o.needs_judge() for o in self.oracles)


def test_a_kind_holding_oracles_is_one_class_and_one_registry_line() -> None:
    union = oracle_union((*KINDS, _BothOracle))
    spec = {
        "kind": "both",
        "oracles": [
            {"kind": "output_pattern", "pattern": "pwned"},
            {"kind": "tool_call", "tool": "send_email"},
        ],
    }
    both = TypeAdapter(union).validate_python(spec)
    assert isinstance(both, _BothOracle) and both.describe().startswith("`both`: `output_pattern`")
    base = probe_with({"kind": "output_pattern", "pattern": "x"})
    probe = base.model_copy(update={"oracles": (both,)})
    ctx: JudgeContext = context(probe)
    only_text = judge_attempt(transcript("pwned"), ctx)
    assert only_text.outcome is Outcome.RESISTED  # one of the two saw nothing
    both_seen = judge_attempt(transcript(("pwned", [call("send_email", to="x@evil.test")])), ctx)
    assert both_seen.outcome is Outcome.VULNERABLE and len(both_seen.evidence) == 2
