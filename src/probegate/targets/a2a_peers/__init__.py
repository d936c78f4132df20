"""probegate as the A2A peers of an agent under test (docs/scan-your-agent/a2a.md).

``config.py``: the peers a config declares and the ``{{a2a_url}}`` placeholders that name
them; ``host.py``: the peers themselves, one set of endpoints per conversation, and what each
attempt fetched from them; ``server.py``: the bounded HTTP server they answer on.
"""

from probegate.targets.a2a_peers.config import (
    A2A_URL,
    DEFAULT_PEER,
    PeerConfig,
    PeerSkillConfig,
    named_in,
    peer_tool,
    peers_for,
)
from probegate.targets.a2a_peers.host import PeerDelivery, PeerEndpoint, PeerHost, PeerRecord

__all__ = [
    "A2A_URL",
    "DEFAULT_PEER",
    "PeerConfig",
    "PeerDelivery",
    "PeerEndpoint",
    "PeerHost",
    "PeerRecord",
    "PeerSkillConfig",
    "named_in",
    "peer_tool",
    "peers_for",
]
