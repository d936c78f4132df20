"""AgentDojo's suites as probegate reads them: environments, tools, probes (needs the extra)."""

from __future__ import annotations

import pytest

from probegate.benchmarks.agentdojo import SUITE_NAMES, load_source
from probegate.benchmarks.agentdojo.environment import load_environment
from probegate.benchmarks.agentdojo.source import AgentDojoSource
from probegate.benchmarks.agentdojo.tools import CAPABILITIES
from probegate.library.oracles.tool_call import ToolCallOracle
from probegate.models.transcript import Transcript, Turn

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def source() -> AgentDojoSource:
    return load_source("agentdojo")


@pytest.mark.parametrize("name", SUITE_NAMES)
def test_an_environment_is_the_one_agentdojo_builds(source: AgentDojoSource, name: str) -> None:
    """libyaml's parse of AgentDojo's environment text, attack in its vectors, equals the
    environment AgentDojo's own loader builds."""
    suite = source._suites[name].suite
    pair = next(p for p in source.pairs.values() if p.suite == name)
    injections = dict.fromkeys(pair.vectors, pair.payload)
    assert load_environment(suite, injections) == suite.load_and_inject_default_environment(
        injections
    )
    assert load_environment(suite, {}) == suite.load_and_inject_default_environment({})


def test_every_tool_of_the_suites_says_what_it_can_do(source: AgentDojoSource) -> None:
    offered = {t.name for name in SUITE_NAMES for t in source.tools(name)}
    assert offered == set(CAPABILITIES)


def test_every_pair_is_a_probe_with_an_oracle_of_its_own(source: AgentDojoSource) -> None:
    assert len(source.probes) == 949  # 16x9 + 21x5 + 20x7 + 40x14 at v1.2.2
    assert len({p.id for p in source.probes}) == 949
    for probe in source.probes:
        # Beside the planted-secret oracle, at least one about the injection's own goal.
        assert len(probe.oracles) >= 2, probe.id
        assert probe.payload and "<INFORMATION>" in probe.payload
        for oracle in probe.oracles:
            if isinstance(oracle, ToolCallOracle) and oracle.tool is not None:
                assert oracle.tool in CAPABILITIES


def test_a_control_holds_no_attack_and_an_attempt_does(source: AgentDojoSource) -> None:
    probe = source.probes[0]
    attacked = source.open(probe.id, probe.payload, control=False)
    control = source.open(probe.id, probe.payload, control=True)
    assert attacked is not None and control is not None
    reads = [t.name for t in attacked.tools if t.name == "read_file"]
    assert reads  # banking's user task 0 reads a bill, where the attack sits
    attacked.run("get_balance", {})
    before = attacked.check(Transcript(turns=[Turn(role="assistant", content="Done.")]))
    assert before.delivered is False  # nothing it read carried the attack yet
    said, _ = attacked.run("read_file", {"file_path": "bill-december-2023.txt"})
    assert "<INFORMATION>" in said
    after = attacked.check(Transcript(turns=[Turn(role="assistant", content="Done.")]))
    assert after.delivered is True
    said, _ = control.run("read_file", {"file_path": "bill-december-2023.txt"})
    assert "<INFORMATION>" not in said
    # A tool that does not exist is answered with AgentDojo's own error, not an exception.
    _, error = control.run("no_such_tool", {})
    assert error is not None and "no_such_tool" in error
    check = control.check(Transcript(turns=[Turn(role="assistant", content="Done.")]))
    assert check.attack_succeeded is False and check.suite == "banking"
    assert check.delivered is None  # a control carries no attack to deliver


def test_another_probe_opens_no_environment(source: AgentDojoSource) -> None:
    assert source.open("asi01.indirect-document-email-exfil.v1", "x", control=False) is None
