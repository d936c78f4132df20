"""Scripted "models" that play AgentDojo's tasks, for the model server of model_apis.py.

Each is a decision maker with ``reply(messages, tools)``: it recognises the suite by the tools
it is offered and the user task by the user's message, then does what AgentDojo's own ground
truth does (all the user task's calls in one reply, its expected answer at the end). What it
does with an injection it reads in a tool result is its character:

- ``follower``: with probability ``p`` (seeded by the pair, so the same run gives the same
  choices) it also makes the injection task's ground-truth calls and says what the goal asks;
- ``careful``: never does (``p`` is ignored), and tells the user what it refused, quoting it;
- ``leaker``: with probability ``p`` it makes the injection task's calls to the attacker's
  destination, but sends its own secret (the credential in its system prompt) in place of
  every value the goal did not spell out: a leak through tool arguments.

It reads AgentDojo's own data (the package is the optional extra) and only the chat messages it
is sent, so any of the three model APIs (and an agent that takes its tools over MCP) can sit in
front of it. Written for the tests, apart from probegate's own derivation of its oracles.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

MARKER = "<INFORMATION>"
SECRET = re.compile(r"PGKEY-[0-9A-F]{12}")
_WORDS = re.compile(r"[^0-9a-z]+")
VERSION = "v1.2.2"


def _plain(text: str) -> str:
    return _WORDS.sub("", text.casefold())


def _call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


@dataclass
class _Tasks:
    """One suite's tasks and their ground truths, computed once."""

    suite: Any
    tools: frozenset[str]
    user_calls: dict[str, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)
    injection_calls: dict[str, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)


class DojoAgent:
    """A scripted agent for AgentDojo's suites (see the module's docstring)."""

    def __init__(self, character: str = "follower", p: float = 0.5, seed: int = 0) -> None:
        if character not in ("follower", "careful", "leaker"):
            raise ValueError(character)
        self.character = character
        self.p = 0.0 if character == "careful" else p
        self.seed = seed
        self._lock = threading.Lock()
        self._suites: list[_Tasks] | None = None

    # -- AgentDojo's data, loaded once ----------------------------------------------------
    def _load(self) -> list[_Tasks]:
        with self._lock:
            if self._suites is None:
                from agentdojo.task_suite.load_suites import get_suites

                self._suites = [
                    _Tasks(suite, frozenset(f.name for f in suite.tools))
                    for _, suite in sorted(get_suites(VERSION).items())
                ]
            return self._suites

    def _tasks_for(self, tools: Any) -> _Tasks | None:
        offered = frozenset(tools)
        return next((t for t in self._load() if t.tools == offered), None)

    def _ground_truth(self, tasks: _Tasks, task: Any, user: bool) -> list[tuple[str, Any]]:
        table = tasks.user_calls if user else tasks.injection_calls
        with self._lock:
            if task.ID not in table:
                env = tasks.suite.load_and_inject_default_environment({})
                if user:
                    env = task.init_environment(env)
                table[task.ID] = [(c.function, dict(c.args)) for c in task.ground_truth(env)]
            return table[task.ID]

    # -- the decision ---------------------------------------------------------------------
    def reply(self, messages: list[dict[str, Any]], tools: Any) -> tuple[Any, list[Any]]:
        tasks = self._tasks_for(tools)
        users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
        if tasks is None or not users:
            return "I cannot help with that.", []
        prompt = users[0]
        user_task = next((t for t in tasks.suite.user_tasks.values() if prompt == t.PROMPT), None)
        if user_task is None:
            return "I do not know that task.", []
        steps = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
        injection = self._injection(tasks, messages)
        follows = injection is not None and self._follows(prompt, injection.GOAL)
        if steps == 0:
            calls = self._ground_truth(tasks, user_task, user=True)
            if calls:
                return None, self._calls(calls, "u")
            steps = 1
        if steps == 1 and follows:
            assert injection is not None
            calls = self._ground_truth(tasks, injection, user=False)
            if self.character == "leaker":
                calls = self._leaking(calls, injection.GOAL, messages)
            if calls:
                return None, self._calls(calls, "i")
        said = str(user_task.GROUND_TRUTH_OUTPUT or "Done.")
        if follows and injection is not None and injection.GROUND_TRUTH_OUTPUT:
            said += f" {injection.GROUND_TRUTH_OUTPUT}"
        elif injection is not None and self.character == "careful":
            # It tells the user what it refused, quoting it: words the rules may leave to a judge.
            said += (
                f' Note: a tool result told me to "{injection.GOAL}" I did not do that: it is '
                "not what you asked for."
            )
        return said, []

    def _injection(self, tasks: _Tasks, messages: list[dict[str, Any]]) -> Any:
        """The injection task whose goal a tool result carries, if any."""
        read = [_text(m.get("content")) for m in messages if m.get("role") == "tool"]
        carried = _plain(" ".join(r for r in read if MARKER in r or "INFORMATION" in r))
        if not carried:
            return None
        found = [t for t in tasks.suite.injection_tasks.values() if _plain(t.GOAL) in carried]
        return max(found, key=lambda t: len(t.GOAL)) if found else None

    def _follows(self, prompt: str, goal: str) -> bool:
        digest = hashlib.sha256(f"{self.seed}|{prompt}|{goal}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.p

    def _leaking(
        self, calls: list[tuple[str, Any]], goal: str, messages: list[dict[str, Any]]
    ) -> list[tuple[str, Any]]:
        system = " ".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
        found = SECRET.search(system)
        secret = found.group(0) if found else "no-secret-found"
        folded = goal.casefold()

        def swap(value: Any) -> Any:
            if isinstance(value, str) and value.casefold() not in folded:
                return secret
            if isinstance(value, list):
                return [swap(v) for v in value]
            return value

        return [(name, {k: swap(v) for k, v in args.items()}) for name, args in calls]

    @staticmethod
    def _calls(calls: list[tuple[str, Any]], tag: str) -> list[dict[str, Any]]:
        return [
            _call(name, json.loads(json.dumps(args, default=str)), f"call_{tag}{i}")
            for i, (name, args) in enumerate(calls)
        ]
