"""probegate's model-API proxy (``target.model_proxy``): agents as they are deployed.

The agent keeps its own loop and its own tools and only its model base URL changes: it points
at the proxy, which forwards to the real model API (docs/targets.md, "The model-API proxy").
probegate still talks to the agent through its entry point (an ``http`` or ``python`` target);
on every model call of an attempt the proxy plants the attempt's canaries, delivers the
probe's payload through the agent's own tools, sees every tool call the model asks for, and in
safe mode stops the ones that would act outside the agent. It is shared by the kinds that can
stand in front of it, below them, like the MCP server.
"""

from __future__ import annotations

from probegate.targets.base import TargetTraits, ToolDelivery
from probegate.targets.model_proxy.config import ModelProxyConfig
from probegate.targets.model_proxy.host import ModelProxy, ProxyConversation
from probegate.targets.model_proxy.marks import unmarked

# Every call the model asks for is seen, the probe reaches the agent's own tools, and the
# canaries are planted in the system prompt the agent sends.
PROXY_TRAITS = TargetTraits.of(ToolDelivery.PROXY, tool_calls_visible=True, system_canaries=True)

__all__ = ["PROXY_TRAITS", "ModelProxy", "ModelProxyConfig", "ProxyConversation", "unmarked"]
