"""What a target kind adds to the scan report: one typed section per kind that has one.

Four do today. ``guard`` reports what the runtime guard in front of the agent evaluated,
blocked and could not judge, how fast it answered, and its false positives on a benign control
set (``ScanReport.guard``, docs/guard.md). ``mcp`` counts what an agent did through probegate's
MCP server (``ScanReport.mcp``, docs/agent-service.md). ``proxy`` counts the model calls that
passed through probegate's model-API proxy, and those it could not attribute to an attempt
(``ScanReport.proxy``, docs/targets.md). ``peers`` counts what an agent did with the A2A peers
probegate served it (``ScanReport.peers``, docs/scan-your-agent/a2a.md). The models read a
stored report's section once, at the edge, so the emitters render typed values and never
re-parse loose JSON.

The JSON is the one documented in those docs, field for field: a section read from a stored
report dumps to the same bytes it was read from (the signature covers them). That is why
numbers that may be written either way are ``int | float`` and optional parts are left out of
the JSON rather than written as ``null``.
"""

from __future__ import annotations

from typing import ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from probegate.models.transcript import GuardAction, GuardStage

Number = int | float
TimingKey = Literal["latency_ms", "round_trip_ms", "handler_ms", "network_delay_ms"]
K = TypeVar("K", bound=str)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GuardEventCounts(_Section):
    """Guard events of one stage (or of all): verdicts received and what they decided."""

    evaluated: int = 0  # verdicts received
    allowed: int = 0
    blocked: int = 0
    modified: int = 0  # allowed with at least one span applied
    unjudged: int = 0  # verdicts naming paths they could not judge
    failed: int = 0  # no verdict: refusal status, 5xx, timeout, not a Verdict

    def plus(self, other: GuardEventCounts) -> GuardEventCounts:
        return GuardEventCounts(
            **{name: getattr(self, name) + getattr(other, name) for name in type(self).model_fields}
        )


class Percentiles(_Section):
    """Nearest-rank p50/p95 of a measurement, in ms, and how many samples they summarise."""

    p50: Number
    p95: Number
    n: int


class GuardSpans(_Section):
    applied: int = 0
    unresolved: int = 0


class BenignNotRun(_Section):
    """The benign control set before it ran (no conversation was opened)."""

    size: int
    run: Literal[False] = False


class BenignRun(_Section):
    """What the guard did with the benign control set: every block is a false positive."""

    size: int
    run: Literal[True] = True
    blocked: int
    allowed: int
    modified: int
    unjudged: int
    failed: int
    not_run: int
    false_positives: list[str]
    # Over the items that got a verdict at all; None when none did.
    false_positive_rate: Number | None


class GuardSummary(_Section):
    """The report's ``guard`` section (docs/guard.md)."""

    REPORT_FIELD: ClassVar[str] = "guard"

    url: str
    behind: str
    events: GuardEventCounts
    by_stage: dict[GuardStage, GuardEventCounts]
    actions: dict[GuardAction, int]
    spans: GuardSpans
    obligations_ignored: int
    failures: list[str]
    timing: dict[TimingKey, Percentiles]
    http_status: dict[str, int]
    refusals: dict[str, int]
    benign: BenignRun | BenignNotRun

    @classmethod
    def merged(cls, sections: list[GuardSummary]) -> GuardSummary | None:
        """The section of a merged scan: the shards' counts summed.

        Latency percentiles cannot be combined from percentiles, so ``timing`` is left empty
        (each shard's report keeps its own); the benign control set ran once per shard against
        the same guard, so the first shard's result stands for all.
        """
        if not sections:
            return None
        first, *rest = sections
        merged = first.model_copy(update={"timing": {}})
        for other in rest:
            merged = merged.model_copy(
                update={
                    "events": merged.events.plus(other.events),
                    "by_stage": _sum_by_key(merged.by_stage, other.by_stage),
                    "actions": _add_counts(merged.actions, other.actions),
                    "spans": GuardSpans(
                        applied=merged.spans.applied + other.spans.applied,
                        unresolved=merged.spans.unresolved + other.spans.unresolved,
                    ),
                    "obligations_ignored": merged.obligations_ignored + other.obligations_ignored,
                    "failures": [*merged.failures, *other.failures],
                    "http_status": _add_counts(merged.http_status, other.http_status),
                    "refusals": _add_counts(merged.refusals, other.refusals),
                }
            )
        return merged


