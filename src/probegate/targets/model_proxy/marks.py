"""The conversation mark: how a model call names the attempt it belongs to, unseen.

probegate ends every message it sends to the agent with a mark: two invisible format
characters, 24 zero-width characters that spell a random 48-bit token in base 4, and the two
again. An agent passes its user's message to its model as it is, so the mark comes back in the
model call (and in every later call of the conversation, inside the history); the proxy reads
it there, then removes every mark from the request before the model sees it, and from the
agent's reply before an oracle reads it. The frame is specific enough that text an attack
writes with zero-width characters (a probe's obfuscation) is never taken for a mark, nor
changed (docs/targets.md, "How a model call is attributed").
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from typing import Any

_DIGITS = "\u200b\u200c\u200d\u2060"  # zero width space, non-joiner, joiner, word joiner
_OPEN = "\u2063\u2062"  # invisible separator, invisible times
_CLOSE = "\u2062\u2063"
_LENGTH = 24  # base-4 digits: 48 random bits
MARK = re.compile(f"{_OPEN}([{_DIGITS}]{{{_LENGTH}}}){_CLOSE}")


def new_token() -> str:
    """A fresh random token, spelled in the mark's digits."""
    value = secrets.randbits(2 * _LENGTH)
    return "".join(_DIGITS[(value >> (2 * i)) & 3] for i in range(_LENGTH))


def marked(text: str, token: str) -> str:
    """``text`` as the agent receives it: the conversation's mark at its end."""
    return f"{text}{_OPEN}{token}{_CLOSE}"


def unmarked(text: str) -> str:
    """``text`` without any mark (what the model and the oracles read)."""
    return MARK.sub("", text) if _OPEN[0] in text else text


def strip_marks(data: Any, found: set[str]) -> Any:
    """``data`` (JSON) with every mark removed from every string; the tokens go in ``found``.

    Lists and objects are changed in place, so a request body is walked once; a string is
    looked at where it stands and replaced only when it holds a mark (a chat request is a few
    hundred strings, its tools' schemas most of them, and this runs on every model call).
    """
    if isinstance(data, str):
        return _stripped(data, found) if _OPEN[0] in data else data
    slots: Iterable[tuple[Any, Any]]
    if isinstance(data, dict):
        slots = data.items()  # values are replaced, never added: the iteration holds
    elif isinstance(data, list):
        slots = enumerate(data)
    else:
        return data
    for slot, value in slots:
        if type(value) is str:
            if _OPEN[0] in value:
                data[slot] = _stripped(value, found)
        elif isinstance(value, dict | list | str):  # a str subclass too, as json never makes
            data[slot] = strip_marks(value, found)
    return data


def _stripped(text: str, found: set[str]) -> str:
    found.update(MARK.findall(text))
    return MARK.sub("", text)
