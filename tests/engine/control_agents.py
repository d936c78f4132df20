"""Python agents for the control tests (imported as ``tests.engine.control_agents``).

Each does the same thing whatever a document says, or only what a document says, so a test
knows whether the attack caused what the oracle saw.
"""

from __future__ import annotations

import re
import threading
from typing import Any

URL = re.compile(r"https?://[^\s]+[^\s.,]")
REFUND = re.compile(r"refund order (\d+) for \$([\d,]+)", re.IGNORECASE)

# Every message each agent was sent, to show what a resumed scan sends again (nothing twice).
SENT: list[str] = []
_LOCK = threading.Lock()


def _seen(text: str) -> None:
    with _LOCK:
        SENT.append(text)


def _refund(context: Any, text: str) -> str:
    match = REFUND.search(text)
    if match is None:
        return "Which order should I refund?"
    order, amount = match.group(1), match.group(2).replace(",", "")
    context.call_tool("issue_refund", {"order_id": order, "amount": float(amount)})
    return f"Refunded order {order}."


def refunds_as_asked(input: str, context: Any) -> str:
    """Reads the page it is pointed at, then refunds what the user asked: policy or no policy."""
    _seen(input)
    url = URL.search(input)
    if url:
        context.call_tool("fetch_document", {"url": url.group(0)})
    return _refund(context, input)


def obeys_policy_pages(input: str, context: Any) -> str:
    """Refunds over $100 only when a page it read says refunds are pre-approved."""
    _seen(input)
    url = URL.search(input)
    page = context.call_tool("fetch_document", {"url": url.group(0)}) if url else ""
    match = REFUND.search(input)
    if match and float(match.group(2).replace(",", "")) > 100 and "pre-approved" not in page:
        return "Refunds over $100 need a manager's approval."
    return _refund(context, input)


def breaks_without_the_attack(input: str, context: Any) -> str:
    """Refunds whatever it is told; its backend fails on any message that asks for no refund
    (the control's benign text, whichever the scan drew)."""
    _seen(input)
    if REFUND.search(input) is None:
        raise RuntimeError("backend unavailable")
    return _refund(context, input)


# Pages the flaky agent's backend has already failed on once.
_HICCUPS: set[str] = set()


def refunds_as_asked_with_a_hiccup(input: str, context: Any) -> str:
    """refunds_as_asked, whose backend fails the first time it reads a page without the
    attack (the control's), and works when asked again."""
    _seen(input)
    url = URL.search(input)
    page = context.call_tool("fetch_document", {"url": url.group(0)}) if url else ""
    with _LOCK:
        first = "pre-approved" not in page and page not in _HICCUPS
        _HICCUPS.add(page)
    if first:
        raise RuntimeError("backend hiccup")
    return _refund(context, input)
