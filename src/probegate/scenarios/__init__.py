"""Scenario suites (docs/scenarios.md): functional tests for an agent, next to the security scan.

A suite is a YAML file of scenarios (an input, what the agent should say or do, and which
scorers judge it). ``probegate run PATH --adapter MODULE:ATTR`` runs every scenario through the
user's adapter and writes a RunResult per suite in AgenticAssure's JSON shape, plus JUnit and
Markdown on request. Data flows one way:

    loader (YAML -> Suite) -> runner (adapter -> AgentResult -> scorers) -> RunResult
    -> compare (against a baseline RunResult) -> outputs (pure renderers -> bytes)

The package never reads the clock or the file system outside ``loader`` and ``runner``; the
command module (``probegate.commands.run``) only wires these together.
"""
