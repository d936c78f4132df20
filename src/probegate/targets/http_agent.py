"""The ``http`` target: an agent deployed behind its own HTTP API.

Such an agent runs its own loop. When its request template mentions ``{{mcp_url}}`` it takes
its tools from probegate's MCP server (targets/mcp_server.py): each conversation is told its own
endpoint, the sandbox answers every call and records it as the agent's action, and every probe
reaches it (``ToolDelivery.MCP``). Otherwise it runs its own tools, and probegate sees only what
the API returns: the reply text and, when the config names where they are, the tool calls.
Without them every tool-call oracle says "cannot tell" (unjudged), never "resisted", and probes
that attack through the sandbox's fixtures (documents, tool results, memory) cannot reach it;
the runner marks those unjudged with that reason (``ToolDelivery.OWN``). With
``target.model_proxy`` the agent keeps its own tools and points its model base URL at
probegate's model-API proxy, which sees every model call and tool call of a conversation and
delivers every probe through the agent's own tools (``ToolDelivery.PROXY``,
targets/model_proxy/). An agent that calls other agents over A2A is told where probegate's
peers are with ``{{a2a_url}}`` / ``{{a2a_url.NAME}}`` (targets/a2a_peers/): every message it
sends them is recorded as a call of the peer's delegation tool.

The attack text goes into the request by walking the body template as data and replacing the
placeholders inside string values, in one pass. The JSON text is never built by string
formatting, so an attack containing quotes, braces or another ``{{placeholder}}`` cannot change
the structure of the request (no template injection).
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from probegate.errors import UsageError
from probegate.models.causes import Cause
from probegate.models.report import TargetInfo
from probegate.models.sections import KindSection
from probegate.models.tools import ToolSpec
from probegate.models.transcript import ToolCall, Turn
from probegate.targets.a2a_peers import PeerConfig, PeerEndpoint, PeerHost, named_in, peers_for
from probegate.targets.base import (
    AgentConfig,
    Notice,
    ReplayInput,
    TargetSettings,
    TargetSpec,
    TargetTraits,
    ToolDelivery,
    env_value,
    header_secret_env,
    present,
)
from probegate.targets.configured import http_client, script_text, target_info, tool_specs
from probegate.targets.mcp_server import McpEndpoint, McpHost, require_sdk
from probegate.targets.model_proxy import (
    PROXY_TRAITS,
    ModelProxy,
    ModelProxyConfig,
    ProxyConversation,
    unmarked,
)
from probegate.targets.sandbox import Sandbox
from probegate.targets.wire import (
    as_text,
    calls_reported,
    peer_message,
    reply_turn,
    reported_tool_calls,
    with_reported,
)
from probegate.transport.http import HttpClient
from probegate.transport.http_parts import public_url
from probegate.transport.limiter import RequestLimiter
from probegate.transport.pricing import cost_usd
from probegate.transport.usage import UNREADABLE, MalformedReply, TransportError, Usage

PLACEHOLDER = re.compile(
    r"\{\{\s*(input|session_id|messages|mcp_url|a2a_url(?:\.[A-Za-z0-9_-]+)?)\s*\}\}"
)
# Placeholders allowed in the URL and the headers: values probegate makes, never attack text.
ADDRESS_PLACEHOLDER = re.compile(r"\{\{\s*(session_id|mcp_url|a2a_url(?:\.[A-Za-z0-9_-]+)?)\s*\}\}")
MCP_URL = re.compile(r"\{\{\s*mcp_url\s*\}\}")
DEFAULT_BODY: dict[str, Any] = {"input": "{{input}}", "session_id": "{{session_id}}"}


def render_template(template: Any, values: dict[str, Any]) -> Any:
    """Substitute placeholders in the string leaves of a JSON-like template.

    A leaf that is exactly one placeholder takes the value as is (``{{messages}}`` becomes a
    list); a placeholder inside a longer string is replaced by text. Substitution is one pass
    over the template, so placeholders inside the substituted text stay literal.
    """
    if isinstance(template, dict):
        return {key: render_template(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [render_template(item, values) for item in template]
    if isinstance(template, str):
        whole = PLACEHOLDER.fullmatch(template)
        if whole is not None:
            return values[whole.group(1)]

        def text(match: re.Match[str]) -> str:
            value = values[match.group(1)]
            return value if isinstance(value, str) else json.dumps(value)

        return PLACEHOLDER.sub(text, template)
    return template


def mentions(template: Any, pattern: re.Pattern[str]) -> bool:
    """Whether any string leaf of a JSON-like template contains ``pattern``."""
    if isinstance(template, dict):
        return any(mentions(value, pattern) for value in template.values())
    if isinstance(template, list):
        return any(mentions(item, pattern) for item in template)
    return isinstance(template, str) and pattern.search(template) is not None


def render_address(text: str, values: dict[str, str], *, in_url: bool) -> str:
    """``{{session_id}}`` and ``{{mcp_url}}`` in the URL (percent-encoded) or a header value."""

    def value(match: re.Match[str]) -> str:
        found = values[match.group(1)]
        return quote(found, safe="") if in_url else found

    return ADDRESS_PLACEHOLDER.sub(value, text)


def json_path(data: Any, path: str) -> Any:
    """Follow ``choices.0.message.content`` (keys and list indices) into a JSON value."""
    node = data
    for part in path.removeprefix("$").strip(".").split("."):
        if not part:
            continue
        if isinstance(node, list) and part.lstrip("-").isdigit():
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node[part]
        else:
            raise KeyError(part)
    return node


def _tokens(data: Any) -> tuple[int, int]:
    if not isinstance(data, dict):
        return 0, 0
    usage = data.get("usage") or data.get("token_usage")
    if not isinstance(usage, dict):
        return 0, 0
    out = []
    for key in ("prompt_tokens", "completion_tokens"):
        value = usage.get(key)
        out.append(value if isinstance(value, int) and value >= 0 else 0)
    return out[0], out[1]


class HttpApi(BaseModel):
    """The ``target.http`` section: how to talk to an agent behind its own HTTP API."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["POST", "PUT", "GET"] = "POST"
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    headers_env: dict[str, str] = Field(default_factory=dict)
    body: Any = None
    response_text: str = "output"
    response_tool_calls: str | None = None


