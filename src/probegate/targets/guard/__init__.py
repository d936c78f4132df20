"""The ``guard`` kind: a runtime guard measured in front of an agent, the way it is deployed.

A runtime guard (``POST /v1/evaluate`` with a GuardEvent, a Verdict back: docs/guard.md) protects
nothing by itself; what it is worth is what the agent behind it still does. So probegate scans
the *pair*: it wraps another target (``behind: demo`` by default) and stands where a
deployment's enforcement point stands, asking the guard before anything crosses it:

- every user or peer-agent message before the agent sees it (a block: the agent never sees it
  and the reply is the refusal);
- the tool definitions the agent reads, once per conversation (poisoned descriptions are an
  attack channel);
- every tool call before the sandbox runs it, and every tool result (documents, memory, peer
  replies: where indirect attacks ride) before the agent reads it;
- the reply text before it reaches the user.

Then the ordinary oracles judge the transcript: an attack that got through the guard and made
the agent act is a finding; one the guard stopped is resisted. Calls the guard refused were
never executed, so they leave ``tool_calls`` (the agent's actions) for
``turn.guard.refused_calls``, and every guard verdict is kept on the turn or call it concerns
(``guard`` fields), so the evidence shows what the guard did.

How a block is rendered follows the protocol, because the rendering changes what the agent does
next and so what is measured: ``continuation`` ``drop_calls`` naming the call refuses that
call only (the agent reads the notice as the call's error and carries on); ``withhold`` naming
the result replaces that result with the notice. Any other block (no continuation, or paths
that name nothing probegate sent) falls back to an *answer*: the refusal becomes the reply and
the agent's turn ends there, every later call in the turn is not run. Ignoring a continuation
is always the stricter choice, never the looser one. ``modifications.spans`` on an allow are
applied before the content proceeds; spans whose path was never registered are counted.

A guard that could not look did not protect: a verdict that allows while naming paths it
could not judge (``unjudged``), a refusal at the door (429 after retries, 413, 400), a 5xx, a
timeout or an answer that is not a Verdict make the attempt *unjudged* with the reason, never
resisted; 401/403 stop the scan (the credentials are wrong for every request).

Beside the attacks, a small benign control set (ordinary support questions, a normal document,
an ordinary refund and reply) goes through the same guard once per scan; what it blocks are
false positives, reported in the scan report's ``guard`` section and never as findings.

The package, one job a module: ``events`` (the wire protocol: events out, verdicts in, span
rewrites), ``client`` (the request), ``session`` (one conversation: the one screening sequence
every crossing goes through), ``stats`` (what the guard did across the scan), ``benign`` (the
control set), ``target`` (the pieces put together); here, the kind's config and spec.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, model_validator

from probegate.targets.base import (
    AgentConfig,
    KindTable,
    TargetConfig,
    TargetFlag,
    TargetSpec,
    config_error,
)
from probegate.targets.guard.events import GuardIdentity, OptionalField
from probegate.targets.guard.target import GuardTarget
from probegate.validation import did_you_mean

DEFAULT_BEHIND = "demo"
# The guard's own keys; every other key of its ``target:`` section belongs to the agent behind.
_OWN_KEYS = frozenset(
    {"kind", "guard", "behind", "guard_api_key_env", "guard_identity", "guard_optional_fields"}
)


class GuardConfig(TargetConfig):
    """``kind: guard``: the guard, and the agent behind it written in the same section.

    ``behind`` names the agent's kind (``demo`` unless said otherwise); the other keys are that
    agent's own (endpoint, model, tools, ...) and are parsed as its config.
    """

    kind: Literal["guard"] = "guard"
    guard: str | None = None
    behind: str = DEFAULT_BEHIND
    guard_api_key_env: str | None = None
    guard_identity: GuardIdentity = Field(default_factory=GuardIdentity)
    # The GuardEvent's optional fields to send; none by default, because a runtime that does not
    # expect one refuses the event (docs/guard.md).
    guard_optional_fields: list[OptionalField] = Field(default_factory=list)
    # ``api_key_env`` when the agent behind does not use it: then it can only mean the guard's.
    api_key_env: str | None = None
    agent: AgentConfig

    @model_validator(mode="before")
    @classmethod
    def _split(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict) or isinstance(data.get("agent"), AgentConfig):
            return data
        table: KindTable | None = (info.context or {}).get("target_kinds")
        if table is None:
            raise ValueError("a guard's config is parsed by the target registry")
        own = {k: v for k, v in data.items() if k in _OWN_KEYS}
        rest = {k: v for k, v in data.items() if k not in _OWN_KEYS}
        behind = own.get("behind") or DEFAULT_BEHIND
        spec = _guardable(table, behind)
        if "api_key_env" in rest and "api_key_env" not in spec.config.yaml_keys():
            own["api_key_env"] = rest.pop("api_key_env")
        return {**own, "behind": behind, "agent": table.parse({**rest, "kind": behind})}

    @classmethod
    def yaml_keys(cls) -> frozenset[str]:
        return frozenset(cls.model_fields) - {"agent"}

    def agent_under_test(self) -> AgentConfig:
        return self.agent

    def secret_env(self) -> dict[str, str]:
        own = {"API_KEY": self.api_key_env} if self.api_key_env else {}
        if self.guard_api_key_env:
            own["GUARD_API_KEY"] = self.guard_api_key_env
        return {**self.agent.secret_env(), **own}

    def secret_urls(self) -> list[str]:
        return [*self.agent.secret_urls(), *([self.guard] if self.guard else [])]

    def without_secrets(self) -> GuardConfig:
        return self.model_copy(
            update={
                "guard_api_key_env": None,
                "api_key_env": None,
                "agent": self.agent.without_secrets(),
            }
        )


def _guardable(table: KindTable, behind: Any) -> TargetSpec[Any]:
    """The spec of the kind a guard stands in front of: a live agent that wraps none."""
    spec = table.spec(behind) if isinstance(behind, str) else None
    if spec is None or not spec.live or spec.wraps:
        guardable = [k for k in table.kinds() if (s := table.spec(k)) and s.live and not s.wraps]
        raise config_error(
            ("behind",),
            f"a guard stands in front of one of {', '.join(guardable)}, not {behind!r}"
            + (did_you_mean(behind, guardable) if isinstance(behind, str) else ""),
            behind,
        )
    return spec


SPEC = TargetSpec(
    kinds=("guard",),
    config=GuardConfig,
    summary="a runtime guard (docs/guard.md) measured in front of another agent, "
    "behind: demo by default",
    wrap=GuardTarget,
    flags=(
        TargetFlag(
            "--guard",
            "guard",
            "URL of a runtime guard speaking the Verdict protocol",
            metavar="URL",
            selects=True,
        ),
        TargetFlag(
            "--guard-api-key-env",
            "guard_api_key_env",
            "environment variable holding the guard's API key (sent as a bearer token)",
            metavar="VAR",
        ),
    ),
)
