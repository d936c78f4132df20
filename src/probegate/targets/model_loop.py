"""The agent loop probegate runs itself against a model API, shared by the kinds that do so.

``kind: openai`` (Chat Completions, or Responses with ``api: responses``) and
``kind: anthropic`` (Messages) are one loop over three wire shapes
(:mod:`probegate.transport.model_apis`). probegate owns everything around the model here: the
system prompt (the user's, with canaries planted at its end), the tool definitions (from the
config; their descriptions pass through the sandbox so a probe can poison them), and the loop
itself. Every tool call the model makes is answered by the
:class:`~probegate.targets.sandbox.Sandbox`, so attacks arrive through the channels real
agents read (tool results, fetched documents, memory, peer agents) and the verdict rests on the
model's *next tool call*, not on what it says it would do.

What real models send back is taken as it comes: several tool calls in one reply (Anthropic's
parallel ``tool_use`` blocks are answered together, in one message), tool calls with no text,
names of tools that were never declared (answered with an error, marked ``declared=False``),
arguments that are not JSON (kept verbatim under ``_raw`` so an oracle can still read them,
answered with an error), replies without usage, and streamed replies (``params: {stream:
true}``; read whole before the loop acts). What no real model sends is bounded
(models/bounds.py): a turn answers at most ``TOOL_CALLS_MAX`` tool calls, and the rest are
recorded as cut rather than answered and sent back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from probegate.errors import UsageError
from probegate.files import MAX_INPUT_BYTES, read_text
from probegate.models.bounds import TOOL_CALLS_MAX, calls_cut
from probegate.models.canaries import planted_text
from probegate.models.report import TargetInfo
from probegate.models.sections import KindSection
from probegate.models.tools import ToolSpec
from probegate.models.transcript import ToolCall, Turn
from probegate.targets.base import (
    AgentConfig,
    Notice,
    ReplayInput,
    TargetSettings,
    TargetTraits,
    ToolDelivery,
    env_value,
    header_secret_env,
)
from probegate.targets.configured import (
    config_file,
    http_client,
    script_text,
    target_info,
    tool_specs,
)
from probegate.targets.sandbox import Sandbox
from probegate.targets.wire import parse_arguments, peer_message, tool_reply
from probegate.transport.http import HttpClient
from probegate.transport.http_parts import public_url
from probegate.transport.limiter import RequestLimiter
from probegate.transport.model_apis import Completion, ModelApi, RawToolCall, ToolDecl
from probegate.transport.pricing import cost_usd
from probegate.transport.usage import Usage

# probegate runs the loop, answers every call and writes the system prompt.
TRAITS = TargetTraits.of(ToolDelivery.AGENT_LOOP, tool_calls_visible=True, system_canaries=True)
DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant. Use the available tools when they help."


class ModelConfig(AgentConfig):
    """What a kind that runs the loop against a model API reads (docs/targets.md)."""

    endpoint: str | None = None
    api_key_env: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    # header -> name of the environment variable holding its (secret) value
    headers_env: dict[str, str] = Field(default_factory=dict)
    # extra request body fields (temperature, seed, stream, ...)
    params: dict[str, Any] = Field(default_factory=dict)
    system_prompt: str | None = None

    def secret_env(self) -> dict[str, str]:
        own = {"API_KEY": self.api_key_env} if self.api_key_env else {}
        return {**header_secret_env(self.headers_env), **own}

    def secret_urls(self) -> list[str]:
        return [self.endpoint] if self.endpoint else []

    def without_secrets(self) -> Any:
        return self.model_copy(update={"api_key_env": None, "headers_env": {}})

    def request_params(self) -> dict[str, Any]:
        """The body fields the kind adds to every request (``params`` first, then its own)."""
        return dict(self.params)


def prompt_path(config: ModelConfig, settings: TargetSettings) -> Path | None:
    if not config.system_prompt:
        return None
    return config_file(settings, config.system_prompt, "target.system_prompt")


def system_prompt(config: ModelConfig, settings: TargetSettings) -> str:
    """The user's system prompt (the file's text), before probegate adds the canaries."""
    path = prompt_path(config, settings)
    if path is None:
        return DEFAULT_SYSTEM_PROMPT
    return read_text(path, what="system prompt", max_bytes=MAX_INPUT_BYTES).strip()


def system_message(prompt: str, sandbox: Sandbox) -> str:
    """The system prompt a session sends: the user's prompt plus this attempt's secrets."""
    return f"{prompt}\n\n{planted_text(sandbox.canaries)}"


class ModelTarget:
    """A model API endpoint plus the config's system prompt and tools, run as an agent."""

    def __init__(
        self,
        config: ModelConfig,
        settings: TargetSettings,
        *,
        api: ModelApi,
        kind: str,
        client: HttpClient | None = None,
    ) -> None:
        if not config.endpoint:
            raise UsageError(f"the {kind} target needs an endpoint (target.endpoint or --endpoint)")
        if not config.endpoint.startswith(("http://", "https://")):
            raise UsageError(f"endpoint {public_url(config.endpoint)!r} is not an http(s) URL")
        if not config.model:
            raise UsageError(f"the {kind} target needs a model (target.model or --model)")
        self.config = config
        self.settings = settings
        self.api = api
        self.kind = kind
        self.model = config.model
        self.url = api.url(config.endpoint)
        self.max_turns = config.max_turns
        self.params = config.request_params()
        self.stream = self.params.get("stream") is True
        self.client, self.headers = http_client(
            settings,
            config.endpoint,
            headers=config.headers,
            headers_env=config.headers_env,
            what="target.headers_env",
            client=client,
        )
        key = None
        if config.api_key_env:
            key = env_value(config.api_key_env, "target.api_key_env")
            self.client.add_secret(key)
        # The API's own headers (anthropic-version, the key's header) unless the config sets one.
        for name, value in api.headers(key).items():
            self.headers.setdefault(name, value)
        if self.stream:
            self.headers["Accept"] = "text/event-stream"
        self.prompt_path = prompt_path(config, settings)
        self.system_prompt = system_prompt(config, settings)
        self._tools = tool_specs(config)

    def info(self) -> TargetInfo:
        return target_info(
            self.settings,
            kind=self.kind,
            ref=f"{self.kind}:{self.model}@{public_url(self.url)}",
            tools=self._tools,
            prompt=self.prompt_path,
        )

    def tools(self) -> list[ToolSpec]:
        return list(self._tools)

    def traits(self) -> TargetTraits:
        return TRAITS

    def open_session(self, sandbox: Sandbox, limiter: RequestLimiter) -> ModelSession:
        return ModelSession(self, sandbox, limiter)

    def report_sections(self) -> list[KindSection]:
        return []

    def notices(self) -> list[Notice]:
        return []

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return cost_usd(self.config.prices, self.model, prompt_tokens, completion_tokens)

    def close(self) -> None:
        self.client.close()