class HttpConfig(AgentConfig):
    """``kind: http``: the agent's API (``http``), or just its URL (``endpoint``)."""

    kind: Literal["http"] = "http"
    endpoint: str | None = None
    # The variable holding a bearer token (``--api-key-env``); any other header: http.headers_env.
    api_key_env: str | None = None
    http: HttpApi | None = None
    # The agent's model calls pass through probegate (docs/targets.md, "The model-API proxy").
    model_proxy: ModelProxyConfig | None = None
    # The agents the agent calls over A2A, served by probegate ({{a2a_url}}).
    peers: list[PeerConfig] = Field(default_factory=list)

    def secret_env(self) -> dict[str, str]:
        own = {"API_KEY": self.api_key_env} if self.api_key_env else {}
        headers = header_secret_env(self.http.headers_env) if self.http is not None else {}
        proxy = self.model_proxy.upstream_api_key_env if self.model_proxy is not None else None
        upstream = {"UPSTREAM_API_KEY": proxy} if proxy else {}
        return {**headers, **upstream, **own}

    def secret_urls(self) -> list[str]:
        urls = [self.endpoint, self.http.url if self.http is not None else None]
        if self.model_proxy is not None:
            urls.append(self.model_proxy.upstream)
        return [url for url in urls if url]

    def without_secrets(self) -> HttpConfig:
        update: dict[str, Any] = {"api_key_env": None}
        if self.http is not None:
            update["http"] = self.http.model_copy(update={"headers_env": {}})
        if self.model_proxy is not None:
            update["model_proxy"] = self.model_proxy.model_copy(
                update={"upstream_api_key_env": None}
            )
        return self.model_copy(update=update)


