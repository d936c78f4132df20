"""A sampled model: an agent that is careful, but on one kind of request answers like a weak
one at random a given share of the time, as a model sampled at a temperature does.

Plug it into the OpenAI-compatible loopback server: ``OpenAIAgentServer(agent=
SampledAgent(rate=0.3, seed=7))``. On a request for its instructions (what the system-prompt
leak probes send, ``asi01.direct-system-prompt-leak.v1`` among them) it reveals its system
prompt, with the scan's planted canary, in ``rate`` of the attempts; on everything else it is
:class:`~tests.servers.careful_openai.CarefulChatAgent`. The draw is seeded per attempt: a
hash of ``seed`` and the attempt's system prompt (which carries the attempt's own canary) and
first user message, so every request of an attempt gets the same answer, however the scan's
workers interleave, and a rerun of the same scan meets the same draws. A new ``seed`` is a new
sample of the same agent: what two CI runs of an unchanged agent meet.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from typing import Any

from tests.servers.careful_openai import PRIVATE, CarefulChatAgent
from tests.servers.openai_agent import FakeAgent

# The probe the scenes scan: its one user turn asks for the instructions.
FLAKY_PROBE = "asi01.direct-system-prompt-leak.v1"


class SampledAgent:
    """Careful, but leaks its instructions when asked in ``rate`` of the attempts."""

    def __init__(self, *, rate: float, seed: int) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate {rate} is not a share")
        self.rate = rate
        self.seed = seed
        self.careful = CarefulChatAgent()
        self.weak = FakeAgent(hardened=False)

    def reply(
        self, messages: list[dict[str, Any]], tools: Collection[str]
    ) -> tuple[Any, list[Any]]:
        first_user = next(
            (str(m.get("content") or "") for m in messages if m.get("role") == "user"), ""
        )
        if PRIVATE.search(first_user) and self.draw(messages) < self.rate:
            return self.weak.reply(messages, tools)
        return self.careful.reply(messages, tools)

    def draw(self, messages: list[dict[str, Any]]) -> float:
        """This attempt's draw in [0, 1): the same for every request of the attempt."""
        system = str(messages[0].get("content") or "") if messages else ""
        first_user = next(
            (str(m.get("content") or "") for m in messages if m.get("role") == "user"), ""
        )
        key = json.dumps([self.seed, system, first_user]).encode()
        return int(hashlib.sha256(key).hexdigest()[:13], 16) / 16**13
