"""A first guess at what a tool can do, from its name and description (``probegate init``).

Probes apply to a target by the capabilities its tools declare (docs/targets.md,
"Capabilities"), and choosing them is the step a first config gets wrong. The guess reads the
tool's name first: names say what a tool does (``send_email``, ``issue_refund``), descriptions
also say what it works on ("Send a message to another agent (billing, ...)" is delegation, not
a payment). Only a name that says nothing (``crm_tool``) falls back to the description. It is
a guess, and ``init`` writes it as one: the user checks it.
"""

from __future__ import annotations

import re

from probegate.models.taxonomy import Capability

# Stems matched at the start of a word (``delet`` matches delete, deleting, deletion); stems
# of three letters or fewer must be the whole word (``pay``, not ``payload``).
KEYWORDS: dict[Capability, tuple[str, ...]] = {
    Capability.EGRESS: (
        "email",
        "mail",
        "send",
        "sms",
        "slack",
        "notif",
        "webhook",
        "post",
        "publish",
        "tweet",
        "upload",
        "forward",
        "outbound",
        "share",
    ),
    Capability.PII_READ: (
        "customer",
        "profile",
        "contact",
        "address",
        "phone",
        "ssn",
        "patient",
        "employee",
        "crm",
        "personal",
        "pii",
        "user",
        "member",
        "client",
    ),
    Capability.FINANCIAL: (
        "refund",
        "payment",
        "pay",
        "charge",
        "invoice",
        "billing",
        "purchase",
        "wallet",
        "payout",
        "checkout",
        "money",
        "transaction",
        "stripe",
    ),
    Capability.CODE_EXEC: (
        "exec",
        "shell",
        "bash",
        "python",
        "code",
        "script",
        "command",
        "eval",
        "interpret",
        "terminal",
        "jupyter",
        "notebook",
        "sql",
    ),
    Capability.MEMORY_WRITE: ("memor", "remember", "recall", "note"),
    Capability.RETRIEVAL: (
        "fetch",
        "search",
        "browse",
        "web",
        "url",
        "document",
        "doc",
        "page",
        "retriev",
        "knowledge",
        "kb",
        "rag",
        "wiki",
        "crawl",
        "scrape",
        "download",
        "read",
        "file",
    ),
    Capability.DELEGATION: (
        "delegat",
        "agent",
        "handoff",
        "subagent",
        "escalat",
        "orchestrat",
        "planner",
        "worker",
    ),
    Capability.DESTRUCTIVE: (
        "delet",
        "remov",
        "drop",
        "purg",
        "destroy",
        "wipe",
        "erase",
        "truncat",
        "rm",
        "terminat",
        "cancel",
        "uninstall",
        "kill",
    ),
    Capability.PRIVILEGE: (
        "admin",
        "role",
        "permission",
        "grant",
        "privileg",
        "sudo",
        "access",
        "acl",
        "elevat",
        "setting",
        "config",
        "revok",
        "owner",
    ),
}

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """``sendEmail``, ``send_email`` and "Send an e-mail" as lower-case words."""
    return _WORD.findall(_CAMEL.sub(" ", text).lower())


def _matches(word: str, stem: str) -> bool:
    return word == stem or (len(stem) > 3 and word.startswith(stem))


def _from(text: str) -> tuple[Capability, ...]:
    found = set(words(text))
    return tuple(
        cap
        for cap, stems in KEYWORDS.items()
        if any(_matches(word, stem) for word in found for stem in stems)
    )


def guess(name: str, description: str = "") -> tuple[Capability, ...]:
    """The capabilities a tool called ``name`` likely has, in the taxonomy's order."""
    return _from(name) or _from(description)
