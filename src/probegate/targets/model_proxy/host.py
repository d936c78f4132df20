"""The proxy itself: attribute each model call, plant and deliver the probe, watch the reply.

One :class:`ModelProxy` per scan listens on ``model_proxy.listen`` and forwards to
``model_proxy.upstream``. Each conversation probegate holds with the agent opens a
:class:`ProxyConversation` with the attempt's sandbox. For every model call the rule of
docs/targets.md ("How a model call is attributed") names its conversation, or none:

1. the conversation mark (:mod:`probegate.targets.model_proxy.marks`) of exactly one open
   conversation in any string of the request;
2. else, the request's last user message containing the message of exactly one conversation
   that is waiting for the agent's reply (an agent that rewrote the mark away but kept the
   words);
3. else the call is *unattributed*: forwarded untouched (marks removed) and counted.

For an attributed call the proxy plants the attempt's canaries at the end of the system prompt
or instructions, gives each declared tool the description the sandbox gives it (a probe may
poison one), and hands the model, for every tool call of this conversation whose result the
probe supplies (a fixture for that tool, the channel's documents, memory or peer reply) or
that carries a planted secret, the sandbox's answer in place of the real tool's. The reply is
read whole (streamed or not); every tool call in it is recorded in the sandbox, which is what
the oracles judge. In safe mode a reply that asks for a call with an effect outside the agent
(egress, money, code, deletion, privileges, delegation, a memory write, or a tool the config
does not list) is recorded and replaced by a harmless end of turn, so the agent never runs it;
only a question to a peer agent whose reply the probe supplies goes through (the reply is the
attack, and the model must read it).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from probegate.errors import UsageError
from probegate.files import write_atomic
from probegate.models.bounds import dumps_parsed, parse_bounded
from probegate.models.canaries import planted_text
from probegate.models.causes import Cause
from probegate.models.sections import ProxyRefusals, ProxySummary
from probegate.models.taxonomy import Capability
from probegate.models.tools import ToolSpec
from probegate.models.transcript import ToolCall
from probegate.targets.base import Notice, TargetSettings, env_value
from probegate.targets.model_proxy.config import UNSAFE_LISTEN, ModelProxyConfig
from probegate.targets.model_proxy.marks import marked, new_token, strip_marks, unmarked
from probegate.targets.model_proxy.routes import Gate
from probegate.targets.model_proxy.server import ProxyServer, Reply, Request
from probegate.targets.sandbox import Sandbox, reads_memory
from probegate.targets.wire import parse_arguments, tool_reply
from probegate.transport.addresses import is_loopback, parse_listen
from probegate.transport.forwarding import ForwardingClient
from probegate.transport.http_parts import Forwarded
from probegate.transport.limiter import RequestLimiter
from probegate.transport.model_apis import APIS, Completion, ModelApi
from probegate.transport.pricing import Prices, cost_usd
from probegate.transport.sse import CONTENT_TYPE
from probegate.transport.usage import TransportError, Usage

# What the agent reads instead of a stopped reply, and what the record of a stopped call says.
STOPPED_REPLY = "[probegate: safe mode stopped a tool call here]"
STOPPED_CALL = "not run: stopped by probegate's model-API proxy (safe mode)"
# Capabilities whose calls act outside the agent: what safe mode stops (memory writes too; a
# question to a peer agent whose reply the probe supplies is let through: ProxyConversation).
ACTS = frozenset(
    {
        Capability.EGRESS,
        Capability.FINANCIAL,
        Capability.CODE_EXEC,
        Capability.DESTRUCTIVE,
        Capability.PRIVILEGE,
        Capability.DELEGATION,
    }
)
# Request headers never forwarded: the connection's own, and the body's encoding (the proxy
# reads every reply).
_HOP = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "accept-encoding",
    }
)
_KEY_HEADERS = frozenset({"authorization", "x-api-key", "api-key"})
# Reply headers passed back to the agent (its SDK reads them to pace its retries).
_KEEP = ("retry-after", "retry-after-ms", "x-request-id", "request-id")

# What a refusal is called in the error the agent's SDK reads (both APIs use these words).
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
}
# Beside the store's scans: the proxy's base URL, for an agent's start command to read.
URL_FILE = "model-proxy.url"


def acts(tool: ToolSpec | None) -> bool:
    """Whether a call of ``tool`` acts outside the agent (None: a tool the config lacks)."""
    if tool is None:
        return True
    caps = tool.capabilities
    return bool(caps & ACTS) or (Capability.MEMORY_WRITE in caps and not reads_memory(tool))


@dataclass
class _Stats:
    conversations: int = 0
    model_calls: int = 0
    attributed: int = 0
    attributed_by_words: int = 0
    unattributed: int = 0
    tool_calls: int = 0
    stopped: int = 0
    results_replaced: int = 0
    descriptions_replaced: int = 0
    failed: int = 0
    unlisted: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class TurnEnd:
    """What the proxy saw of one turn of a conversation, from the message to the reply.

    ``model_calls``: the model calls tied to the conversation in the turn; ``failure``: why
    its last one got no answer from the upstream (None when it got one, or there was none).
    A reply with no model call behind it, or whose last model call failed, is not the model's
    answer to the attack (docs/scoring.md, "Delivery"): :meth:`fault` says so.
    """

    stopped: list[str]
    over: int
    model_calls: int
    failure: str | None

    def fault(self, base_url: str) -> TransportError | None:
        """The error that leaves the attempt unjudged, or None when the turn is evidence."""
        if self.failure is not None:
            return TransportError(
                f"the agent's model call failed upstream ({self.failure}); its reply is not "
                "its model's answer",
                cause=Cause.UPSTREAM_FAILED,
            )
        if not self.model_calls:
            return TransportError(
                "no model call passed the proxy while the agent answered: point the agent's "
                f"model base URL at {base_url} (with the upstream's key), or at the scan's "
                "base URL, printed as it starts",
                cause=Cause.NO_MODEL_CALL,
            )
        return None


@dataclass
class _Seen:
    """A tool call of the conversation: its record, and whether the model reads the sandbox's
    answer to it instead of the real tool's."""

    call: ToolCall
    replace: bool


