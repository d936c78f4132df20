"""Scenario suites (docs/scenarios.md): functional tests for an agent, next to the security scan.

A suite is a YAML file of scenarios (an input, what the agent should say or do, and which
scorers judge it). ``probegate run PATH --adapter MODULE:ATTR`` runs every scenario through the
user's adapter and writes a RunResult per suite in AgenticAssure's JSON shape, plus JUnit and
Markdown on request. Data flows one way:

    loader (YAML -> Suite) -> runner (adapter -> AgentResult -> scorers) -> RunResult
    -> compare (against a baseline RunResult) -> formats (pure renderers -> bytes)

The command (``probegate.commands.run``) turns its flags into one ``RunConfig``
(``run_config``) and makes one call, ``pipeline.execute_run``, which runs the stages and
writes the files; the other modules never read the clock or the file system outside
``loader`` and ``runner``.
"""
