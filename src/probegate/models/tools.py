"""A tool an agent may call, as probegate knows it: name, description, capabilities, schema.

Targets declare their tools with it, the sandbox answers calls by capability, the oracles judge
calls against it and recordings store it; so it is data, below all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from probegate.models.taxonomy import Capability


@dataclass(frozen=True)
class ToolSpec:
    """A tool the agent may call: what it is called, what it can do, its JSON schema."""

    name: str
    description: str
    capabilities: frozenset[Capability]
    parameters: dict[str, Any] = field(default_factory=dict)
