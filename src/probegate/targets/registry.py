"""The explicit registry of target kinds: ``kind -> factory(config) -> Target``.

A test checks that these names, the config schema's ``kind`` values and the README agree.
"""

from __future__ import annotations

from collections.abc import Callable

from probegate.config import ScanConfig
from probegate.errors import UsageError
from probegate.targets.base import Target
from probegate.targets.demo import DemoTarget


def _demo(config: ScanConfig) -> Target:
    return DemoTarget(hardened=False)


def _demo_hardened(config: ScanConfig) -> Target:
    return DemoTarget(hardened=True)


def _not_built(kind: str) -> Callable[[ScanConfig], Target]:
    def factory(config: ScanConfig) -> Target:
        raise UsageError(f"target kind {kind!r} is not available in this build yet")

    return factory


TARGET_KINDS: dict[str, Callable[[ScanConfig], Target]] = {
    "demo": _demo,
    "demo-hardened": _demo_hardened,
    "openai": _not_built("openai"),
    "http": _not_built("http"),
    "python": _not_built("python"),
    "replay": _not_built("replay"),
    "guard": _not_built("guard"),
}


def build_target(config: ScanConfig) -> Target:
    kind = config.target.kind
    if kind == "demo" and config.target_ref == "demo-hardened":
        kind = "demo-hardened"
    return TARGET_KINDS[kind](config)
