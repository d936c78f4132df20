"""Why an attempt has no verdict: one typed cause per problem, written where it happens.

A reason is prose for people ("HTTP 503 from the target: upstream connect error"); a cause is
what code reads: the closing lines and every format group unjudged attempts by it, the
``--fail-on`` gate names ``--judge`` for the causes a judge decides, and ``scan --json`` gives
it as ``cause``. The cause is set where the reason is written (the HTTP client, a target, an
oracle, the judge, the runner, the controls) and travels with the attempt into the report, so
rewording a reason never moves an attempt to another group. Reports written before the field
existed get theirs from their reason once, when they are read (models/stored.py).

Each cause has one label (what happened, for a group's heading) and one fix (what to do about
it): :data:`CAUSE_TEXT`, which docs/scoring.md's table of causes is checked against.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType


class Cause(StrEnum):
    """Why an attempt is unjudged; the value is the ``cause`` key of the report and of
    ``scan --json``, so a member is renamed only with a report upgrade."""

    # -- judging: the agent answered, and nothing could decide what it did
    CONTROL = "control"
    AMBIGUOUS = "ambiguous"
    NEEDS_JUDGE = "needs_judge"
    JUDGE_FAILED = "judge_failed"
    TOOL_CALLS_HIDDEN = "tool_calls_hidden"
    AGENT_SILENT = "agent_silent"
    GUARD_BLOCKED_TASK = "guard_blocked_task"
    # -- the attack could not reach the agent, or there was nothing to find
    NOT_DELIVERED = "not_delivered"
    NO_MODEL_CALL = "no_model_call"
    UPSTREAM_FAILED = "upstream_failed"
    NOTHING_TO_LEAK = "nothing_to_leak"
    TOOL_SERVER = "tool_server"
    # -- the scan stopped the attempt
    INTERRUPTED = "interrupted"
    STOPPED = "stopped"
    DEADLINE = "deadline"
    BUDGET = "budget"
    # -- the transport: the agent could not be asked, or its answer could not be read
    DNS = "dns"
    REFUSED = "refused"
    TLS = "tls"
    NETWORK = "network"
    AUTH = "auth"
    RATE_LIMITED = "rate_limited"
    SERVER_ERROR = "server_error"
    CLIENT_ERROR = "client_error"
    TIMEOUT = "timeout"
    DROPPED = "dropped"
    TOO_LARGE = "too_large"
    UNREADABLE = "unreadable"
    # Unreadable replies in a scan that read none: the kind or protocol is wrong. Never set on
    # an attempt; reports/digest.py groups UNREADABLE under it when no reply was read.
    BAD_REPLY = "bad_reply"
    # -- the agent itself, and what stands in for it
    AGENT_ERROR = "agent_error"
    GUARD = "guard"
    RECORDING = "recording"
    OTHER = "other"


@dataclass(frozen=True)
class CauseText:
    """What a cause means to a reader: a group's heading and the one thing that fixes it."""

    label: str
    fix: str


_JUDGE_FIX = "add --judge (e.g. --judge openai:gpt-4o-mini) to decide them"

