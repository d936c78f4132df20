"""The ``target.model_proxy`` section (docs/targets.md, "The model-API proxy")."""

from __future__ import annotations

from typing import Literal, Self
from urllib.parse import SplitResult, urlsplit

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from probegate.transport.addresses import is_loopback, parse_listen
from probegate.transport.http_parts import public_url

Api = Literal["openai-chat", "openai-responses", "anthropic-messages"]
# The key that lets the proxy listen where other machines can reach it: named for what it is.
UNSAFE_LISTEN = "unsafe_listen_beyond_loopback"
# The proxy's default address, as its listen errors show it.
LISTEN_EXAMPLE = "127.0.0.1:8790"


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
    # Listen on an address other machines can reach (docs/scan-your-agent/proxy.md): off, and
    # refused without it, because the proxy spends the user's key for whoever holds its URL.
    unsafe_listen_beyond_loopback: bool = False

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        parse_listen(value, example=LISTEN_EXAMPLE)
        return value

    @field_validator("upstream")
    @classmethod
    def _upstream(cls, value: str) -> str:
        shown = public_url(value)
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"expected the model API's http(s) base URL, got {shown!r}")
        try:
            parts = urlsplit_strict(value)
        except ValueError as exc:
            message = f"expected the model API's http(s) base URL, got {shown!r}: {exc}"
            raise ValueError(message) from None
        if "@" in parts.netloc:
            raise ValueError(
                f"the upstream URL carries credentials ({shown!r} with a user part): name the "
                "key's variable in upstream_api_key_env instead"
            )
        if parts.query or parts.fragment or "?" in value or "#" in value:
            raise ValueError(f"the upstream URL takes no query or fragment: {shown!r}")
        return value

    @model_validator(mode="after")
    def _reachable_from_here_only(self) -> Self:
        host, _port = parse_listen(self.listen, example=LISTEN_EXAMPLE)
        if not is_loopback(host) and not self.unsafe_listen_beyond_loopback:
            raise ValueError(
                f"listen {self.listen} can be reached from other machines, and the proxy "
                "spends the upstream's key for its callers: listen on 127.0.0.1, or set "
                f"{UNSAFE_LISTEN}: true to accept that (docs/scan-your-agent/proxy.md)"
            )
        return self


def urlsplit_strict(value: str) -> SplitResult:
    """``urlsplit`` that also reads the port, so a bad one is refused here, not per call."""
    parts = urlsplit(value)
    if not parts.hostname:
        raise ValueError("it names no host")
    _ = parts.port  # ValueError for a port that is not one
    return parts
