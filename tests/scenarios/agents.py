"""Adapters for the scenario tests (imported as ``tests.scenarios.agents``).

Each one is a small, real adapter of one shape or one failure the runner must survive; no
mocks. ``RELEASE`` frees the hanging adapter so its abandoned thread ends with the test.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

RELEASE = threading.Event()
CALLS: list[str] = []


def echo_dict(input: str, context: dict[str, Any]) -> dict[str, Any]:
    """A function returning a dict: calls lookup_order when asked about an order."""
    calls = []
    if "order" in input:
        calls.append({"name": "lookup_order", "arguments": {"order_id": "A1"}, "result": "ok"})
    return {
        "output": f"echo: {input}",
        "tool_calls": calls,
        "token_usage": {"prompt_tokens": 3, "completion_tokens": 2},
        "unrelated_framework_field": object(),
    }


@dataclass
class Call:
    name: str
    arguments: dict[str, Any]
    result: Any = None


@dataclass
class Reply:
    output: str
    tool_calls: list[Call] = field(default_factory=list)
    raw_response: Any = None


class EchoAgent:
    """A class adapter returning an object; counts instances to show one per attempt."""

    instances = 0
    model_info = {"name": "echo", "temperature": 0}

    def __init__(self) -> None:
        type(self).instances += 1
        self.seen: list[str] = []

    def run(self, input: str, context: dict[str, Any]) -> Reply:
        self.seen.append(input)  # would leak across scenarios if instances were shared
        context["mutated"] = True  # must not change the scenario in the report
        return Reply(
            output=f"echo: {input} (seen {len(self.seen)}) {context.get('lang', '')}".strip(),
            tool_calls=[Call("search", {"q": input, "filters": {"lang": "en", "n": 3}})],
            raw_response={"id": "r-1", "when": {1, 2}},
        )


def raising(input: str, context: dict[str, Any]) -> Any:
    raise ValueError("upstream said no\n" + "x" * 1000)


def hanging(input: str, context: dict[str, Any]) -> Any:
    RELEASE.wait(10)
    return {"output": "too late"}


def flaky(input: str, context: dict[str, Any]) -> Any:
    """Fails the first two calls of a test, then answers."""
    CALLS.append(input)
    if len(CALLS) <= 2:
        raise ConnectionError(f"attempt {len(CALLS)} failed")
    return "recovered"


def plain_string(input: str, context: dict[str, Any]) -> str:
    return f"echo: {input}"


def returns_none(input: str, context: dict[str, Any]) -> None:
    return None


def bad_tool_calls(input: str, context: dict[str, Any]) -> Any:
    return {"output": "hi", "tool_calls": [{"arguments": {}}]}


def exits(input: str, context: dict[str, Any]) -> Any:
    raise SystemExit(3)


def hostile(input: str, context: dict[str, Any]) -> Any:
    return {"output": "\x1b]0;owned\x07\x1b[2J::error::fake\nsecond line\u202e"}


def one_argument(input: str) -> str:
    return input


class NeedsConfig:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def run(self, input: str, context: dict[str, Any]) -> str:
        return input


class NoRun:
    pass


class BadModelInfo:
    model_info = "gpt"

    def run(self, input: str, context: dict[str, Any]) -> str:
        return input


NOT_CALLABLE = 42


def _deep(levels: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(levels):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


def hostile_output(input: str, context: dict[str, Any]) -> Any:
    """What a hostile agent hands back, chosen by the scenario's input."""
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    if input == "surrogate":
        return {"output": "half an emoji \ud83d and \udfff", "raw_response": cyclic}
    if input == "deep":
        return {
            "output": "ok",
            "tool_calls": [{"name": "lookup", "arguments": {"q": _deep(5_000)}}],
            "reasoning_trace": _deep(5_000),
        }
    if input == "calls":
        return {"output": "ok", "tool_calls": [{"name": "lookup"}] * 10_000}
    return {"output": "![" * 500_000}  # a megabyte, the worst case of a backtracking regex
