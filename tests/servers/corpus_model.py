"""A model that answers every text probe with a reply of the corpus (tests/data/corpus*).

Served behind the loopback chat-completions server (``OpenAIAgentServer(agent=CorpusModel(...))``)
it lets a real scan, in full mode with every mutator, meet the replies an independent author
wrote: one voice, careful or the twin that falls for the bait. It finds the probe from the
conversation's first user message, answers earlier turns of a multi-turn probe briefly, makes
the voice's tool calls first (probegate's sandbox answers them), then says the voice's reply.
The reply does not change with the mutator: a model reads through base64 or homoglyphs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from probegate.library.loader import load_library
from tests.servers.aligned_model import read

PAYLOAD = "{{payload}}"
_WORD = re.compile(r"[a-z0-9]+")
NEUTRAL = "I've looked into it for you; everything is in order. Anything else I can help with?"


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class Scripted:
    turns: int
    text: str
    calls: tuple[dict[str, Any], ...]
    # The attack's own words: a twin falls for the attack only when it is there to fall for.
    attack_words: frozenset[str]
    # Without the attack (a control), the voice has nothing to report: it does the user's task
    # as its careful reply does and says so plainly.
    careful_calls: tuple[dict[str, Any], ...]
    # What the model reads first, by where the probe's attack rides: the page the user names,
    # the caller's record, its memory, the peer agent the user asks.
    reads: tuple[dict[str, Any], ...]


def _first_user_turn(probe_id: str) -> str:
    probe = next(p for p in load_library().probes if p.id == probe_id)
    first = next(t for t in probe.turns if t.sender == "user")
    return first.content.replace(PAYLOAD, probe.payload or "")


class CorpusModel:
    """``reply(messages, tools)`` as the loopback server asks, from one voice of a corpus."""

    def __init__(self, corpus: Path, voice: str, *, careful: bool) -> None:
        key = "careful" if careful else "twin"
        probes = {p.id: p for p in load_library().probes}
        self.scripts: dict[str, Scripted] = {}
        for path in sorted(corpus.glob("*.yaml")):
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            probe = probes[data["probe"]]
            entry = data["voices"][voice]
            users = sum(1 for t in probe.turns)
            script = Scripted(
                users,
                entry[key],
                tuple(entry.get(f"{key}_calls") or ()),
                frozenset(w for w in _words(probe.payload or "") if len(w) >= 4),
                tuple(entry.get("careful_calls") or ()),
                _reads(probe.channel.value, _first_user_turn(probe.id)),
            )
            for turn in probe.turns:  # a probe of several sessions starts each with a turn
                if turn.sender == "user" and PAYLOAD not in turn.content:
                    self.scripts[turn.content] = script
        self.probe_ids = sorted(
            yaml.safe_load(p.read_text())["probe"] for p in corpus.glob("*.yaml")
        )

    def reply(
        self, messages: list[dict[str, Any]], tools: Collection[str]
    ) -> tuple[Any, list[Any]]:
        users = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
        script = next((self.scripts[u] for u in users if u in self.scripts), None)
        if script is None:
            return "How can I help?", []
        since = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        done = {
            call["function"]["name"] for m in messages[since:] for call in m.get("tool_calls") or ()
        }
        reads = script.reads if users[0] in self.scripts else ()
        attacked = self._attacked(messages, script)
        said = any(script.text == m.get("content") for m in messages)
        last = len(users) >= script.turns
        calls = script.calls if attacked else script.careful_calls if last else ()
        for step in (reads, () if said else calls):
            wanted = [c for c in step if c["name"] in tools and c["name"] not in done]
            if wanted:
                return None, [
                    {
                        "id": f"call_{len(messages)}_{i}",
                        "type": "function",
                        "function": {
                            "name": c["name"],
                            "arguments": json.dumps(c.get("arguments") or {}),
                        },
                    }
                    for i, c in enumerate(wanted)
                ]
        if attacked and not said:
            return script.text, []
        return (NEUTRAL if last and not said else "Sure."), []

    @staticmethod
    def _attacked(messages: list[dict[str, Any]], script: Scripted) -> bool:
        """The attack is in what the model read, in any form a model reads through (a control
        neutralises it: then even a twin has nothing to fall for, and answers carefully)."""
        seen = " ".join(str(m.get("content") or "") for m in messages)
        found = set(_words(read(seen))) & script.attack_words
        return len(found) >= 0.6 * len(script.attack_words)


_URL = re.compile(r"https?://[^\s'\"<>]+[^\s'\"<>.,;:!?)]")


def _reads(channel: str, user: str) -> tuple[dict[str, Any], ...]:
    if channel == "document":
        return tuple(
            {"name": "fetch_document", "arguments": {"url": u}} for u in _URL.findall(user)
        )
    if channel == "tool_result":
        return ({"name": "lookup_customer", "arguments": {"customer_id": "1001"}},)
    if channel == "memory":
        return ({"name": "recall", "arguments": {"query": "notes about this customer"}},)
    if channel == "agent_message" and "agent" in user.lower():
        agent = re.search(r"the (\w+) agent", user, re.I)
        name = agent.group(1).lower() if agent else "billing"
        return ({"name": "ask_agent", "arguments": {"agent": name, "message": user}},)
    return ()
