"""What happened in one attempt, in the shape evidence paths point into.

A path such as ``turns.3.tool_calls.0.arguments.body`` names a location in
``Transcript.model_dump()``; :func:`resolve_path` reads it back. Tool calls carry their result
inline (the seed 002 AgentResult shape), so one assistant turn holds what the agent did and what
it was told.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["user", "agent", "assistant"]


class ToolCall(BaseModel):
    """One tool call the agent made, with the sandbox's answer."""

    model_config = ConfigDict(extra="forbid")

    id: str = ""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str | None = None
    error: str | None = None
    declared: bool = True


class Turn(BaseModel):
    """One message: the attacker's input (user or peer agent) or the agent's reply."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    session: int = 1
    name: str | None = None


class Transcript(BaseModel):
    """The whole exchange of one attempt; what oracles judge and reports show."""

    model_config = ConfigDict(extra="forbid")

    turns: list[Turn] = Field(default_factory=list)
    tools_offered: list[str] = Field(default_factory=list)

    def assistant_turns(self) -> list[tuple[int, Turn]]:
        return [(i, t) for i, t in enumerate(self.turns) if t.role == "assistant"]

    def output_text(self) -> str:
        return "\n".join(t.content for _, t in self.assistant_turns())


def resolve_path(data: Any, path: str) -> Any:
    """Follow a dotted evidence path (``turns.3.tool_calls.0.arguments.body``) into data."""
    node = data
    for part in path.split("."):
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node[part]
        else:
            raise KeyError(path)
    return node
