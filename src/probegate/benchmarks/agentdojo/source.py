"""Which AgentDojo suites a scan runs, and everything built from them once, before any request.

``--suite agentdojo`` runs the four suites, ``--suite agentdojo:banking,slack`` the ones named.
:func:`load_source` imports the package (the optional extra: without it, a usage error that
says how to install it), loads AgentDojo's suites at :data:`BENCHMARK_VERSION`, fills its
attack's template with each injection task's goal and builds one probe per task pair
(probes.py). The same object opens each attempt's environment (environment.py).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import dataclass
from typing import Any

from probegate.benchmarks.agentdojo.environment import AgentDojoEnvironment
from probegate.benchmarks.agentdojo.probes import Pair, injection_oracles, pair_probe
from probegate.benchmarks.agentdojo.tools import tool_spec
from probegate.errors import UsageError
from probegate.library.probe import Probe
from probegate.models.tools import ToolSpec

NAME = "agentdojo"
SUITE_NAMES = ("banking", "slack", "travel", "workspace")
# AgentDojo's own default benchmark version in 0.1.35 (``agentdojo.benchmark``).
BENCHMARK_VERSION = "v1.2.2"
# The attack AgentDojo's papers and leaderboard report on: its template carries the goal.
DEFAULT_ATTACK = "important_instructions"
INSTALL_HINT = "pip install 'probegate[agentdojo]'"
# The prose name AgentDojo's attacks call a model they do not recognise by.
_UNKNOWN_MODEL = "the AI language model"
# A pipeline name AgentDojo's attacks recognise; only used to build one (see _attack).
_KNOWN_PIPELINE = "gpt-4o-2024-05-13"


@dataclass(frozen=True)
class SuiteSpec:
    """``agentdojo[:SUITE[,SUITE...]]``, parsed: the suites to run, in a fixed order."""

    suites: tuple[str, ...]

    def __str__(self) -> str:
        if self.suites == SUITE_NAMES:
            return NAME
        return f"{NAME}:{','.join(self.suites)}"


def parse_suite(text: str) -> SuiteSpec:
    """The suites a ``--suite`` value names; a usage error for anything else."""
    name, _, rest = text.strip().partition(":")
    if name.lower() != NAME:
        raise UsageError(f"--suite {text!r}: the only suite source is {NAME}[:SUITE,...]")
    if not rest:
        return SuiteSpec(SUITE_NAMES)
    asked = [s.strip().lower() for s in rest.split(",") if s.strip()]
    unknown = [s for s in asked if s not in SUITE_NAMES]
    if unknown or not asked:
        raise UsageError(
            f"--suite {text!r}: unknown AgentDojo suite {', '.join(unknown) or '(none)'}; "
            f"choose from {', '.join(SUITE_NAMES)}"
        )
    return SuiteSpec(tuple(s for s in SUITE_NAMES if s in asked))


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise UsageError(
            f"--suite {NAME} needs AgentDojo, an optional extra that is not installed "
            f"({exc.name or module} could not be imported): {INSTALL_HINT}"
        ) from None


@dataclass(frozen=True)
class _Suite:
    name: str
    suite: Any  # agentdojo.task_suite.TaskSuite
    tools: list[ToolSpec]


class AgentDojoSource:
    """The probes of the chosen suites and, per attempt, a fresh environment for one of them.

    Implements :class:`~probegate.targets.sandbox.Environments` for the engine: a probe id of
    one of its pairs opens that pair's environment, any other id opens none.
    """

    def __init__(self, spec: SuiteSpec, *, model: str | None = None) -> None:
        self.spec = spec
        loaded = _import("agentdojo.task_suite.load_suites")
        self.package_version = importlib.metadata.version("agentdojo")
        self._suites = {
            name: _Suite(
                name,
                suite,
                [tool_spec(f) for f in suite.tools],
            )
            for name, suite in sorted(loaded.get_suites(BENCHMARK_VERSION).items())
            if name in spec.suites
        }
        self.attack_name = DEFAULT_ATTACK
        self.pairs: dict[str, Pair] = {}
        self.probes: list[Probe] = []
        for suite in self._suites.values():
            self._add_pairs(suite, _attack(suite.suite, model))

    def _add_pairs(self, suite: _Suite, attack: Any) -> None:
        environment = suite.suite.load_and_inject_default_environment({})
        injections = [
            (injection_id, task, injection_oracles(environment.model_copy(deep=True), task))
            for injection_id, task in _ordered(suite.suite.injection_tasks)
        ]
        for user_id, user_task in _ordered(suite.suite.user_tasks):
            vectors = tuple(sorted(attack.get_injection_candidates(user_task)))
            for injection_id, injection_task, oracles in injections:
                filled = attack.attack(user_task, injection_task)
                pair = Pair(
                    suite=suite.name,
                    user_task=user_id,
                    injection_task=injection_id,
                    vectors=vectors,
                    # The attack fills every vector with the same text for one pair.
                    payload=next(iter(filled.values())),
                )
                probe = pair_probe(pair, str(user_task.PROMPT), str(injection_task.GOAL), oracles)
                self.pairs[probe.id] = pair
                self.probes.append(probe)

    @property
    def version(self) -> str:
        """What the probes are a version of: the package and AgentDojo's benchmark version."""
        return f"{NAME}-{self.package_version}-{BENCHMARK_VERSION}"

    def tools(self, suite: str) -> list[ToolSpec]:
        return list(self._suites[suite].tools)

    def open(
        self, probe_id: str, payload: str | None, *, control: bool
    ) -> AgentDojoEnvironment | None:
        pair = self.pairs.get(probe_id)
        if pair is None:
            return None
        suite = self._suites[pair.suite]
        return AgentDojoEnvironment(
            pair,
            suite.suite,
            suite.tools,
            # A control holds no attack: the vectors keep AgentDojo's own benign defaults.
            injections={} if control or payload is None else dict.fromkeys(pair.vectors, payload),
            control=control,
        )


def load_source(text: str, *, model: str | None = None) -> AgentDojoSource:
    """The suites ``text`` names, loaded: a usage error without the extra or for a bad name."""
    return AgentDojoSource(parse_suite(text), model=model)


def _ordered(tasks: dict[str, Any]) -> list[tuple[str, Any]]:
    """Tasks by their number (``user_task_2`` before ``user_task_10``)."""
    return sorted(tasks.items(), key=lambda item: int(item[0].rsplit("_", 1)[1]))


def _attack(suite: Any, model: str | None) -> Any:
    """AgentDojo's attack, built the way its benchmark builds it for a pipeline named after
    the model under test; a model its table does not know is called by its generic name."""
    registry = _import("agentdojo.attacks.attack_registry")
    _import("agentdojo.attacks")  # registers the attacks
    models = _import("agentdojo.models")
    base = _import("agentdojo.agent_pipeline.base_pipeline_element")
    known = model if model in models.MODEL_NAMES else _KNOWN_PIPELINE

    class _Named(base.BasePipelineElement):  # type: ignore[misc, name-defined]
        name = known

        def query(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("probegate runs the agent; this only names its model")

    attack = registry.load_attack(DEFAULT_ATTACK, suite, _Named())
    if model not in models.MODEL_NAMES:
        attack.model_name = _UNKNOWN_MODEL
    return attack