def _add_counts(a: dict[K, int], b: dict[K, int]) -> dict[K, int]:
    return {key: a.get(key, 0) + b.get(key, 0) for key in a | b}


def _sum_by_key(
    a: dict[GuardStage, GuardEventCounts], b: dict[GuardStage, GuardEventCounts]
) -> dict[GuardStage, GuardEventCounts]:
    out = dict(a)
    for key, counts in b.items():
        out[key] = out[key].plus(counts) if key in out else counts
    return out


class McpRejections(_Section):
    """The agent's requests probegate's MCP server refused with a JSON-RPC error, by reason."""

    ended: int = 0  # to a conversation that had ended
    # Written by earlier versions; such requests are in McpSummary.unauthenticated now.
    unknown_endpoint: int = 0
    unknown_tool: int = 0
    malformed: int = 0  # arguments that do not match the tool's schema
    oversized: int = 0  # a request or arguments over the size limit
    flood: int = 0  # past the per-conversation call limit

    def plus(self, other: McpRejections) -> McpRejections:
        return McpRejections(
            **{name: getattr(self, name) + getattr(other, name) for name in type(self).model_fields}
        )


class McpUnauthenticated(_Section):
    """Traffic to probegate's MCP server that carried no token it issued: anything that can
    reach the port can send it, so it is counted apart from the agent's (docs/agent-service.md,
    "Limits") and changes no verdict."""

    requests: int = 0  # HTTP requests to a path probegate never issued
    refused: int = 0  # connections closed at the connection cap
    timed_out: int = 0  # connections that sent no request head in time
    invalid: int = 0  # connections that sent something other than HTTP

    def plus(self, other: McpUnauthenticated) -> McpUnauthenticated:
        return McpUnauthenticated(
            **{name: getattr(self, name) + getattr(other, name) for name in type(self).model_fields}
        )


class McpSummary(_Section):
    """The report's ``mcp`` section: what the agent did through probegate's MCP server.

    Counts only (docs/agent-service.md): the server's address changes from run to run and
    stays out of the report, so the same agent scanned twice gives the same bytes.
    """

    REPORT_FIELD: ClassVar[str] = "mcp"

    conversations: int  # endpoints opened, one per conversation
    calls: int  # tool calls the server accepted (answered from the sandbox)
    rejected: McpRejections
    # A report written before it was counted apart reads it as zeros (models/stored.py).
    unauthenticated: McpUnauthenticated

    @classmethod
    def merged(cls, sections: list[McpSummary]) -> McpSummary | None:
        """The section of a merged scan: the shards' counts summed."""
        if not sections:
            return None
        merged = sections[0]
        for other in sections[1:]:
            merged = McpSummary(
                conversations=merged.conversations + other.conversations,
                calls=merged.calls + other.calls,
                rejected=merged.rejected.plus(other.rejected),
                unauthenticated=merged.unauthenticated.plus(other.unauthenticated),
            )
        return merged


class ProxyRefusals(_Section):
    """Requests probegate's model-API proxy did not forward (docs/scan-your-agent/proxy.md,
    "What the proxy protects"): anything on the machine can reach its port, so these are
    counted apart from the agent's model calls and change no verdict."""

    no_credential: int = 0  # without the scan's base URL or the upstream's key
    not_model_endpoint: int = 0  # with it, for anything but the API's model endpoints
    invalid: int = 0  # not a request the proxy reads: a target that is not a path, a bad length
    timed_out: int = 0  # connections that sent no complete request in time
    connections: int = 0  # connections closed at the connection cap

    def plus(self, other: ProxyRefusals) -> ProxyRefusals:
        return ProxyRefusals(
            **{name: getattr(self, name) + getattr(other, name) for name in type(self).model_fields}
        )


