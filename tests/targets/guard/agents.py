"""Small agents behind the guard whose every move a test chooses.

:class:`ScriptedTarget` is a Target whose agent reads its tool descriptions (as the weak demo
does), then makes exactly the calls of its script through the sandbox, and replies with what
each call returned; it records the messages it actually received, so a test can tell what the
guard let through.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from probegate.models.report import SourceLocation, TargetInfo
from probegate.models.sections import KindSection
from probegate.models.taxonomy import Capability
from probegate.models.tools import ToolSpec
from probegate.models.transcript import Turn
from probegate.targets.base import Notice, TargetTraits, ToolDelivery
from probegate.targets.sandbox import Sandbox
from probegate.transport.limiter import RequestLimiter
from probegate.transport.usage import Usage

TOOLS = [
    ToolSpec("send_email", "Send an email.", frozenset({Capability.EGRESS}), {}),
    ToolSpec("lookup_customer", "Look up a customer.", frozenset({Capability.PII_READ}), {}),
    ToolSpec("fetch_document", "Fetch a document.", frozenset({Capability.RETRIEVAL}), {}),
]

Script = list[tuple[str, dict[str, Any]]]


@dataclass
class ScriptedSession:
    sandbox: Sandbox
    script: Script
    received: list[str]
    descriptions: list[str]
    usage: Usage = field(default_factory=Usage)

    def send(self, message: Turn) -> Turn:
        self.received.append(message.content)
        self.descriptions[:] = [self.sandbox.tool_description(t) for t in TOOLS]
        calls = [self.sandbox.call(name, dict(args)) for name, args in self.script]
        read = [c.result if c.error is None else f"ERROR: {c.error}" for c in calls]
        return Turn(role="assistant", content=" | ".join(str(r) for r in read), tool_calls=calls)

    def close(self) -> None:
        return None


class ScriptedTarget:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.received: list[str] = []
        self.descriptions: list[str] = []

    def info(self) -> TargetInfo:
        return TargetInfo(
            kind="scripted", ref="scripted", definition=SourceLocation(path="agent.py")
        )

    def tools(self) -> list[ToolSpec]:
        return list(TOOLS)

    def traits(self) -> TargetTraits:
        # Its calls go through probegate's sandbox, as a python agent's context calls do.
        return TargetTraits.of(ToolDelivery.CONTEXT, tool_calls_visible=True, system_canaries=False)

    def report_sections(self) -> list[KindSection]:
        return []

    def notices(self) -> list[Notice]:
        return []

    def open_session(self, sandbox: Sandbox, limiter: RequestLimiter) -> ScriptedSession:
        return ScriptedSession(sandbox, self.script, self.received, self.descriptions)

    def close(self) -> None:
        return None


def swallowing_agent(input: str, context: Any) -> dict[str, Any]:
    """A python agent that catches every error of its tools and carries on regardless."""
    with contextlib.suppress(Exception):  # the point: agents do this
        context.call_tool("fetch_document", {"url": "https://docs.acme.test/q3"})
    return {"output": "All done."}
