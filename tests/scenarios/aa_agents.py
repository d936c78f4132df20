"""One agent for both tools: AgenticAssure's adapter protocol and probegate's ``MODULE:ATTR``.

``BothAgent`` has ``run(self, input, context=None)`` and returns AgenticAssure's own
``AgentResult`` model, which is what AgenticAssure's runner requires; probegate reads that model
like any other result object. It is deterministic, and each behaviour exists to tell a scorer
semantic apart (blank answers, tool calls without an answer, a second call with other
arguments, nested arguments, case and spacing, e-mail addresses, an exception).

``ExampleSupportAgent`` is the shim that lets AgenticAssure run probegate's own example agent
(``examples/scenarios/example_agent.py``), which returns plain dataclasses.
"""

from __future__ import annotations

import re
from typing import Any

from agenticassure import AgentResult, ToolCall

_CITY = re.compile(r"weather in ([A-Z][\w ]*?)[?.!]*$")
_ROUTE = re.compile(r"from (\w+) to (\w+)")
_BOOKING = re.compile(r"[Bb]ook flight (\w+) for (.+)$")
_HELLO = re.compile(r"\b(hello|hi)\b")


def _call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, result="ok")


def respond(text: str) -> AgentResult:
    """The answer to one input; the first matching behaviour wins."""
    lower = text.lower()
    if "boom" in lower:
        raise RuntimeError("the agent failed on purpose")
    if "blank" in lower:
        return AgentResult(output="   ")
    city = _CITY.search(text)
    if "quietly" in lower and city:
        return AgentResult(output="", tool_calls=[_call("get_weather", location=city.group(1))])
    if city:
        return AgentResult(
            output=f"It is sunny in {city.group(1)}.",
            tool_calls=[_call("get_weather", location=city.group(1), units="F")],
            latency_ms=12.5,
        )
    if "twice" in lower:
        calls = [_call("search", q="first"), _call("search", q="second")]
        return AgentResult(output="Searched twice.", tool_calls=calls)
    if "nested" in lower:
        call = _call("search", q="hotels", filters={"city": "Paris", "stars": 4})
        return AgentResult(output="Found hotels.", tool_calls=[call])
    if "yes or no" in lower:
        return AgentResult(output="  yes \n")
    if "contact" in lower or "email" in lower:
        return AgentResult(output="Write to support@example.com any time.")
    route = _ROUTE.search(text)
    if "flight" in lower and route:
        call = _call("search_flights", origin=route.group(1), destination=route.group(2))
        return AgentResult(output="Found JFK to LHR on June 15.", tool_calls=[call])
    booking = _BOOKING.search(text)
    if booking:
        call = _call("book_flight", flight_id=booking.group(1), passenger_name=booking.group(2))
        return AgentResult(output=f"Booked {booking.group(1)}.", tool_calls=[call])
    if "somewhere" in lower or "flights" in lower:
        call = _call("clarify_request", question="Where to, and when?")
        return AgentResult(output="Where would you like to go?", tool_calls=[call])
    if _HELLO.search(lower):
        return AgentResult(
            output="Hello! How can I help you today?",
            reasoning_trace=["greeting detected"],
        )
    return AgentResult(output="I can help with the weather, search and flights.")


class BothAgent:
    """The adapter both tools load: ``tests.scenarios.aa_agents.BothAgent``."""

    model_info = {"name": "both-agent", "version": "1"}

    def run(self, input: str, context: dict[str, Any] | None = None) -> AgentResult:
        return respond(input)


class ExampleSupportAgent:
    """probegate's example support agent, answering with AgenticAssure's AgentResult model."""

    def run(self, input: str, context: dict[str, Any] | None = None) -> AgentResult:
        from example_agent import SupportAgent  # examples/scenarios must be importable

        reply = SupportAgent().run(input, context)
        return AgentResult(
            output=reply.output,
            tool_calls=[ToolCall(**vars(call)) for call in reply.tool_calls],
        )