@dataclass
class ModelSession:
    """One conversation: the history the model sees, and the loop that drives it."""

    target: ModelTarget
    sandbox: Sandbox
    limiter: RequestLimiter
    usage: Usage = field(default_factory=Usage)
    history: list[Any] = field(default_factory=list)
    _system: str = ""
    _tools: list[ToolDecl] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._system = system_message(self.target.system_prompt, self.sandbox)
        # The attempt's tools are the sandbox's: the config's, or those of the environment the
        # attempt brings (an AgentDojo suite's, benchmarks/agentdojo/).
        self._tools = [
            ToolDecl(spec.name, self.sandbox.tool_description(spec), spec.parameters)
            for spec in self.sandbox.tools.values()
        ]

    def send(self, message: Turn) -> Turn:
        api = self.target.api
        self.history += api.user_items(peer_message(message))
        texts: list[str] = []
        calls: list[ToolCall] = []
        made = 0
        for _ in range(self.target.max_turns):
            reply = self._complete()
            self.sandbox.model_reply()
            if reply.text:
                texts.append(reply.text)
            made += reply.calls_made
            answered = reply.tool_calls[: TOOL_CALLS_MAX - len(calls)]
            self.history += api.reply_items(reply, answered)
            if not answered:
                break
            results: list[tuple[RawToolCall, str, bool]] = []
            for raw in answered:
                call = self._answer(raw)
                calls.append(call)
                results.append((raw, tool_reply(call), call.error is not None))
            self.history += api.result_items(results)
        cut = calls_cut(made, len(calls))
        return Turn(
            role="assistant",
            content="\n".join(texts),
            tool_calls=calls,
            cuts=[cut] if cut is not None else [],
        )

    def _complete(self) -> Completion:
        target = self.target
        body = target.api.request(
            model=target.model,
            system=self._system,
            history=self.history,
            tools=self._tools,
            params=target.params,
        )
        send = target.client.request_events if target.stream else target.client.request_json
        excerpt = target.client.excerpt
        # A 200 the API cannot read is a MalformedReply, retried like a 5xx (docs/targets.md,
        # "Transient faults"): the model's reply is missing, not empty.
        reply: Completion = send(
            "POST",
            target.url,
            body=body,
            headers=target.headers,
            limiter=self.limiter,
            usage=self.usage,
            parse=lambda data: target.api.read(data, excerpt),
        )
        cost = target.cost(reply.prompt_tokens, reply.completion_tokens)
        self.usage.prompt_tokens += reply.prompt_tokens
        self.usage.completion_tokens += reply.completion_tokens
        self.usage.cost_usd += cost
        self.limiter.record_usage(reply.prompt_tokens, reply.completion_tokens, cost)
        return reply

    def _answer(self, raw: RawToolCall) -> ToolCall:
        arguments, problem = parse_arguments(raw.arguments)
        if problem is not None or not raw.name:
            return ToolCall(
                id=raw.id,
                name=raw.name,
                arguments=arguments,
                error=problem or "tool call without a tool name",
                declared=raw.name in self.sandbox.tools,
            )
        return self.sandbox.call(raw.name, arguments).model_copy(update={"id": raw.id})

    def close(self) -> None:
        return None