class HttpTarget:
    """An agent behind its own API, described by the config's ``target.http`` section."""

    def __init__(
        self, config: HttpConfig, settings: TargetSettings, client: HttpClient | None = None
    ) -> None:
        http = config.http or HttpApi()
        url = http.url or config.endpoint
        if not url:
            raise UsageError("the http target needs target.http.url (or --endpoint)")
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"target.http.url {public_url(url)!r} is not an http(s) URL")
        self.config = config
        self.settings = settings
        self.http = http
        self.url = url
        self.body = DEFAULT_BODY if http.body is None else http.body
        if http.method == "GET" and not isinstance(self.body, dict):
            raise UsageError("target.http.body must be a mapping for GET (it is sent as query)")
        self.client, self.headers = http_client(
            settings,
            url,
            headers=http.headers,
            headers_env=http.headers_env,
            what="target.http.headers_env",
            client=client,
        )
        if config.api_key_env:
            key = env_value(config.api_key_env, "target.api_key_env")
            self.client.add_secret(key)
            self.headers.setdefault("Authorization", f"Bearer {key}")
        # The agent calls other agents through probegate's A2A peers when told where they are.
        peers = peers_for(config.peers, named_in([url, http.headers, self.body]), "target.http")
        self.peers = PeerHost(peers, settings.a2a_listen, settings.a2a_advertise) if peers else None
        self._tools = tool_specs(config) + (self.peers.tools() if self.peers else [])
        # The agent takes its tools from probegate's MCP server when it is told where it is.
        self.uses_mcp = mentions([url, http.headers, self.body], MCP_URL)
        if self.uses_mcp:
            require_sdk("target.http mentions {{mcp_url}}: the agent")
        if self.uses_mcp and config.model_proxy is not None:
            raise UsageError(
                "target.model_proxy and {{mcp_url}} both bring the probe to the agent's tools: "
                "use one (the proxy for an agent that keeps its own tools)"
            )
        self.mcp = McpHost(settings.mcp_listen, settings.mcp_advertise)
        # A fresh nonce per scan: an agent that keeps state per session id must never see a
        # conversation of an earlier scan (or of the run before a resume) again.
        self._nonce = secrets.token_hex(4)
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        # Last: it listens from here until close().
        self.proxy = (
            ModelProxy(config.model_proxy, settings, self._tools, config.prices)
            if config.model_proxy is not None
            else None
        )

    def traits(self) -> TargetTraits:
        # Through MCP the sandbox records every call; an agent that runs its own tools shows its
        # calls only where the config says they are, unless its model calls pass the proxy.
        if self.proxy is not None:
            return PROXY_TRAITS
        if self.uses_mcp:
            return TargetTraits.of(ToolDelivery.MCP, tool_calls_visible=True, system_canaries=False)
        if self.peers is not None and not self.config.tools:
            # Its only tools are its peers, and every message to them passes probegate.
            return TargetTraits.of(ToolDelivery.A2A, tool_calls_visible=True, system_canaries=False)
        return TargetTraits.of(
            ToolDelivery.OWN,
            tool_calls_visible=self.http.response_tool_calls is not None,
            system_canaries=False,
        )

    def info(self) -> TargetInfo:
        return target_info(
            self.settings, kind="http", ref=f"http:{public_url(self.url)}", tools=self._tools
        )

    def tools(self) -> list[ToolSpec]:
        return list(self._tools)

    def report_sections(self) -> list[KindSection]:
        tools = self.proxy.summary() if self.proxy is not None else self.mcp.summary()
        return present(tools, self.peers.summary() if self.peers is not None else None)

    def notices(self) -> list[Notice]:
        return self.proxy.notices() if self.proxy is not None else []

    def new_session_id(self) -> str:
        with self._lock:
            return f"pg-{self._nonce}-{next(self._counter)}"

    def open_session(self, sandbox: Sandbox, limiter: RequestLimiter) -> HttpSession:
        endpoint = self.mcp.open(sandbox) if self.uses_mcp else None
        session = HttpSession(self, sandbox, limiter, self.new_session_id(), endpoint)
        if self.peers is not None:
            session.peers = self.peers.open(sandbox)
        if self.proxy is not None:
            session.conversation = self.proxy.open(sandbox, session.usage)
        return session

    def close(self) -> None:
        try:
            self.mcp.close()
            if self.peers is not None:
                self.peers.close()
            if self.proxy is not None:
                self.proxy.close()
        finally:
            self.client.close()


