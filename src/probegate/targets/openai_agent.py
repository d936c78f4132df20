"""The ``openai`` target: an OpenAI model run as an agent, over Chat Completions or Responses.

``api: chat`` (the default) speaks Chat Completions, which every OpenAI-compatible server
copies; ``api: responses`` speaks the Responses API, the one OpenAI's newest models call tools
through (``--protocol openai-responses``). Either way probegate runs the loop itself, answers
every tool call from its sandbox and plants the attempt's canaries at the end of the system
prompt (the loop: :mod:`probegate.targets.model_loop`; the shapes:
:mod:`probegate.transport.model_apis`; docs/targets.md).
"""

from __future__ import annotations

from typing import Literal

from probegate.targets.base import ReplayInput, TargetFlag, TargetSettings, TargetSpec
from probegate.targets.model_loop import ModelConfig, ModelTarget, replay_script
from probegate.transport.http import HttpClient
from probegate.transport.model_apis import CHAT, RESPONSES, ModelApi

APIS: dict[str, ModelApi] = {"chat": CHAT, "responses": RESPONSES}


class OpenAIConfig(ModelConfig):
    """``kind: openai``: the endpoint, how to authenticate, the system prompt (docs/targets.md)."""

    kind: Literal["openai"] = "openai"
    api: Literal["chat", "responses"] = "chat"


class OpenAITarget(ModelTarget):
    """An OpenAI endpoint plus the config's system prompt and tools."""

    def __init__(
        self, config: OpenAIConfig, settings: TargetSettings, client: HttpClient | None = None
    ) -> None:
        super().__init__(config, settings, api=APIS[config.api], kind="openai", client=client)


def _replay(config: OpenAIConfig, given: ReplayInput) -> str:
    return replay_script(config, given, APIS[config.api])


SPEC = TargetSpec(
    kinds=("openai",),
    config=OpenAIConfig,
    summary="an OpenAI model (Chat Completions or Responses), run as an agent by probegate",
    build=OpenAITarget,
    flags=(
        TargetFlag("--model", "model", "model name for an openai endpoint", metavar="NAME"),
        TargetFlag(
            "--system-prompt",
            "system_prompt",
            "system prompt file (default: a generic assistant prompt)",
            metavar="FILE",
            path=True,
        ),
    ),
    endpoint=True,
    # --protocol openai names Chat Completions too: on a file of api: responses it is a switch.
    protocols={"openai": {"api": "chat"}, "openai-responses": {"api": "responses"}},
    replay_script=_replay,
)