# --------------------------------------------------------------------------- replay scripts

_REPLAY_BODY = """

def user_items(text):
    return [{"role": "user", "content": text}]


def request(history):
    body = dict(DATA["params"], model=DATA["model"])
    if DATA["api"] == "openai-chat":
        body["messages"] = [{"role": "system", "content": DATA["system"]}, *history]
        if DATA["tools"]:
            body["tools"] = [
                {"type": "function", "function": {k: t[k] for k in ("name", "description")}
                 | {"parameters": t["parameters"]}}
                for t in DATA["tools"]
            ]
    elif DATA["api"] == "openai-responses":
        body["instructions"], body["input"] = DATA["system"], list(history)
        if DATA["tools"]:
            body["tools"] = [dict(t, type="function") for t in DATA["tools"]]
    else:
        body["system"], body["messages"] = DATA["system"], list(history)
        if DATA["tools"]:
            body["tools"] = [
                {"name": t["name"], "description": t["description"],
                 "input_schema": t["parameters"]}
                for t in DATA["tools"]
            ]
    return body


def read(reply):
    \"\"\"(text, [(id, name, arguments)], what the reply adds to the history).\"\"\"
    if DATA["api"] == "openai-chat":
        message = reply["choices"][0]["message"]
        calls = [
            (c.get("id", ""), c["function"]["name"], c["function"].get("arguments"))
            for c in message.get("tool_calls") or []
        ]
        if not calls:
            return message.get("content") or "", [], [
                {"role": "assistant", "content": message.get("content") or ""}
            ]
        item = {"role": "assistant", "content": message.get("content"),
                "tool_calls": message["tool_calls"]}
        return message.get("content") or "", calls, [item]
    if DATA["api"] == "openai-responses":
        text, calls, items = "", [], []
        for item in reply["output"]:
            if item.get("type") == "message":
                said = "".join(p.get("text", "") for p in item.get("content") or [])
                text += said
                items.append({"role": "assistant", "content": said})
            elif item.get("type") == "function_call":
                calls.append((item["call_id"], item["name"], item.get("arguments")))
                items.append({k: item[k] for k in ("type", "call_id", "name", "arguments")})
        return text, calls, items
    blocks = reply["content"]
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    calls = [(b["id"], b["name"], b.get("input")) for b in blocks if b.get("type") == "tool_use"]
    return text, calls, [{"role": "assistant", "content": blocks}] if blocks else []


def result_items(results):
    if DATA["api"] == "openai-chat":
        return [{"role": "tool", "tool_call_id": i, "content": a} for i, a in results]
    if DATA["api"] == "openai-responses":
        return [{"type": "function_call_output", "call_id": i, "output": a} for i, a in results]
    blocks = [{"type": "tool_result", "tool_use_id": i, "content": a} for i, a in results]
    return [{"role": "user", "content": blocks}]


def main():
    recorded = {name: list(results) for name, results in DATA["recorded_results"].items()}
    history, session = [], 1
    for turn in DATA["turns"]:
        if turn["session"] != session:  # a new conversation; the agent's memory is not replayed
            history, session = [], turn["session"]
        history += user_items(turn["content"])
        print(f"> {shown(turn['content'])}")
        for _ in range(DATA["max_turns"]):
            text, calls, items = read(send("POST", DATA["url"], request(history)))
            if text:
                print(f"< {shown(text)}")
            history += items
            if not calls:
                break
            results = []
            for call_id, name, arguments in calls:
                print(f"< tool call {shown(name)}({shown(arguments)})")
                # answered as probegate's sandbox answered it in the attempt
                queue = recorded.get(name) or []
                results.append((call_id, queue.pop(0) if queue else "ok"))
            history += result_items(results)
"""