@dataclass
class HttpSession:
    target: HttpTarget
    sandbox: Sandbox
    limiter: RequestLimiter
    session_id: str
    endpoint: McpEndpoint | None = None
    usage: Usage = field(default_factory=Usage)
    history: list[dict[str, str]] = field(default_factory=list)
    # This conversation's share of the model-API proxy, when the target has one.
    conversation: ProxyConversation | None = None
    # This conversation's A2A peers, when the agent calls other agents through probegate.
    peers: PeerEndpoint | None = None
    # How many of the sandbox's recorded calls are not this session's to report: those of
    # earlier sessions of the attempt (memory outlives a conversation) and of earlier turns.
    _claimed: int = 0
    _refused: int = 0  # of the sandbox's refused calls (models/bounds.py), likewise

    def __post_init__(self) -> None:
        self._claimed = len(self.sandbox.calls)
        self._refused = self.sandbox.over

    def send(self, message: Turn) -> Turn:
        conversation = self.conversation
        if conversation is None:
            reply, calls, made = self._send(peer_message(message))
            return reply_turn(reply, calls, made=made)
        # The message carries the conversation's mark, so the proxy knows its model calls.
        text = conversation.begin(peer_message(message))
        try:
            reply, calls, made = self._send(text)
        finally:
            end = conversation.end(self.limiter)
        fault = end.fault(conversation.proxy.address_url)
        if fault is not None:
            raise fault
        # What the model said in a reply safe mode stopped is its reply too (evidence).
        joined = "\n".join(filter(None, [reply, *end.stopped]))
        return reply_turn(joined, calls, made=made + end.over)

    def _send(self, text: str) -> tuple[str, list[ToolCall], int]:
        """The agent's reply to one message: its text, its tool calls, how many it made."""
        self.history.append({"role": "user", "content": text})
        address = {
            "session_id": self.session_id,
            "mcp_url": self.endpoint.url if self.endpoint is not None else "",
        }
        if self.peers is not None:
            address["a2a_url"] = self.peers.url()
            address.update({f"a2a_url.{n}": u for n, u in self.peers.urls().items()})
        values: dict[str, Any] = {"input": text, "messages": list(self.history), **address}
        target = self.target
        url = render_address(target.url, address, in_url=True)
        headers = {k: render_address(v, address, in_url=False) for k, v in target.headers.items()}
        body = render_template(target.body, values)
        get = target.http.method == "GET"
        data, reply = target.client.request_json(
            target.http.method,
            url,
            body=None if get else body,
            params={str(k): as_text(v) for k, v in body.items()} if get else None,
            headers=headers,
            limiter=self.limiter,
            usage=self.usage,
            parse=self._read_reply,
        )
        calls: list[ToolCall] = []
        made = 0
        if target.http.response_tool_calls is not None:
            try:
                items = json_path(data, target.http.response_tool_calls)
            except (KeyError, IndexError, TypeError):
                items = None  # an agent that made no tool call often leaves the field out
            calls = reported_tool_calls(items, {t.name for t in target.tools()})
            made = calls_reported(items) - len(calls)  # reported beyond what was read
        if self.endpoint is not None and self.endpoint.undelivered is not None:
            # A call may be missing from the sandbox: what it recorded is not what the agent did.
            raise TransportError(
                f"probegate's MCP server: {self.endpoint.undelivered}", cause=Cause.TOOL_SERVER
            )
        if self.peers is not None and self.peers.undelivered is not None:
            raise TransportError(
                f"probegate's A2A peers: {self.peers.undelivered}", cause=Cause.TOOL_SERVER
            )
        if self.endpoint is not None or self.conversation is not None or self.peers is not None:
            # What the agent did through the MCP server (or its model asked for through the
            # proxy) since the last reply is this turn's.
            recorded = self.sandbox.calls_since(self._claimed)
            self._claimed += len(recorded)
            made += self.sandbox.over - self._refused  # calls past what the sandbox answers
            self._refused = self.sandbox.over
            calls = with_reported(recorded, calls)
        prompt_tokens, completion_tokens = _tokens(data)
        cost = cost_usd(target.config.prices, target.config.model, prompt_tokens, completion_tokens)
        self.usage.prompt_tokens += prompt_tokens
        self.usage.completion_tokens += completion_tokens
        self.usage.cost_usd += cost
        self.limiter.record_usage(prompt_tokens, completion_tokens, cost)
        self.history.append({"role": "assistant", "content": reply})
        return reply, calls, made + len(calls)

    def _read_reply(self, data: Any) -> tuple[Any, str]:
        """The reply and its text; a reply without the configured text field is a transient
        fault (retried like a 5xx): the agent's evidence is missing, not absent."""
        target = self.target
        try:
            return data, unmarked(as_text(json_path(data, target.http.response_text)))
        except (KeyError, IndexError, TypeError):
            raise MalformedReply(
                f"{UNREADABLE}: HTTP 200 with no {target.http.response_text!r} "
                f"(target.http.response_text): {target.client.excerpt(json.dumps(data))}"
            ) from None

    def close(self) -> None:
        if self.endpoint is not None:
            self.endpoint.close()
        if self.peers is not None:
            self.peers.close()
        if self.conversation is not None:
            self.conversation.close()


