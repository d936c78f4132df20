"""The ``anthropic`` target: a Claude model over the Messages API, run as an agent by probegate.

The key goes in ``x-api-key`` (from ``api_key_env``), every request names the API version,
``max_tokens`` is required (``target.max_tokens``), and parallel tool calls (several
``tool_use`` blocks in one reply) are answered together in one message of ``tool_result``
blocks. The loop, the sandbox, the canaries and the oracles are those of the ``openai`` kind
(:mod:`probegate.targets.model_loop`; docs/targets.md).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from probegate.targets.base import ReplayInput, TargetSettings, TargetSpec
from probegate.targets.model_loop import ModelConfig, ModelTarget, replay_script
from probegate.transport.http import HttpClient
from probegate.transport.model_apis import MESSAGES
from probegate.transport.model_apis.messages import DEFAULT_MAX_TOKENS


class AnthropicConfig(ModelConfig):
    """``kind: anthropic``: endpoint, model, key, system prompt, tools, ``max_tokens``."""

    kind: Literal["anthropic"] = "anthropic"
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=1, le=1_000_000)

    def request_params(self) -> dict[str, Any]:
        return {**self.params, "max_tokens": self.max_tokens}


class AnthropicTarget(ModelTarget):
    """A Messages API endpoint plus the config's system prompt and tools."""

    def __init__(
        self, config: AnthropicConfig, settings: TargetSettings, client: HttpClient | None = None
    ) -> None:
        super().__init__(config, settings, api=MESSAGES, kind="anthropic", client=client)


def _replay(config: AnthropicConfig, given: ReplayInput) -> str:
    return replay_script(config, given, MESSAGES)


SPEC = TargetSpec(
    kinds=("anthropic",),
    config=AnthropicConfig,
    summary="a Claude model over the Anthropic Messages API, run as an agent by probegate",
    build=AnthropicTarget,
    endpoint=True,
    replay_script=_replay,
)
