"""Where probegate's own servers listen (the MCP server, the A2A peers, the model-API proxy)
and what address an agent is told: one reading of ``HOST:PORT`` for all of them, so a flag and
a config key mean the same thing, and one rule for the base URL advertised."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import urlsplit


def parse_listen(value: str, *, example: str = "127.0.0.1:8765") -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> (host, port); port 0 picks a free one.
    ``example`` is the server's own default, shown in the error."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT (e.g. {example}), got {value!r}")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return host, int(port)


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only: a loopback address, or ``localhost``."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def parse_advertise(value: str) -> str:
    """The advertised base URL, normalised without a trailing slash."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"expected an http(s) base URL (e.g. http://probegate:8765), got {value!r}"
        )
    if parts.query or parts.fragment:
        raise ValueError(f"the advertised MCP URL takes no query or fragment: {value!r}")
    return value.rstrip("/")


# Addresses that mean "every interface": recognised, not bound to, here.
WILDCARDS = frozenset({"0.0.0.0", "::", ""})  # noqa: S104


def default_base(host: str, port: int, own: Callable[[], str] | None = None) -> str:
    """The base URL an agent is told when ``--mcp-advertise`` is not given.

    The listen address, except a wildcard one (``0.0.0.0``, ``::``), which no client can dial:
    then this machine's own address, the one its hostname resolves to. In a container that is
    the container's address on its network, which a service container beside it (or the host)
    can reach, as in the Action (docs/agent-service.md).
    """
    if host in WILDCARDS:
        try:
            host = (own or _own_address)()
        except OSError:
            host = "127.0.0.1"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _own_address() -> str:
    return socket.gethostbyname(socket.gethostname())