_REPLAY_BODY = r'''
import re
import urllib.parse

PLACEHOLDER = re.compile(r"\{\{\s*(input|session_id|messages)\s*\}\}")


def render(template, values):
    """The body template with the placeholders filled in, as probegate fills them."""
    if isinstance(template, dict):
        return {key: render(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [render(item, values) for item in template]
    if isinstance(template, str):
        whole = PLACEHOLDER.fullmatch(template)
        if whole:
            return values[whole.group(1)]
        return PLACEHOLDER.sub(
            lambda m: values[m.group(1)] if isinstance(values[m.group(1)], str)
            else json.dumps(values[m.group(1)]),
            template,
        )
    return template


def follow(data, path):
    for part in path.removeprefix("$").strip(".").split("."):
        if part:
            data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def main():
    session, session_id, history = None, "", []
    for turn in DATA["turns"]:
        if turn["session"] != session:  # a new conversation, as probegate started one
            session, session_id, history = turn["session"], f"replay-{turn['session']}", []
        history.append({"role": "user", "content": turn["content"]})
        values = {"input": turn["content"], "session_id": session_id, "messages": list(history)}
        url = DATA["url"].replace("{{session_id}}", urllib.parse.quote(session_id, safe=""))
        body = render(DATA["body"], values)
        if DATA["method"] == "GET":
            query = {k: v if isinstance(v, str) else json.dumps(v) for k, v in body.items()}
            url, body = url + ("&" if "?" in url else "?") + urllib.parse.urlencode(query), None
        print(f"> {shown(turn['content'])}")
        reply = send(DATA["method"], url, body)
        text = follow(reply, DATA["response_text"])
        print(f"< {shown(text)}")
        if DATA["response_tool_calls"]:
            try:
                calls = follow(reply, DATA["response_tool_calls"])
                print(f"< tool calls: {shown(calls)}")
            except (KeyError, IndexError, TypeError):
                pass
        history.append({"role": "assistant", "content": str(text)})
'''


def replay_script(config: HttpConfig, given: ReplayInput) -> str:
    """The attempt's messages sent to the agent's own API, one request per message."""
    http = config.http or HttpApi()
    data = {
        "url": public_url(http.url or config.endpoint or ""),
        "method": http.method,
        "headers": http.headers,
        "headers_env": http.headers_env,
        "api_key_env": config.api_key_env,
        "timeout": given.settings.timeout,
        "body": DEFAULT_BODY if http.body is None else http.body,
        "response_text": http.response_text,
        "response_tool_calls": http.response_tool_calls,
        "turns": [
            {"content": peer_message(t), "session": t.session}
            for t in given.transcript.turns
            if t.role != "assistant"
        ],
        "evidence": given.evidence,
    }
    return script_text(given, "replay.py", data, _REPLAY_BODY, config.secret_variables())


SPEC = TargetSpec(
    kinds=("http",),
    config=HttpConfig,
    summary="an agent behind its own HTTP API",
    build=HttpTarget,
    endpoint=True,
    replay_script=replay_script,
)