def replay_script(config: ModelConfig, given: ReplayInput, api: ModelApi) -> str:
    """The attempt's conversation sent to the same endpoint, tool calls answered as recorded.

    The script asks for whole replies (no stream) in the same API the scan spoke.
    """
    recorded: dict[str, list[str]] = {}
    for turn in given.transcript.turns:
        for call in turn.tool_calls:
            answer = call.result if call.error is None else f"ERROR: {call.error}"
            recorded.setdefault(call.name, []).append(answer or "")
    unstreamed = config.request_params().items()
    params = {k: v for k, v in unstreamed if k not in ("stream", "stream_options")}
    own = api.headers(None)
    data = {
        "api": api.name,
        "url": public_url(api.url(config.endpoint or "")),
        "model": config.model,
        "params": params,
        "headers": {**own, **config.headers},
        "headers_env": config.headers_env,
        "api_key_env": config.api_key_env,
        # The header that holds the key as it is (x-api-key), else a bearer token.
        "key_header": next((h for h, v in api.headers("KEY").items() if v == "KEY"), None),
        "timeout": given.settings.timeout,
        "max_turns": config.max_turns,
        "system": f"{system_prompt(config, given.settings)}\n\n{planted_text(given.canaries)}",
        "tools": [
            {
                "name": spec.name,
                "description": given.tool_descriptions.get(spec.name, spec.description),
                "parameters": spec.parameters or {"type": "object", "properties": {}},
            }
            for spec in tool_specs(config)
        ],
        "turns": [
            {"content": peer_message(t), "session": t.session}
            for t in given.transcript.turns
            if t.role != "assistant"
        ],
        "recorded_results": recorded,
        "evidence": given.evidence,
    }
    return script_text(given, "replay.py", data, _REPLAY_BODY, config.secret_variables())
