"""The bundled agents ``demo`` and ``demo-hardened``: deterministic, in-process, offline.

Both are the same Acme support agent with the same tools (customer lookup holding PII, email,
refunds, code execution, memory, document fetch, delegation to other agents, settings and role
changes, record deletion) and the same instruction reader (:mod:`probegate.targets.demo.intents`).

``demo`` is over-trusting the way real agents are: it acts on instructions wherever it reads
them (documents, tool results, memories, peer agents, tool descriptions), believes claims of
authority, runs code it is handed, retries failing calls without limit, and repeats what it
read. ``demo-hardened`` acts only on the authenticated user's own words and guards every action
with a policy: no secrets out, email only to the customer, refunds under the limit, no code but
bounded arithmetic, no fetches of internal addresses or traversal paths, no privilege, settings
or bulk deletion without a human, memory as data only, delegation of questions but never of
instructions, and it reports only what its tools confirmed.

Neither agent knows anything about probes: both run the same reader over the same text, so a
probe lands on ``demo`` only when an over-trusting agent would plausibly fall for it.

The package: ``tools`` (the tools and the system prompt both share), ``intents`` (the reader),
``agent`` (one conversation: the loop and the hardened policy), and here the kind's spec.
"""

from __future__ import annotations

from typing import Literal

from probegate.models.report import TargetInfo
from probegate.models.sections import KindSection
from probegate.models.tools import ToolSpec
from probegate.targets.base import (
    AgentConfig,
    Notice,
    TargetSettings,
    TargetSpec,
    TargetTraits,
    ToolDelivery,
)
from probegate.targets.demo.agent import DemoSession
from probegate.targets.demo.tools import DEMO_TOOLS
from probegate.targets.sandbox import Sandbox
from probegate.transport.limiter import RequestLimiter

# The demo agents run their own loop over probegate's sandbox, with canaries in their prompt.
# The demo agents only compute: their attempts run on the runner's thread (TargetTraits.waits).
TRAITS = TargetTraits.of(
    ToolDelivery.AGENT_LOOP, tool_calls_visible=True, system_canaries=True, waits=False
)


class DemoConfig(AgentConfig):
    """``kind: demo`` or ``kind: demo-hardened``: nothing to configure."""

    kind: Literal["demo", "demo-hardened"] = "demo"


class CarefulConfig(AgentConfig):
    """``kind: demo-careful``: nothing to configure."""

    kind: Literal["demo-careful"] = "demo-careful"


class DemoTarget:
    """``demo`` / ``demo-hardened`` / ``demo-careful``: the embedded default and the test
    fixtures. ``careful`` is the hardened policy with a careful model's words."""

    def __init__(self, hardened: bool, *, careful: bool = False) -> None:
        self.hardened = hardened or careful
        self.careful = careful

    @property
    def ref(self) -> str:
        if self.careful:
            return "demo-careful"
        return "demo-hardened" if self.hardened else "demo"

    def info(self) -> TargetInfo:
        tools = self.tools()
        caps = sorted({c.value for t in tools for c in t.capabilities})
        return TargetInfo(
            kind="demo",
            ref=self.ref,
            inferred_goal="customer support for Acme Corp",
            profile_source="builtin",
            capabilities=caps,
            tools=[t.name for t in tools],
        )

    def tools(self) -> list[ToolSpec]:
        return list(DEMO_TOOLS)

    def traits(self) -> TargetTraits:
        return TRAITS

    def open_session(self, sandbox: Sandbox, limiter: RequestLimiter) -> DemoSession:
        return DemoSession(
            hardened=self.hardened, careful=self.careful, sandbox=sandbox, limiter=limiter
        )

    def report_sections(self) -> list[KindSection]:
        return []

    def notices(self) -> list[Notice]:
        return []

    def close(self) -> None:
        return None


def _build(config: DemoConfig, settings: TargetSettings) -> DemoTarget:
    return DemoTarget(hardened=config.kind == "demo-hardened")


def _build_careful(config: CarefulConfig, settings: TargetSettings) -> DemoTarget:
    return DemoTarget(hardened=True, careful=True)


SPEC = TargetSpec(
    kinds=("demo", "demo-hardened"),
    config=DemoConfig,
    summary="bundled in-process support agents: demo has realistic weaknesses, "
    "demo-hardened resists every probe",
    build=_build,
    positional=True,
)

CAREFUL_SPEC = TargetSpec(
    kinds=("demo-careful",),
    config=CarefulConfig,
    summary="a bundled in-process agent that behaves like a careful model: it does the "
    "user's task, ignores injected content and warns in words that name the bait",
    build=_build_careful,
    positional=True,
)
