"""The explicit registry of target kinds: ``kind -> factory(config) -> Target``.

A test checks that these names, the config schema's ``kind`` values and the README agree.
"""

from __future__ import annotations

from collections.abc import Callable

from probegate.config import ScanConfig
from probegate.errors import UsageError
from probegate.targets.base import Target
from probegate.targets.configured import declared_canaries
from probegate.targets.demo import DemoTarget
from probegate.targets.guard import GuardTarget
from probegate.targets.http_agent import HttpTarget
from probegate.targets.openai_agent import OpenAITarget
from probegate.targets.python_agent import PythonTarget
from probegate.targets.replay import ReplayTarget

__all__ = [
    "TARGET_KINDS",
    "build_target",
    "declared_canaries",
    "tool_calls_visible",
    "uses_sandbox",
]


def _demo(config: ScanConfig) -> Target:
    return DemoTarget(hardened=False)


def _demo_hardened(config: ScanConfig) -> Target:
    return DemoTarget(hardened=True)


def _guard(config: ScanConfig) -> Target:
    """The agent ``behind`` (built like any target) wrapped by the guard at ``target.guard``."""
    behind = config.target.behind or (
        "demo-hardened" if config.target_ref == "demo-hardened" else "demo"
    )
    inner_config = config.model_copy(
        update={"target": config.target.model_copy(update={"kind": behind})}
    )
    inner = TARGET_KINDS[behind](inner_config)
    try:
        return GuardTarget(config, inner, behind)
    except UsageError:
        inner.close()
        raise


TARGET_KINDS: dict[str, Callable[[ScanConfig], Target]] = {
    "demo": _demo,
    "demo-hardened": _demo_hardened,
    "openai": OpenAITarget,
    "http": HttpTarget,
    "python": PythonTarget,
    "replay": ReplayTarget,
    "guard": _guard,
}


def build_target(config: ScanConfig) -> Target:
    kind = config.target.kind
    if kind == "demo" and config.target_ref == "demo-hardened":
        kind = "demo-hardened"
    return TARGET_KINDS[kind](config)


def tool_calls_visible(target: Target) -> bool:
    """Whether the target shows its tool calls; targets say so with ``tool_calls_visible``."""
    return bool(getattr(target, "tool_calls_visible", True))


def uses_sandbox(target: Target) -> bool:
    """Whether the agent's tool calls are answered by probegate's sandbox (``uses_sandbox``)."""
    return bool(getattr(target, "uses_sandbox", True))
