"""The ``target.model_proxy`` section (docs/targets.md, "The model-API proxy")."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from probegate.transport.http import public_url

Api = Literal["openai-chat", "openai-responses", "anthropic-messages"]


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> (host, port); port 0 picks a free one."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT (e.g. 127.0.0.1:8790), got {value!r}")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return host, int(port)


class ModelProxyConfig(BaseModel):
    """Where the agent's model base URL points, where its calls go on to, and how safe to be."""

    model_config = ConfigDict(extra="forbid")

    api: Api
    # HOST:PORT the agent's base URL points to (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, ...).
    listen: str
    # The real model API: https://api.openai.com/v1, https://api.anthropic.com, ...
    upstream: str
    # The upstream's key, by variable name; else the agent's own credentials pass through.
    upstream_api_key_env: str | None = None
    # Stop attacker-directed tool calls before the agent runs them (docs/targets.md).
    safe: bool = True

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        parse_listen(value)
        return value

    @field_validator("upstream")
    @classmethod
    def _upstream(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            shown = public_url(value)
            raise ValueError(f"expected the model API's http(s) base URL, got {shown!r}")
        return value