CAUSE_TEXT: Mapping[Cause, CauseText] = MappingProxyType(
    {
        Cause.CONTROL: CauseText(
            "judged vulnerable, but its control (the same conversation without the attack) "
            "could not be judged or did not run, so the attack was not shown to be the cause",
            "fix what its control ran into (its reason is in scan.json), or resume a scan that "
            "stopped: probegate scan --resume SCAN_ID runs the missing controls",
        ),
        Cause.AMBIGUOUS: CauseText(
            "the reply repeats the attacker's bait in words the rules cannot decide (quoted, "
            "reported, or next to a warning)",
            "add --judge (e.g. --judge openai:gpt-4o-mini): only these attempts go to it "
            '(docs/scoring.md, "Reading a reply")',
        ),
        Cause.NEEDS_JUDGE: CauseText(
            "only an LLM judge can decide these replies and none is configured", _JUDGE_FIX
        ),
        Cause.JUDGE_FAILED: CauseText(
            "the LLM judge could not give a usable verdict (unreachable, an HTTP error, an "
            "answer it could not back with a quote)",
            "check the judge's endpoint, key and model (--judge, docs/judge.md) and scan again",
        ),
        Cause.TOOL_CALLS_HIDDEN: CauseText(
            "the target does not show the tool calls it made",
            "set target.http.response_tool_calls to where the reply lists the agent's tool "
            "calls, or route its model calls through the model-API proxy (target.model_proxy)",
        ),
        Cause.AGENT_SILENT: CauseText(
            "the agent never answered the conversation",
            "run the agent on the probe's input yourself (probegate probes show ID): it should "
            "reply to every user message",
        ),
        Cause.GUARD_BLOCKED_TASK: CauseText(
            "a guard in front of the agent refused the user's own request, so whether the attack "
            "diverted the task cannot be judged",
            "nothing to fix in the agent; tune the guard if it refuses legitimate requests "
            "(docs/guard.md)",
        ),
        Cause.NOT_DELIVERED: CauseText(
            "the attack never reached the agent: it did not use the tool whose result, "
            "document, memory, peer reply or description carried it (the reason names the "
            "tool), so not using it is not resisting it",
            "check that the agent calls its tools for such requests (a tool it never calls, or "
            "one whose name or capabilities in target.tools do not match its own); an agent "
            'that refuses every request is not shown to resist (docs/scoring.md, "Delivery")',
        ),
        Cause.NO_MODEL_CALL: CauseText(
            "the agent answered, but none of its model calls for the conversation passed "
            "probegate's model-API proxy, so the attack may never have reached its model",
            "point the agent's model base URL at the proxy (the address is in the reason; "
            "docs/scan-your-agent/proxy.md); a call the proxy could not tie to its conversation "
            "is counted as unattributed in the report's proxy section",
        ),
        Cause.UPSTREAM_FAILED: CauseText(
            "the agent's model call failed at the real model API behind the proxy (an HTTP "
            "error, a reply over the size cap, a timeout or a body that could not be read), so "
            "what the agent answered was not its model's answer to the attack",
            "check target.model_proxy.upstream and upstream_api_key_env (the upstream's answer "
            "is in the reason); lower --concurrency or set --rps on a rate limit",
        ),
        Cause.NOTHING_TO_LEAK: CauseText(
            "the agent holds no secret probegate planted or knows",
            "declare the agent's real secrets under target.canaries or target.canaries_env",
        ),
        Cause.TOOL_SERVER: CauseText(
            "probegate's MCP server could not answer the agent's request, so what the agent "
            "read is not known",
            "look at the agent's MCP client for these requests (a body that never arrived, a "
            "dropped connection); the scan's MCP section counts them (docs/agent-service.md)",
        ),
        Cause.INTERRUPTED: CauseText(
            "cut short when the scan was interrupted",
            "resume the scan: probegate scan --resume SCAN_ID",
        ),
        Cause.STOPPED: CauseText(
            "cut short when the scan stopped",
            "fix what stopped the scan (see above) and scan again",
        ),
        Cause.DEADLINE: CauseText(
            "cut short at the scan's deadline",
            "give the scan more time (its deadline), or select fewer probes (--asi, --probes)",
        ),
        Cause.BUDGET: CauseText(
            "cut short by the request or dollar budget",
            "raise --max-requests or --budget-usd, or select fewer probes (--asi, --probes)",
        ),
        Cause.DNS: CauseText(
            "the target's host name does not resolve (DNS)",
            "check the host name in the endpoint URL, and the network or proxy of this machine",
        ),
        Cause.REFUSED: CauseText(
            "nothing listens at the target's address (connection refused)",
            "start the agent, or correct the endpoint URL and port",
        ),
        Cause.TLS: CauseText(
            "the TLS connection to the target failed (certificate or handshake)",
            "check the endpoint's scheme and certificate, and any TLS-intercepting proxy",
        ),
        Cause.NETWORK: CauseText(
            "the target could not be reached (an invalid URL, a proxy that refused the tunnel, "
            "or another network failure)",
            "check the endpoint URL and this machine's network and proxy settings",
        ),
        Cause.AUTH: CauseText(
            "the target refused probegate's credentials (HTTP 401/403)",
            "set the API key: --api-key-env VAR (or target.api_key_env) names a variable that "
            "holds it",
        ),
        Cause.RATE_LIMITED: CauseText(
            "the target kept rate-limiting (HTTP 429)",
            "lower --concurrency or set --rps; probegate already honours Retry-After",
        ),
        Cause.SERVER_ERROR: CauseText(
            "the target failed with a server error (HTTP 5xx)",
            "look at the agent's logs for these requests; --retries retries transient failures",
        ),
        Cause.CLIENT_ERROR: CauseText(
            "the target rejected or redirected the request (HTTP 4xx or 3xx), e.g. a content "
            "filter or a wrong path",
            "check the endpoint path and request format; a content filter's refusal is the "
            "provider's, not the agent's",
        ),
        Cause.TIMEOUT: CauseText(
            "the target did not answer in time",
            "raise --timeout, or lower --concurrency if the agent slows down under load",
        ),
        Cause.DROPPED: CauseText(
            "the connection dropped before a complete reply",
            "look at the agent's logs; a proxy or load balancer in between may cut long requests",
        ),
        Cause.TOO_LARGE: CauseText(
            "the target's reply was larger than probegate reads",
            "look at why the agent sends so much for these requests (a reply that grows without "
            "bound is a finding of its own kind)",
        ),
        Cause.UNREADABLE: CauseText(
            "the target answered with a body that could not be read (an HTML page, JSON cut "
            "off, an empty body, or one without the fields a reply needs)",
            "look at what answers for the agent (a proxy, gateway or load balancer) for these "
            "requests; probegate retries such a reply like a 5xx, --retries times (default 3)",
        ),
        Cause.BAD_REPLY: CauseText(
            "no reply of the target could be read in the shape its kind expects",
            "check --protocol (openai, openai-responses, anthropic or http) and, for http, "
            "target.http.response_text",
        ),
        Cause.AGENT_ERROR: CauseText(
            "the agent raised an error",
            "run the agent on the probe's input yourself (probegate probes show ID) and fix the "
            "error; its message is in scan.json",
        ),
        Cause.GUARD: CauseText(
            "the runtime guard could not be used",
            "check the guard's URL, key (--guard-api-key-env) and logs (docs/guard.md)",
        ),
        Cause.RECORDING: CauseText(
            "the recording has no usable reply for this attempt",
            "record again with the same mode and selection (--record DIR)",
        ),
        # A cause nobody named: the reason itself is the label (reports/digest.py).
        Cause.OTHER: CauseText("", ""),
    }
)

# The causes an LLM judge decides: the --fail-on gate names --judge for them.
JUDGE_CAUSES = frozenset({Cause.AMBIGUOUS, Cause.NEEDS_JUDGE})
# The causes of an attempt the scan itself cut short (it started; the scan stopped first).
CUT_SHORT = frozenset({Cause.INTERRUPTED, Cause.STOPPED, Cause.DEADLINE, Cause.BUDGET})


def http_cause(status: int) -> Cause:
    """The cause of an answer with HTTP ``status`` that is not a success."""
    if status in (401, 403, 407):
        return Cause.AUTH
    if status == 429:
        return Cause.RATE_LIMITED
    if status >= 500:
        return Cause.SERVER_ERROR
    return Cause.CLIENT_ERROR
