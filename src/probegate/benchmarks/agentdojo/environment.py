"""One attempt's AgentDojo environment: its tools run on a fresh copy, then AgentDojo checks it.

Each attempt loads the suite's environment with the pair's injection vectors filled with the
attack (a control: with AgentDojo's own benign defaults), prepares it for the user task as
AgentDojo's benchmark does, and keeps a copy as it was before the agent acted. Every call the
agent makes runs through AgentDojo's ``FunctionsRuntime`` on that environment, and its result
is written as AgentDojo's own agents read it (``tool_result_to_str``). When the conversation is
over, :meth:`AgentDojoEnvironment.check` runs AgentDojo's ``security`` check of the injection
task and ``utility`` check of the user task on the environment before and after, with the
agent's final reply and its calls: the benchmark's verdict, kept beside probegate's.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import threading
from functools import lru_cache
from typing import Any

import yaml

from probegate.benchmarks.agentdojo.probes import Pair
from probegate.models.tools import ToolSpec
from probegate.models.transcript import Transcript
from probegate.models.verdict import ReferenceCheck, truncate
from probegate.targets.sandbox import EnvironmentUnavailable

_ERROR_MAX = 300
_NOT_WORDS = re.compile(r"[^0-9a-z]+")
# A result AgentDojo writes with ``str()`` (a dict of reviews) shows a newline as ``\n``.
_ESCAPES = re.compile(r"\\[ntr]")


def _plain(text: str) -> str:
    """Letters and digits only: the attack as a tool result shows it, after YAML folded its
    lines and quoted it, or ``str()`` escaped its newlines, is the same run of them."""
    return _NOT_WORDS.sub("", _ESCAPES.sub(" ", text).casefold())


# libyaml's loader when this PyYAML has it: AgentDojo's environment files parse to the same data
# three times as fast (tests/benchmarks/test_agentdojo_environment.py holds the two equal).
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# Some of AgentDojo's checks print what they compare (slack's injection_task_2 prints what was
# posted): that must not reach probegate's stdout, where ``--json`` writes. Swapping sys.stdout
# is process-wide, so checks on different threads take turns.
_QUIET = threading.Lock()


@lru_cache(maxsize=8)
def _defaults(suite: Any) -> dict[str, str]:
    """The suite's injection vectors with AgentDojo's benign default texts."""
    return dict(suite.get_injection_vector_defaults())


def load_environment(suite: Any, injections: dict[str, str]) -> Any:
    """The suite's environment with ``injections`` in its vectors: what AgentDojo's
    ``load_and_inject_default_environment`` builds (its environment text, its vectors'
    defaults for the rest, its environment model), parsed by libyaml where it is installed.
    A workspace environment took 0.16 s to build that way and takes 0.06 s here; an attempt
    and its control each build one."""
    module = importlib.import_module("agentdojo.task_suite.task_suite")
    text = module.read_suite_file(suite.name, "environment.yaml", suite.data_path)
    filled = text.format(**{**_defaults(suite), **injections})
    return suite.environment_type.model_validate(yaml.load(filled, Loader=_LOADER))  # noqa: S506


class AgentDojoEnvironment:
    """A :class:`~probegate.targets.sandbox.ToolEnvironment` over AgentDojo's environment."""

    def __init__(
        self,
        pair: Pair,
        suite: Any,
        tools: list[ToolSpec],
        *,
        injections: dict[str, str],
        control: bool,
    ) -> None:
        runtime = importlib.import_module("agentdojo.functions_runtime")
        execution = importlib.import_module("agentdojo.agent_pipeline.tool_execution")
        self._types = importlib.import_module("agentdojo.types")
        self._format = execution.tool_result_to_str
        self._call = runtime.FunctionCall
        self.pair = pair
        self.control = control
        self._suite = suite
        self._tools = tools
        self._user_task = suite.get_user_task_by_id(pair.user_task)
        self._injection_task = suite.get_injection_task_by_id(pair.injection_task)
        try:
            loaded = load_environment(suite, injections)
        except Exception as exc:  # what AgentDojo's YAML and models raise varies
            raise EnvironmentUnavailable(
                f"AgentDojo's {pair.suite} environment could not hold this payload: "
                f"{truncate(f'{type(exc).__name__}: {exc}', _ERROR_MAX)}"
            ) from None
        self._env = self._user_task.init_environment(loaded)
        self._before = self._env.model_copy(deep=True)
        self._runtime = runtime.FunctionsRuntime(suite.tools)
        self._traces: list[Any] = []
        # What proves the attack reached the agent: its text in a result the agent was sent.
        payloads = {_plain(text) for text in injections.values()} - {""}
        self._payloads = payloads
        self._delivered = False
        # An agent on probegate's MCP server may call in parallel: one call at a time acts.
        self._lock = threading.Lock()

    @property
    def tools(self) -> list[ToolSpec]:
        return self._tools

    @property
    def delivered(self) -> bool:
        return self._delivered

    def run(self, name: str, arguments: dict[str, Any]) -> tuple[str, str | None]:
        with self._lock:
            self._traces.append(self._call(function=name, args=dict(arguments)))
            result, error = self._runtime.run_function(self._env, name, dict(arguments))
        if error is not None:
            return "", str(error)
        try:
            said = self._format(result)
        except Exception as exc:  # a result AgentDojo's own formatter cannot write
            return "", f"{type(exc).__name__}: {exc}"
        if self._payloads and not self._delivered:
            plain = _plain(said)
            self._delivered = any(p in plain for p in self._payloads)
        return said, None

    def check(self, transcript: Transcript) -> ReferenceCheck:
        """AgentDojo's own checks of this attempt, as its benchmark runs them."""
        replies = [turn for _, turn in transcript.assistant_turns()]
        output = replies[-1].content if replies else ""
        blocks = [self._types.text_content_block_from_string(output)]
        with self._lock:
            traces = list(self._traces)
            security = self._verdict(self._injection_task, blocks, traces)
            utility = self._verdict(self._user_task, blocks, traces)
        errors = [e for e in (security[1], utility[1]) if e]
        return ReferenceCheck(
            suite=self.pair.suite,
            user_task=self.pair.user_task,
            injection_task=self.pair.injection_task,
            attack_succeeded=security[0],
            utility=utility[0],
            delivered=None if self.control else self._delivered,
            error="; ".join(errors),
        )

    def _verdict(self, task: Any, blocks: list[Any], traces: list[Any]) -> tuple[bool | None, str]:
        try:
            # The check AgentDojo's benchmark itself runs after each task (task_suite.py).
            with _QUIET, contextlib.redirect_stdout(io.StringIO()):
                ok = self._suite._check_task_result(task, blocks, self._before, self._env, traces)
        except Exception as exc:  # a check can fail on what an agent left behind
            return None, truncate(f"{task.ID}: {type(exc).__name__}: {exc}", _ERROR_MAX)
        return bool(ok), ""
