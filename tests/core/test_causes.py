"""Unjudged causes are a type, written where the reason is (models/causes.py).

The closing lines, every format, the ``--fail-on`` gate's advice and ``scan --json`` group
unjudged attempts by their cause; none of them may read a cause back from a reason's words. So
the scene here rewords every reason at its source (every transport failure, every oracle that
cannot decide) and finds the groups, the gate's advice and the ``--json`` causes unchanged.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from probegate.library.loader import load_library
from probegate.library.oracles.base import OracleResult
from probegate.models.causes import CAUSE_TEXT, Cause
from probegate.models.report import finding_fp
from probegate.models.stored import legacy_cause
from probegate.transport.usage import TransportError
from tests.servers.configs import openai_config, scan_args
from tests.servers.faults import FlakyAgentServer

DOCS = Path(__file__).resolve().parents[2] / "docs" / "scoring.md"
SELECTION = ("asi02.*", "asi04.*", "asi08.*", "asi09.*")


def test_every_cause_has_its_words_and_its_fix() -> None:
    assert set(CAUSE_TEXT) == set(Cause)
    for cause, text in CAUSE_TEXT.items():
        if cause is not Cause.OTHER:  # a cause nobody named is labelled by its own reason
            assert text.label and text.fix, cause


def test_the_docs_table_of_causes_is_the_code_s() -> None:
    """docs/scoring.md lists every cause with the label and fix the closing lines print."""
    rows = {}
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^\| `(\w+)` \| (.*) \| (.*) \|$", line)
        if match:
            rows[match.group(1)] = (match.group(2), match.group(3))
    expected = {
        c.value: (t.label or "(the reason itself)", t.fix or "(none)")
        for c, t in CAUSE_TEXT.items()
    }
    assert rows == expected


@pytest.mark.parametrize(
    ("reason", "cause"),
    [
        ("needs a judge: the reply repeats the bait, quoted, at turns.1.content[3:9]", "ambiguous"),
        ("probe needs an LLM judge (--judge) and none is configured", "needs_judge"),
        ("its control could not be judged: HTTP 500 from target", "control"),
        ("cut short: scan stopped (cancelled)", "interrupted"),
        ("HTTP 429 from target: slow down (gave up after 4 tries)", "rate_limited"),
        ("unreadable reply: HTTP 200 with an HTML page, not JSON", "unreadable"),
        ("agent raised RuntimeError: boom", "agent_error"),
        ("something no version ever said", "other"),
    ],
)
def test_a_report_older_than_causes_gets_them_from_its_words_when_read(
    reason: str, cause: str
) -> None:
    """The one place a cause is read back from words: models/stored.py, for old reports."""
    assert legacy_cause(reason).value == cause


def _reworded(text: str) -> str:
    """Other words for the same reason: each word reversed, the order of words reversed."""
    return " ".join(word[::-1] for word in reversed(text.split())) + " (reworded)"


def _flaky_scan(tmp: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """A weak agent behind an endpoint that fails some requests, without retries and without
    a judge: unjudged attempts of several causes, and a --fail-on gate they leave open (its
    findings are accepted in a suppression file, so only the missing evidence decides it)."""
    tmp.mkdir()
    accepted = tmp / "accepted.yml"
    accepted.write_text(
        "suppressions:\n"
        + "".join(
            f"  - {{fp: {finding_fp(p.id)}, reason: the scene is about unjudged attempts}}\n"
            for p in load_library().probes
        ),
        encoding="utf-8",
    )
    with FlakyAgentServer(seed=3) as server:
        config = openai_config(tmp, server.endpoint)
        probes = [arg for glob in SELECTION for arg in ("--probes", glob)]
        args = scan_args(config, tmp, *probes, "--retries", "0", "--fail-on", "low")
        main([a for a in args if a != "--quiet"] + ["--suppressions", str(accepted), "--json"])
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


@pytest.mark.slow
def test_rewording_every_reason_changes_no_group_no_gate_advice_and_no_json_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = _flaky_scan(tmp_path / "plain", capsys)
    causes = {g["cause"] for g in plain["unjudged"]}
    # The scene has several causes, the judge's among them, and the gate is left open by them.
    assert {"unreadable", "server_error", "rate_limited", "ambiguous"} <= causes, causes
    assert "other" not in causes  # a cause nobody named is labelled by its words, by design

    transport_init = TransportError.__init__

    def reworded_transport(self: TransportError, reason: str, **kw: Any) -> None:
        transport_init(self, _reworded(reason), **kw)

    oracle_init = OracleResult.__init__

    def reworded_oracle(self: OracleResult, *args: Any, **kw: Any) -> None:
        oracle_init(self, *args, **kw)
        if self.reason:
            object.__setattr__(self, "reason", _reworded(self.reason))

    monkeypatch.setattr(TransportError, "__init__", reworded_transport)
    monkeypatch.setattr(OracleResult, "__init__", reworded_oracle)
    assert dataclasses.is_dataclass(OracleResult)
    reworded = _flaky_scan(tmp_path / "reworded", capsys)

    report = json.loads((tmp_path / "reworded" / "out" / "scan.json").read_text("utf-8"))
    assert all(u["reason"].endswith("(reworded)") for u in report["unjudged"])
    # The groups: cause, heading, fix, count and probes, in the same order.
    assert reworded["unjudged"] == plain["unjudged"]
    # The gate's advice (--judge named for the causes a judge decides) and its decision.
    assert reworded["gates"] == plain["gates"]
    assert reworded["exit_code"] == plain["exit_code"] == 3
    assert any("--judge SPEC decides" in gate for gate in plain["gates"]), plain["gates"]
