"""A tiny, deterministic support agent for examples/scenarios/support-agent.yml.

It stands in for a real agent so the example suite runs offline and gives the same result every
time: run it from this directory with

    probegate run support-agent.yml --adapter example_agent:SupportAgent

``SupportAgent`` shows the class form of the adapter contract (a fresh instance per scenario,
``run(input, context)``), and ``support_agent`` the function form returning a plain dict.
``context`` defaults to None, as AgenticAssure's adapter protocol has it, so the same class
also fits there once it returns AgenticAssure's own AgentResult model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

ORDERS = {"A1001": "shipped", "A1002": "processing"}


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]
    result: Any = None


@dataclass
class AgentResult:
    output: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    latency_ms: float = 0.0
    token_usage: dict[str, int] | None = None


class SupportAgent:
    """Answers order-status and refund-policy questions; escalates everything else."""

    model_info = {"name": "example-support-agent", "version": "1"}

    def run(self, input: str, context: dict[str, Any] | None = None) -> AgentResult:
        text = input.lower()
        order = re.search(r"\b[A-Z]\d{4}\b", input)
        if order:
            status = ORDERS.get(order.group(0), "unknown")
            call = ToolCall("lookup_order", {"order_id": order.group(0)}, {"status": status})
            return AgentResult(
                output=f"Order {order.group(0)} is {status}.",
                tool_calls=[call],
                token_usage={"prompt_tokens": 12, "completion_tokens": 6},
            )
        if "refund" in text:
            days = (context or {}).get("refund_window_days", 30)
            return AgentResult(output=f"You can request a refund within {days} days of delivery.")
        if "human" in text or "agent" in text:
            call = ToolCall("escalate", {"reason": "customer asked for a human"}, "ticket T-1")
            return AgentResult(output="I have passed you to a colleague.", tool_calls=[call])
        return AgentResult(output="I can help with orders and refunds.")


def support_agent(input: str, context: dict[str, Any] | None = None) -> dict[str, Any]:
    """The same agent as a function returning a dict, the other shape an adapter may have."""
    result = SupportAgent().run(input, context)
    return {
        "output": result.output,
        "tool_calls": [vars(call) for call in result.tool_calls],
    }
