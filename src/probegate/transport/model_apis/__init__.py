"""The model APIs probegate speaks, one module each, and the one list of them.

``openai-chat`` (Chat Completions), ``openai-responses`` (Responses) and
``anthropic-messages`` (Messages), each streamed (server-sent events) or not. The direct
loops (``kind: openai``, ``kind: anthropic``), the LLM judge and the model-API proxy all read
and write them through :data:`APIS`, so a shape is known in one place (docs/targets.md).
"""

from __future__ import annotations

from probegate.transport.model_apis.base import (
    Completion,
    ModelApi,
    RawToolCall,
    ToolDecl,
    ToolResultSlot,
)
from probegate.transport.model_apis.chat import CHAT
from probegate.transport.model_apis.messages import MESSAGES
from probegate.transport.model_apis.responses import RESPONSES

APIS: dict[str, ModelApi] = {api.name: api for api in (CHAT, RESPONSES, MESSAGES)}

__all__ = [
    "APIS",
    "CHAT",
    "MESSAGES",
    "RESPONSES",
    "Completion",
    "ModelApi",
    "RawToolCall",
    "ToolDecl",
    "ToolResultSlot",
]
