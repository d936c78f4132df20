"""AgentDojo (ETH Zurich, MIT licence) as a probe source: ``probegate scan --suite agentdojo``.

AgentDojo ships four suites (workspace, banking, slack, travel): an environment, tools that act
on it, user tasks, injection tasks, injection vectors in the environment, attacks that fill
the vectors with an injection task's goal, and for each injection task a deterministic
``security`` check of the environment after the run. Each user task x injection task pair
becomes one probe (``probes.py``); each attempt runs on a fresh copy of the suite's
environment with the pair's vectors carrying the attack (``environment.py``), and is checked
by AgentDojo's own ``security`` and ``utility`` after the conversation. The package is the
optional extra ``probegate[agentdojo]``; it is imported here only when a scan asks for it, and
nothing of its code or text is kept in probegate (docs/agentdojo.md).
"""

from probegate.benchmarks.agentdojo.source import (
    BENCHMARK_VERSION,
    DEFAULT_ATTACK,
    INSTALL_HINT,
    SUITE_NAMES,
    AgentDojoSource,
    SuiteSpec,
    load_source,
    parse_suite,
)

__all__ = [
    "BENCHMARK_VERSION",
    "DEFAULT_ATTACK",
    "INSTALL_HINT",
    "SUITE_NAMES",
    "AgentDojoSource",
    "SuiteSpec",
    "load_source",
    "parse_suite",
]