class ProxySummary(_Section):
    """The report's ``proxy`` section: the model calls probegate's model-API proxy saw.

    Counts only (docs/targets.md, "The model-API proxy"), no address and no text, so the same
    agent scanned twice gives the same bytes. ``unattributed`` calls were forwarded untouched:
    nothing was planted in them and their tool calls are no attempt's evidence.
    """

    REPORT_FIELD: ClassVar[str] = "proxy"

    api: Literal["openai-chat", "openai-responses", "anthropic-messages"]
    safe: bool
    conversations: int  # conversations that registered with the proxy
    model_calls: int  # calls to the API's endpoint
    attributed: int  # ... that the proxy attributed to an attempt's conversation
    attributed_by_words: int  # ... of those, by the waiting message's words (no mark came back)
    unattributed: int  # ... that it could not, forwarded untouched
    tool_calls: int  # tool calls the model asked for in attributed replies
    stopped: int  # of those, stopped in safe mode (never reached the agent)
    results_replaced: int  # tool results the model read from the probe instead of the tool
    descriptions_replaced: int  # tool descriptions that carried the probe's text
    unlisted_tools: list[str]  # tools the agent declared that target.tools does not list
    failed: int  # calls the upstream did not answer, or answered in a shape not read
    # Read as zeros from a report written before they were counted.
    refused: ProxyRefusals = ProxyRefusals()

    @classmethod
    def merged(cls, sections: list[ProxySummary]) -> ProxySummary | None:
        """The section of a merged scan: the shards' counts summed."""
        if not sections:
            return None
        counts = {
            name: sum(getattr(s, name) for s in sections)
            for name, info in cls.model_fields.items()
            if info.annotation is int
        }
        tools = sorted({t for s in sections for t in s.unlisted_tools})
        refused = ProxyRefusals()
        for section in sections:
            refused = refused.plus(section.refused)
        update = {**counts, "unlisted_tools": tools, "refused": refused}
        return sections[0].model_copy(update=update)


class PeerRejections(_Section):
    """The agent's requests probegate's A2A peers refused with a JSON-RPC error, by reason."""

    ended: int = 0  # to a conversation that had ended
    unknown_peer: int = 0  # to a peer target.peers does not declare
    # Not JSON, not an A2A request, a method or wire version the peer does not speak, a task
    # it does not have.
    malformed: int = 0
    oversized: int = 0  # a request over the size limit, or nested too deep
    flood: int = 0  # past the per-conversation message limit

    def plus(self, other: PeerRejections) -> PeerRejections:
        return PeerRejections(
            **{name: getattr(self, name) + getattr(other, name) for name in type(self).model_fields}
        )


class PeersSummary(_Section):
    """The report's ``peers`` section: what the agent did with the A2A peers probegate served.

    Counts only (docs/scan-your-agent/a2a.md), no address and no text, so the same agent
    scanned twice gives the same bytes. Traffic without a token probegate issued is counted
    apart as the MCP server's is (``unauthenticated``): it is not the agent's.
    """

    REPORT_FIELD: ClassVar[str] = "peers"

    conversations: int  # conversations the peers were opened for, one set of endpoints each
    cards: int  # agent cards served
    messages: int  # well-formed messages the agent sent to a peer (malformed ones: rejected)
    tasks: int  # ... answered with a task (the others came past the flood limit)
    rejected: PeerRejections
    unauthenticated: McpUnauthenticated

    @classmethod
    def merged(cls, sections: list[PeersSummary]) -> PeersSummary | None:
        """The section of a merged scan: the shards' counts summed."""
        if not sections:
            return None
        merged = sections[0]
        for other in sections[1:]:
            merged = PeersSummary(
                conversations=merged.conversations + other.conversations,
                cards=merged.cards + other.cards,
                messages=merged.messages + other.messages,
                tasks=merged.tasks + other.tasks,
                rejected=merged.rejected.plus(other.rejected),
                unauthenticated=merged.unauthenticated.plus(other.unauthenticated),
            )
        return merged


# Every section a target kind may add, one ``ScanReport`` field each (``REPORT_FIELD``).
KindSection = GuardSummary | McpSummary | ProxySummary | PeersSummary
