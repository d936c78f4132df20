"""Where probegate's own servers listen (the MCP server, the A2A peers, the model-API proxy):
one reading of ``HOST:PORT`` for all of them, so a flag and a config key mean the same thing."""

from __future__ import annotations

import ipaddress


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