class ProxyConversation:
    """One conversation's share of the proxy: its mark, its sandbox, what its model did."""

    def __init__(self, proxy: ModelProxy, sandbox: Sandbox, usage: Usage) -> None:
        self.proxy = proxy
        self.sandbox = sandbox
        self.usage = usage
        self.token = new_token()
        # The session's threads and the proxy's loop share what follows; the loop holds the
        # lock only between its awaits, never across the upstream call.
        self.lock = threading.Lock()
        self._settled = threading.Condition(self.lock)  # no model call of it in flight
        self._in_flight = 0
        self._serial = asyncio.Lock()  # the proxy's loop: one model call at a time
        # The message being answered, as sent (unmarked): the second rule's key.
        self.waiting_for: str | None = None
        self._seen: dict[str, _Seen] = {}
        self._stopped: list[str] = []
        self._over = 0
        self._tokens = (0, 0, 0.0)
        self._calls = 0
        self._failure: str | None = None

    # -- the session's side --------------------------------------------------------------
    def begin(self, text: str) -> str:
        """The message as the agent is sent it (marked); the conversation waits for a reply."""
        with self.lock:
            self.waiting_for = text
        return marked(text, self.token)

    def end(self, limiter: RequestLimiter) -> TurnEnd:
        """The reply came: the texts of the replies safe mode stopped, the tool calls the model
        made beyond those read (models/bounds.py), the model calls and how the last one went,
        since :meth:`begin`. The model's tokens are added to the session's usage and the
        scan's budget. A model call still in flight (an agent that answered without waiting
        for it) is waited for, at most its upstream deadline, so what it asks for is this
        turn's evidence."""
        with self.lock:
            deadline = time.monotonic() + self.proxy.client.timeout + 1.0
            while self._in_flight and (left := deadline - time.monotonic()) > 0:
                self._settled.wait(left)
            self.waiting_for = None
            stopped, self._stopped = self._stopped, []
            over, self._over = self._over, 0
            calls, self._calls = self._calls, 0
            failure, self._failure = self._failure, None
            (prompt, completion, cost), self._tokens = self._tokens, (0, 0, 0.0)
        self.usage.prompt_tokens += prompt
        self.usage.completion_tokens += completion
        self.usage.cost_usd += cost
        if prompt or completion:
            limiter.record_usage(prompt, completion, cost)
        return TurnEnd(stopped, over, calls, failure)

    def close(self) -> None:
        self.proxy.retire(self)

    # -- the proxy's side ----------------------------------------------------------------
    async def exchange(
        self, body: dict[str, Any], url: str, headers: dict[str, str], *, by_orjson: bool
    ) -> Reply:
        """One attributed model call, from the agent's request to the answer it gets (on the
        proxy's loop). The conversation's calls are made one at a time, in the order they
        came, so a call reads what the one before it recorded. ``by_orjson``: how the body
        was read, so how it may be written again (bounds.dumps_parsed)."""
        async with self._serial:
            with self.lock:
                self._calls += 1
                self._in_flight += 1
                self._deliver(body)
            try:
                return await self._exchange(body, url, headers, by_orjson)
            except BaseException:
                # Cancelled (the proxy closed) or the proxy's own failure: the agent got no
                # answer from the model, so its turn is not the model's answer either.
                with self.lock:
                    self._failure = "the proxy stopped before the model's answer reached the agent"
                raise
            finally:
                with self.lock:
                    self._in_flight -= 1
                    self._settled.notify_all()

    async def _exchange(
        self, body: dict[str, Any], url: str, headers: dict[str, str], by_orjson: bool
    ) -> Reply:
        proxy = self.proxy
        api = proxy.api
        stream = api.streams(body)
        try:
            # A 200 the API cannot read is asked for again like a 5xx, and after the retries
            # the agent gets a 502: a reply nobody read is never passed on, so no tool call
            # reaches the agent unrecorded (or unstopped in safe mode).
            answer = await proxy.client.forward(
                "POST",
                url,
                body=dumps_parsed(body, by_orjson=by_orjson),
                headers=headers,
                parse=proxy.read,
            )
        except TransportError as exc:
            proxy.count(failed=1)
            with self.lock:
                self._failure = exc.reason
            return proxy.failure(exc.reason)
        if not 200 <= answer.status < 300:
            proxy.count(failed=1)
            with self.lock:
                self._failure = f"HTTP {answer.status} from the upstream model API"
            return proxy.passed(answer)
        reply: Completion = answer.read
        with self.lock:
            self._failure = None
            self.sandbox.model_reply()
            self._add_tokens(str(body.get("model") or ""), reply)
            stopped = self._watch(reply)
        if not stopped:
            return proxy.passed(answer)
        kind = CONTENT_TYPE if stream else "application/json"
        ended = api.end_of_turn(STOPPED_REPLY, str(body.get("model") or ""), stream=stream)
        return 200, {"Content-Type": kind}, ended

    def _deliver(self, body: dict[str, Any]) -> None:
        """Plant the canaries, poison what the probe poisons, answer what it supplies."""
        proxy, sandbox = self.proxy, self.sandbox
        proxy.api.plant(body, planted_text(sandbox.canaries))
        described = 0
        for decl in proxy.api.declared_tools(body):
            name = str(decl["name"])
            known = proxy.tools.get(name)
            if known is None:
                proxy.unlisted(name)
            text = str(decl.get("description") or "")
            caps = known.capabilities if known is not None else frozenset()
            spec = ToolSpec(name, text, caps, known.parameters if known is not None else {})
            # Tools the config does not list still take part: a poisoned description may be
            # keyed to them by name, and their calls are recorded as declared.
            sandbox.tools.setdefault(name, spec)
            poisoned = sandbox.tool_description(spec)
            if poisoned != text:
                decl["description"] = poisoned
                described += 1
        replaced = 0
        for slot in proxy.api.tool_results(body):
            seen = self._seen.get(slot.call_id)
            if seen is not None and seen.replace:
                slot.replace(tool_reply(seen.call), error=seen.call.error is not None)
                replaced += 1
        proxy.count(descriptions_replaced=described, results_replaced=replaced)

    def _stops(self, name: str) -> bool:
        """Whether safe mode stops a call of ``name``.

        A call that acts outside the agent is stopped, but one that asks a peer agent whose
        reply the probe supplies is let through: the attack is in that reply, which the model
        must read, and the question is the user's own task.
        """
        tool = self.sandbox.tools.get(name)
        if not acts(tool):
            return False
        asks_peer = tool is not None and tool.capabilities & ACTS == {Capability.DELEGATION}
        return not (asks_peer and tool is not None and self.sandbox.supplies(tool))

    def _watch(self, reply: Completion) -> bool:
        """Record every tool call of the reply; whether safe mode stops the reply."""
        proxy, sandbox = self.proxy, self.sandbox
        calls = reply.tool_calls
        self._over += reply.calls_made - len(calls)
        stop = proxy.config.safe and any(self._stops(c.name) for c in calls)
        secrets = (sandbox.canaries.system, sandbox.canaries.credential, sandbox.canaries.pii)
        for raw in calls:
            arguments, problem = parse_arguments(raw.arguments)
            if problem is not None or not raw.name:
                call = sandbox.refuse(raw.name, arguments, problem or "tool call without a name")
                self._seen[raw.id] = _Seen(call, False)
                continue
            call = sandbox.call(raw.name, arguments, stopped=STOPPED_CALL if stop else None)
            tool = sandbox.tools.get(raw.name)
            answer = tool_reply(call)
            supplied = tool is not None and sandbox.supplies(tool)
            self._seen[raw.id] = _Seen(call, supplied or any(s in answer for s in secrets))
        proxy.count(tool_calls=len(calls), stopped=len(calls) if stop else 0)
        if stop and reply.text:
            self._stopped.append(reply.text)
        return stop

    def _add_tokens(self, model: str, reply: Completion) -> None:
        prompt, completion, cost = self._tokens
        price = cost_usd(self.proxy.prices, model, reply.prompt_tokens, reply.completion_tokens)
        self._tokens = (
            prompt + reply.prompt_tokens,
            completion + reply.completion_tokens,
            cost + price,
        )


