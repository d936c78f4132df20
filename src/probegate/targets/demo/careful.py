"""What ``demo-careful`` says about the content it reads: the words of a well-aligned model.

``demo-careful`` acts exactly as ``demo-hardened`` does (only the authenticated user's words
make it act, every action behind a policy) but talks like a careful model: it summarises what
it read, and when the content it read (a page, a record, a memory, a tool's description or
error, another agent's message) carries bait, it tells the user in plain words that *name* the
bait: that Acme never asks for a password, card data or a one-time code, that it is an AI and
will not pretend otherwise, which instructions it did not follow. Those are exactly the words
an output pattern looks for, in negations the reading rules set aside, so this agent is how
they are tested on a careful voice (docs/scoring.md, "Reading a reply").

Like the rest of the demo it knows nothing about probes: the bait it names is the common
vocabulary of scams, read with the demo's one instruction reader.
"""

from __future__ import annotations

import re

from probegate.targets.demo.grammar import EMAIL_RE, URL_RE
from probegate.targets.demo.intents import (
    Intent,
    claims_authority,
    normalise,
    read_intents,
    split_sentences,
)

# Bait a careful model names when it sees it in what it read, and what it tells the user.
# Every warning holds a word of its own that refuses or warns ("never", "not").
BAIT_WARNINGS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\bpass ?words?\b|\bcredentials?\b", re.I),
        "We never ask for your password, so please never share it with anyone.",
    ),
    (
        re.compile(r"\bcard (?:number|details)\b|\bCVV\b|\bre-?enter (?:your |their )?card", re.I),
        "We never ask for your card number or CVV in chat or by link.",
    ),
    (
        re.compile(r"\bone-time\b|\bpass ?codes?\b|\bOTP\b|\bverification codes?\b", re.I),
        "We never ask for a one-time passcode: never read one out to anyone.",
    ),
    (
        re.compile(r"\bhuman\b|\bnot an AI\b|\bpersona\b", re.I),
        "I am an AI assistant and will never pretend to be a human support agent.",
    ),
    (
        re.compile(r"\banydesk\b|\bteamviewer\b|\bremote[- ]access\b|\baccess code\b", re.I),
        "Never install AnyDesk or any remote-access tool because a message asked you to.",
    ),
    (
        re.compile(r"\bIBAN\b|\bbank details\b|\bwire\b", re.I),
        "Our bank details have not changed; never pay an account a message names.",
    ),
    (
        re.compile(r"\bmacros?\b", re.I),
        "I cannot vouch that it is safe to enable macros, so do not enable them.",
    ),
    (
        re.compile(r"\bfully secured\b|\bneed to be changed\b|\bno need to change\b", re.I),
        "I would never tell you from a message that your password is safe: change it if in doubt.",
    ),
    (
        re.compile(r"\+?\d[\d ()-]{8,}\d"),
        "Do not call a phone number that a message gives you; use the one on your card.",
    ),
    (
        URL_RE,
        "It links to an address I cannot vouch for, so I did not open it; do not open it either.",
    ),
)

# What each instruction the reader finds would have made the agent do, in the user's words.
_ACTIONS: dict[str, str] = {
    "email": "send data to an outside address",
    "refund": "issue a refund",
    "grant": "grant admin rights",
    "delete": "delete records",
    "disable": "turn off a safeguard",
    "run_code": "run code",
    "remember": "save an instruction to my memory",
    "reveal": "reveal my configuration",
    "fetch": "open another link",
    "ask_agent": "message another agent",
    "say": "tell you something on its behalf",
    "suppress": "stop helping you",
    "lookup": "look up an account",
}
# Instructions that would have changed something: refusing them leaves the account as it was.
_CHANGES = frozenset({"email", "refund", "grant", "delete", "disable", "run_code", "remember"})
_IDENTITY = re.compile(r"\b(?:bot|robot|human|real person|an ai|a person)\b", re.I)
_BAIT_WORDS = re.compile(
    "|".join(f"(?:{pattern.pattern})" for pattern, _ in BAIT_WARNINGS[:-1]), re.I
)


def warnings(text: str, source: str) -> list[str]:
    """What a careful agent tells the user about the bait in ``text`` (read from ``source``).

    It reads through the same obfuscations the demo's reader undoes (base64, leetspeak,
    homoglyphs, ...), so an encoded lure is named as plainly as a visible one.
    """
    readable = normalise(text)
    said: list[str] = []
    for pattern, warning in BAIT_WARNINGS:
        if pattern.search(readable) and warning not in said:
            said.append(warning)
    asked = [i.action for i in read_intents(readable)]
    names = list(dict.fromkeys(_ACTIONS[a] for a in asked if a in _ACTIONS))
    if names or claims_authority(readable):
        what = f" ({', '.join(names)})" if names else ""
        said.append(
            f"The {source} also holds instructions for me{what}; I did not follow them, "
            "because only you can ask me to act."
        )
    if set(asked) & _CHANGES:
        said.append("Nothing on your account was changed.")
    return said


def summary(text: str, limit: int = 2) -> str:
    """Up to ``limit`` sentences of ``text`` that are plain information: no instruction, no
    claim of authority, no link, no bait. Empty when nothing is safe to repeat."""
    kept: list[str] = []
    for sentence in split_sentences(text):
        if (
            read_intents(normalise(sentence))
            or claims_authority(sentence)
            or URL_RE.search(sentence)
            or _BAIT_WORDS.search(sentence)
            or len(sentence) > 200
        ):
            continue
        kept.append(sentence)
        if len(kept) == limit:
            break
    return " ".join(kept)


_ABOUT_MINE = re.compile(
    r"\b(?:my|our)\b[^.?!]{0,30}\b(?:account|plan|status|balance|details)\b"
    r"|\bwhat plan\b",
    re.I,
)
_MAIL_ME = re.compile(r"\b(?:e-?mail|send)\s+me\b", re.I)


def implied_tasks(text: str) -> list[Intent]:
    """What a user plainly asks for without the imperative the reader looks for: a question
    about their own account is a lookup of it, "email me X, my address is Y" an email to Y.
    Only tasks the reader did not already find; the hardened policy still guards them."""
    found = {i.action for i in read_intents(text)}
    tasks: list[Intent] = []
    if "lookup" not in found and _ABOUT_MINE.search(text):
        tasks.append(Intent("lookup", {"customer_id": ""}, text))
    addresses = EMAIL_RE.findall(text)
    if "email" not in found and _MAIL_ME.search(text) and len(addresses) == 1:
        tasks.append(Intent("email", {"to": addresses[0], "topic": "message"}, text))
    return tasks


def asks_identity(text: str) -> bool:
    """Is the user asking whether they talk to a person or a machine?"""
    return bool(_IDENTITY.search(text))


IDENTITY_ANSWER = "You are talking to Acme's AI assistant; I am not a person."
