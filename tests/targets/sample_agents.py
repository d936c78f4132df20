"""Python agents for the ``python`` target tests (imported as ``tests.targets.sample_agents``)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

URL = re.compile(r"https?://\S+")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def weak_agent(input: str, context: Any) -> dict[str, Any]:
    """Fetches what it is pointed at and obeys any 'email ... to X' it reads there."""
    url = URL.search(input)
    if url:
        text = context.call_tool("fetch_document", {"url": url.group(0)})
        target = EMAIL.search(text)
        if target:
            record = context.call_tool("lookup_customer", {"customer_id": "1001"})
            context.call_tool("send_email", {"to": target.group(0), "body": record})
        return {"output": f"Summary: {text[:80]}", "token_usage": {"prompt_tokens": 5}}
    if "key" in input.lower():
        return {"output": "My key is sk-py-REAL-SECRET-777", "tool_calls": []}
    return {"output": "Hello!"}


def reporting_agent(input: str, context: Any) -> Any:
    """Uses its own tools and reports them as AgentResult tool calls, as an object."""

    @dataclass
    class Call:
        name: str
        arguments: dict[str, Any]
        result: Any

    @dataclass
    class Result:
        output: str
        tool_calls: list[Call] = field(default_factory=list)
        token_usage: dict[str, int] | None = None

    context.call_tool("lookup_customer", {"customer_id": "1001"})
    return Result(
        output="done",
        tool_calls=[
            Call("lookup_customer", {"customer_id": "1001"}, "dup"),
            Call("send_email", {"to": "x@evil.test"}, {"status": "sent"}),
        ],
        token_usage={"prompt_tokens": 10, "completion_tokens": 4},
    )


def input_only(input: str) -> str:
    return f"echo: {input}"


def hangs(input: str, context: Any) -> Any:
    """Never answers in time; the scan must move on, not wait for it."""
    time.sleep(30)
    return "too late"


def exits(input: str, context: Any) -> Any:
    raise SystemExit(3)


def broken(input: str, context: Any) -> Any:
    raise RuntimeError("model backend exploded " + "x" * 2000)


class StatefulAgent:
    """A class agent: one instance per conversation, so history never leaks across attempts."""

    instances = 0

    def __init__(self) -> None:
        type(self).instances += 1
        self.seen: list[str] = []

    def run(self, input: str, context: Any) -> dict[str, Any]:
        self.seen.append(input)
        return {"output": f"turn {len(self.seen)} of session {context.session}"}


class NeedsArgs:
    def __init__(self, x: int) -> None:
        self.x = x

    def run(self, input: str) -> str:
        return input


class ClassmethodAgent:
    """``run`` is a classmethod: called on the class, it takes (input, context) with no self."""

    @classmethod
    def run(cls, input: str, context: Any) -> dict[str, Any]:
        return {"output": f"{cls.__name__} read {input!r} in session {context.session}"}


class StaticAgent:
    @staticmethod
    def run(input: str) -> str:
        return f"static: {input}"


def three_arguments(input: str, context: Any, extra: Any) -> str:
    return input


def crashes(input: str, context: Any) -> str:
    """Ends its whole process on ``crash`` (a native extension's abort, an ``os._exit``)."""
    import os

    if input == "crash":
        os._exit(3)
    return f"alive: {input}"


def tells_its_endpoints(input: str, context: Any) -> dict[str, Any]:
    """Reads what the context serves: the MCP endpoint, and a tool through the sandbox."""
    return {"output": context.mcp_url, "tool_calls": [], "token_usage": None}


def slow_but_alive(input: str, context: Any) -> str:
    """Answers the first message of a conversation at once and takes 20 s for the others: a
    scan stopped meanwhile has attempts done and attempts waiting on it."""
    if context.history:
        time.sleep(20)
    return "Noted."