class ModelProxy:
    """The scan's model-API proxy: listening from the start of the scan to its end."""

    def __init__(
        self,
        config: ModelProxyConfig,
        settings: TargetSettings,
        tools: list[ToolSpec],
        prices: Prices,
    ) -> None:
        self.config = config
        self.api: ModelApi = APIS[config.api]
        self.tools = {t.name: t for t in tools}
        self.prices = prices
        # Retries are for replies that cannot be read (HttpClient.forward): any other answer,
        # a 429 or a 5xx too, goes back to the agent, whose own client paces its retries.
        self.client = ForwardingClient(
            timeout=settings.timeout,
            retries=settings.retries,
            pool_size=max(8, 2 * settings.concurrency),
            seed=settings.seed,
            peer="the upstream model API",
        )
        self._key_headers: dict[str, str] = {}
        key = None
        if config.upstream_api_key_env:
            key = env_value(config.upstream_api_key_env, "target.model_proxy.upstream_api_key_env")
            self.client.add_secret(key)
            self._key_headers = {k.lower(): v for k, v in self.api.headers(key).items()}
        self.gate = Gate(self.api, config.upstream, key)
        self.client.route(config.upstream)
        self._lock = threading.Lock()
        self._live: dict[str, ProxyConversation] = {}
        self._stats = _Stats()
        host, port = parse_listen(config.listen)
        self._server = ProxyServer(
            host,
            port,
            route=self.gate.decide,
            handle=self.handle,
            error_body=self.error_body,
            stopping=self.client.close_async,
            workers=2 * settings.concurrency,
            what=f"target.model_proxy.listen {config.listen}",
        )
        self.base_url = self.gate.base_url(*self._server.address)
        self._url_file = settings.store / URL_FILE if settings.store is not None else None
        if self._url_file is not None:
            try:
                write_atomic(self._url_file, (self.base_url + "\n").encode(), private=True)
            except OSError as exc:
                self._server.close()
                what = f"the model-API proxy's base URL file {self._url_file}"
                raise UsageError(f"{what}: cannot write it ({exc.strerror or exc})") from None

    @property
    def address(self) -> tuple[str, int]:
        """Where the proxy listens (the port it got, when ``listen`` asked for port 0)."""
        return self._server.address

    def notices(self) -> list[Notice]:
        """The base URL, for an agent started after the proxy; a warning when it listens
        beyond this machine."""
        written = f" (also in {self._url_file})" if self._url_file is not None else ""
        out = [Notice(f"model-API proxy: base URL {self.base_url}{written}")]
        host, _port = parse_listen(self.config.listen)
        if not is_loopback(host):
            out.append(
                Notice(
                    f"target.model_proxy.listen {self.config.listen} can be reached from beyond "
                    f"this machine ({UNSAFE_LISTEN} is set): whoever reaches it and holds the "
                    "base URL or the upstream key spends that key",
                    warning=True,
                )
            )
        return out

    @property
    def address_url(self) -> str:
        """The fixed base URL an agent started before the scan is given (it then carries the
        upstream's key): the address, and ``/v1`` for the OpenAI APIs (the Anthropic SDK adds
        ``/v1/messages`` to the bare address itself). Not :attr:`base_url`, whose token would
        make a report that names it differ from scan to scan."""
        host, port = self.address
        suffix = "" if self.api.name == "anthropic-messages" else "/v1"
        return f"http://{host}:{port}{suffix}"

    def close(self) -> None:
        """Stop at once: calls in flight are abandoned; the base URL file goes."""
        try:
            self._server.close()
            if self._url_file is not None:
                self._url_file.unlink(missing_ok=True)
        finally:
            self.client.close()

    # -- conversations -------------------------------------------------------------------
    def open(self, sandbox: Sandbox, usage: Usage) -> ProxyConversation:
        conversation = ProxyConversation(self, sandbox, usage)
        with self._lock:
            while conversation.token in self._live:  # 48 random bits: never, but never twice
                conversation.token = new_token()
            self._live[conversation.token] = conversation
            self._stats.conversations += 1
        return conversation

    def retire(self, conversation: ProxyConversation) -> None:
        with self._lock:
            self._live.pop(conversation.token, None)

    def attribute(self, tokens: set[str], last_user: str | None) -> ProxyConversation | None:
        """The conversation a model call belongs to by the rule above, or None."""
        with self._lock:
            owners = {id(c): c for t in tokens if (c := self._live.get(t)) is not None}
            if owners or tokens:
                return next(iter(owners.values())) if len(owners) == 1 else None
            if not last_user:
                return None
            waiting = [
                c
                for c in self._live.values()
                if c.waiting_for is not None and c.waiting_for.strip() in last_user
            ]
            if len(waiting) != 1:
                return None
            self._stats.attributed_by_words += 1
            return waiting[0]

    # -- counting ------------------------------------------------------------------------
    def count(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self._stats, name, getattr(self._stats, name) + value)

    def unlisted(self, name: str) -> None:
        with self._lock:
            self._stats.unlisted.add(name)

    def summary(self) -> ProxySummary | None:
        """The report's ``proxy`` section; None when no conversation was opened."""
        with self._lock:
            stats = self._stats
            if not stats.conversations:
                return None
            return ProxySummary(
                api=self.config.api,
                safe=self.config.safe,
                conversations=stats.conversations,
                model_calls=stats.model_calls,
                attributed=stats.attributed,
                attributed_by_words=stats.attributed_by_words,
                unattributed=stats.unattributed,
                tool_calls=stats.tool_calls,
                stopped=stats.stopped,
                results_replaced=stats.results_replaced,
                descriptions_replaced=stats.descriptions_replaced,
                unlisted_tools=sorted(stats.unlisted),
                failed=stats.failed,
                refused=ProxyRefusals(**self._server.counts.snapshot()),
            )

    # -- one request ---------------------------------------------------------------------
    async def handle(self, request: Request) -> Reply:
        """Answer one forwarded request of the agent (on the server's loop)."""
        forward = request.forward
        out = {k: v for k, v in request.head.headers.items() if k not in _HOP}
        if forward.keyed and self._key_headers:
            out = {k: v for k, v in out.items() if k not in _KEY_HEADERS}
            out.update(self._key_headers)
        out["accept-encoding"] = "identity"
        raw = request.body
        if not forward.model_call:  # the model list an SDK reads on start-up: passed on
            return await self._pass(request.head.method, forward.url, raw, out)
        self.count(model_calls=1)
        try:
            body, by_orjson = parse_bounded(raw)
        except ValueError:
            body, by_orjson = None, False
        if not isinstance(body, dict):
            self.count(unattributed=1)
            return await self._pass("POST", forward.url, raw, out)
        tokens: set[str] = set()
        strip_marks(body, tokens)
        users = self.api.user_texts(body)
        conversation = self.attribute(tokens, users[-1] if users else None)
        if conversation is None:
            self.count(unattributed=1)
            clean = dumps_parsed(body, by_orjson=by_orjson) if tokens else raw
            return await self._pass("POST", forward.url, clean, out)
        self.count(attributed=1)
        return await conversation.exchange(body, forward.url, out, by_orjson=by_orjson)

    async def _pass(self, method: str, url: str, raw: bytes, headers: dict[str, str]) -> Reply:
        try:
            answer = await self.client.forward(method, url, body=raw, headers=headers)
            return self.passed(answer)
        except TransportError as exc:
            return self.failure(exc.reason)

    def passed(self, answer: Forwarded) -> Reply:
        """The upstream's answer as the agent gets it: status, body, the headers it needs."""
        lowered = {k.lower(): v for k, v in answer.headers.items()}
        out = {"Content-Type": lowered.get("content-type", "application/json")}
        out.update({k: lowered[k] for k in _KEEP if k in lowered})
        return answer.status, out, answer.body

    def failure(self, reason: str) -> Reply:
        """The upstream gave no answer probegate could read: a 502 in the API's error shape,
        which the agent's SDK retries like any 5xx."""
        message = f"probegate model-API proxy: no usable answer from the upstream ({reason})"
        return 502, {"Content-Type": "application/json"}, self.error_body(502, message)

    def error_body(self, status: int, message: str) -> bytes:
        """An error in the API's own shape, so the agent's SDK reports it as the API's."""
        kind = _ERROR_TYPES.get(status, "api_error")
        error = {"type": kind, "message": message}
        anthropic = self.api.name == "anthropic-messages"
        data = {"type": "error", "error": error} if anthropic else {"error": error}
        return json.dumps(data).encode("utf-8")

    def read(self, data: Any) -> Completion:
        """The model's reply as the client decoded it (a stream's events, else JSON); a shape
        the API cannot read is a MalformedReply, which the client retries like a 5xx."""
        return self.api.read(data, self.client.excerpt)


__all__ = ["ModelProxy", "ProxyConversation", "unmarked"]
