"""``probegate init``'s files: a commented ``probegate.yml`` for one route, the workflow, and a
starter agent for the ``python`` route (docs/targets.md, "Starting a config").

Pure text builders: the command asks and writes, this module only says what the files hold.
Each template is checked against its kind's real config model by the tests, so a scaffolded
file is one ``probegate scan --dry-run`` accepts. Values the user typed (a tool's name and
description, an endpoint) are written as YAML double-quoted scalars, never pasted into the
text: a description holding ``#``, ``:`` or a line break stays one value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from probegate.models.taxonomy import Capability
from probegate.scaffold.capabilities import guess

# The routes ``init`` writes a config for, in the order ``--kind`` lists them.
KINDS = ("openai", "anthropic", "http", "python")
CONFIG_FILE = "probegate.yml"
WORKFLOW_FILE = ".github/workflows/probegate.yml"
# The python route's starter agent, written only when the module does not exist yet.
STARTER_AGENT = "agent:run"


@dataclass(frozen=True)
class Tool:
    """A tool of the agent as ``init`` writes it: capabilities guessed unless given."""

    name: str
    description: str = ""
    capabilities: tuple[Capability, ...] | None = None

    @property
    def chosen(self) -> tuple[Capability, ...]:
        if self.capabilities is not None:
            return self.capabilities
        return guess(self.name, self.description)


# The model APIs the proxy speaks (target.model_proxy.api), each with its defaults: the real
# API, the variable holding its key, and the variable its SDKs read the base URL from.
PROXY_APIS: dict[str, tuple[str, str, str]] = {
    "openai-chat": ("https://api.openai.com/v1", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "openai-responses": ("https://api.openai.com/v1", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic-messages": ("https://api.anthropic.com", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
}
PROXY_LISTEN = "127.0.0.1:8790"
# The routes that can put the agent's model calls behind the proxy: the agent runs its loop.
PROXY_KINDS = ("http", "python")


@dataclass(frozen=True)
class Proxy:
    """probegate's model-API proxy in front of an agent that calls its model itself
    (docs/scan-your-agent/proxy.md); ``None`` means the API's default."""

    api: str
    listen: str = PROXY_LISTEN
    upstream: str | None = None
    upstream_api_key_env: str | None = None

    @property
    def upstream_url(self) -> str:
        return self.upstream or PROXY_APIS[self.api][0]

    @property
    def key_env(self) -> str:
        return self.upstream_api_key_env or PROXY_APIS[self.api][1]

    @property
    def base_url_env(self) -> str:
        """The variable the API's SDKs read their base URL from."""
        return PROXY_APIS[self.api][2]

    @property
    def base_url(self) -> str:
        """The fixed base URL to give the agent: its SDK appends the API's path (``/v1`` is
        in an OpenAI base URL; the Anthropic SDK adds it itself)."""
        return f"http://{self.listen}" + ("" if self.api.startswith("anthropic") else "/v1")


@dataclass(frozen=True)
class Route:
    """What the config says about reaching the agent; ``None`` means the route's default.

    ``proxy``: the agent calls its model itself, through probegate's model-API proxy.
    ``start``: the command that starts an http agent on the CI runner, for the workflow."""

    kind: str
    endpoint: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    python: str | None = None
    tools: tuple[Tool, ...] = field(default_factory=tuple)
    proxy: Proxy | None = None
    start: str | None = None


DEFAULTS: dict[str, dict[str, str]] = {
    "openai": {
        "endpoint": "https://api.openai.com/v1",
        "model": "gpt-4o-mini",
        "api_key_env": "OPENAI_API_KEY",
    },
    "anthropic": {
        "endpoint": "https://api.anthropic.com",
        "model": "claude-sonnet-4-5",
        "api_key_env": "ANTHROPIC_API_KEY",
    },
    "http": {"endpoint": "http://127.0.0.1:8000/chat"},
    "python": {"python": STARTER_AGENT},
}


def default(route: Route, key: str) -> str | None:
    """The value the file gets for ``key``: the user's, else the route's default."""
    given = {
        "endpoint": route.endpoint,
        "model": route.model,
        "api_key_env": route.api_key_env,
        "python": route.python,
    }[key]
    return given if given is not None else DEFAULTS[route.kind].get(key)


def scalar(text: str) -> str:
    """``text`` as one YAML scalar: plain when it reads back as itself (a name, a URL), else
    double-quoted and escaped. What the user typed is never pasted in as YAML."""
    if _PLAIN.fullmatch(text) and yaml.safe_load(text) == text:
        return text
    return yaml.safe_dump(text, default_style='"', allow_unicode=True, width=1 << 20).strip()


_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./:@+-]*")


HEADER = """\
# probegate.yml: what `probegate scan` scans, and how (docs/targets.md).
# Written by `probegate init --kind {kind}`.
# Next: `probegate scan --dry-run` prints the plan and sends nothing; `probegate scan` scans.
# A flag replaces one setting of this file for one run (`probegate scan --endpoint URL`), and
# every scan flag can live under scan: below.

"""

_ROUTES = {
    "openai": """\
target:
  kind: openai                   # probegate runs the agent loop: your model, prompt and tools
  endpoint: {endpoint:<20} # any OpenAI-compatible chat-completions API
  # api: responses               # the Responses API instead (OpenAI's newest models)
  model: {model}
  api_key_env: {api_key_env:<17} # the variable's name, never the key
  # system_prompt: prompts/system.txt   # your agent's real prompt, relative to this file
  #                                     # (without it: a generic assistant prompt)
  max_turns: 4                   # model calls per message
  # prices:                      # your provider's dollars per 1000 tokens, for --budget-usd
  #   {model_key}: {{input_per_1k: 0.00015, output_per_1k: 0.0006}}
""",
    "anthropic": """\
target:
  kind: anthropic                # probegate runs the agent loop over the Messages API
  endpoint: {endpoint}
  model: {model}
  api_key_env: {api_key_env:<17} # the variable's name, never the key (sent as x-api-key)
  max_tokens: 1024               # the Messages API needs it
  # system_prompt: prompts/system.txt   # your agent's real prompt, relative to this file
  max_turns: 4                   # model calls per message
""",
    "http": """\
target:
  kind: http                     # your agent behind its own API; it runs its own tools
  endpoint: {endpoint:<20} # where it takes a message
  {api_key_line}
  http:
    method: POST
    body:                        # the request; {{{{input}}}} is what probegate says to the agent
      input: "{{{{input}}}}"
      session_id: "{{{{session_id}}}}"   # a fresh id per conversation
    response_text: output        # dotted path to the reply's text in the response JSON
{http_reading}""",
    "python": """\
target:
  kind: python                   # your agent, in probegate's process
  python: {python:<22} # MODULE:ATTR: a function run(input, context) or a class
  # processes: 2                 # or in processes of its own, one per core: an agent on a
  #                              # model SDK scans faster (docs/targets.md, "processes")
{python_reading}""",
}

# What probegate reads of an http agent's answers, without the proxy and with it.
_HTTP_READING = """\
    # response_tool_calls: tool_calls   # where the response lists the tools the agent called:
    #                                   # without it, probes judge the reply's text only
  # canaries_env: [AGENT_DB_PASSWORD]   # variables holding real secrets the agent holds:
  #                                     # without one, secret-leak probes cannot run
"""
_PYTHON_READING = """\
  # canaries: []                 # real secrets your agent holds: a leak of one is a finding
"""
_PROXIED_READING = """\
  # The proxy below sees every tool call the model asks for and plants secrets in the system
  # prompt, so no response_tool_calls or canaries are needed to judge the agent's actions and
  # leaks. Real secrets the agent holds can still be declared:
  # canaries_env: [AGENT_DB_PASSWORD]
"""
_CONTEXT_BASE_URL = (
    "    #                            # (or context.model_base_url, per conversation)\n"
)
PROXY = """\
  model_proxy:                   # the agent's own model calls go through probegate
    #                            # (docs/scan-your-agent/proxy.md)
    api: {api:<23} # openai-chat | openai-responses | anthropic-messages
    listen: {listen:<20} # {given_to_agent}
{given_more}    upstream: {upstream:<18} # the real model API, where its calls go on
    upstream_api_key_env: {key_env:<7} # the key sent upstream; the agent carries the same
    #                            # key in its calls, which is what lets them through
    # safe: true                 # default: a call that would send mail, move money, run code
    #                            # or write memory is recorded and stopped before it runs
"""

TOOLS_HEAD = """
  # The agent's tools. Probes apply by what the tools can do (their capabilities): egress,
  # pii_read, financial, code_exec, memory_write, retrieval, delegation, destructive,
  # privilege (docs/targets.md, "Capabilities"). The capabilities below are GUESSES from each
  # tool's name (or its description): check them. A wrong one makes probes apply that cannot
  # reach the agent, a missing one leaves its attacks untested.
"""

NO_TOOLS = """\
  tools: []                      # none declared yet: probes that attack through tools,
  #                              # memory or documents cannot apply. For example:
  # - name: send_email
  #   description: Send an email on the customer's behalf.
  #   capabilities: [egress]
  #   parameters: {type: object, properties: {to: {type: string}, body: {type: string}}}
"""

NO_TOOLS_PROXIED = """\
  tools: []                      # none declared yet: list every tool the agent declares to
  #                              # its model, by that name, with what it can do. For example:
  # - {name: send_email, capabilities: [egress]}
  # - {name: fetch_document, capabilities: [retrieval]}
"""

SCAN = """
scan:
  mode: fast                     # fast on every pull request; full (the only authoritative
  #                              # mode, the one --fail-under can pass) nightly
  # fail_on: high                # exit 1 on a finding at or above this severity
  # budget_usd: 5                # stop before spending more (needs target.prices)
  # output: json,sarif,md        # report formats, written to probegate-out/
"""


def config_text(route: Route) -> str:
    """The commented ``probegate.yml`` for ``route``."""
    values = {
        key: scalar(value)
        for key in ("endpoint", "model", "api_key_env", "python")
        if (value := default(route, key)) is not None
    }
    model = default(route, "model")
    values["model_key"] = scalar(model) if model else ""
    key_env = default(route, "api_key_env")
    values["api_key_line"] = (
        f"api_key_env: {scalar(key_env):<17} # sent as Authorization: Bearer"
        if key_env
        else "# api_key_env: AGENT_API_KEY # a variable holding a bearer token, if it needs one"
    )
    proxy = route.proxy
    values["http_reading"] = _PROXIED_READING if proxy else _HTTP_READING
    values["python_reading"] = _PROXIED_READING if proxy else _PYTHON_READING
    body = _ROUTES[route.kind].format(**values)
    if proxy is not None:
        body += PROXY.format(
            api=proxy.api,
            listen=scalar(proxy.listen),
            given_to_agent=(
                f"start the agent with {proxy.base_url_env}={proxy.base_url}"
                if route.kind == "http"
                else f"the agent's model base URL: {proxy.base_url}"
            ),
            given_more="" if route.kind == "http" else _CONTEXT_BASE_URL,
            upstream=scalar(proxy.upstream_url),
            key_env=scalar(proxy.key_env),
        )
    head = HEADER.format(kind=route.kind + (" --model-proxy " + proxy.api if proxy else ""))
    return head + body + _tools_text(route.tools, proxied=proxy is not None) + SCAN


def _tools_text(tools: tuple[Tool, ...], *, proxied: bool = False) -> str:
    """The tools; behind the proxy, by the names the agent declares to its model (their
    descriptions and schemas come from its own requests, so none is written here)."""
    if not tools:
        return "\n" + (NO_TOOLS_PROXIED if proxied else NO_TOOLS)
    head = TOOLS_HEAD.rstrip("\n")
    if proxied:
        head += "\n  # Name them as the agent declares them to its model."
    lines = [head, "  tools:"]
    for tool in tools:
        caps = ", ".join(c.value for c in tool.chosen)
        said = "given" if tool.capabilities is not None else "guessed: check"
        lines += [
            f"    - name: {scalar(tool.name)}",
            f"      description: {scalar(tool.description)}",
            f"      capabilities: [{caps}]   # {said}",
        ]
        if not proxied:
            lines.append(
                "      parameters: {type: object, properties: {}}   # its JSON Schema, as your "
                "agent declares it"
            )
    return "\n".join(lines) + "\n"


STARTER = '''\
"""The agent probegate scans (probegate.yml: target.python: {spec}).

Connect your agent here: call it with the message and return its reply. Tools it should use
come from probegate's sandbox, so attacks can ride on what they return (docs/targets.md,
"python"). Until this is done, every attempt ends unjudged with the message below.
"""

from __future__ import annotations

from typing import Any


def {attr}(input: str, context: Any) -> dict[str, Any]:
    # e.g. page = context.call_tool("fetch_document", {{"url": "https://example.com"}})
    raise NotImplementedError("connect your agent in {path} (probegate init wrote this stub)")
'''


STARTER_PROXIED = '''\
"""The agent probegate scans (probegate.yml: target.python: {spec}), its model calls through
probegate's model-API proxy (target.model_proxy).

Connect your agent here: call it with the message and return its reply. It keeps its own
tools and loop; only its model client's base URL changes, to {base_url} (the
variable {base_url_env}), or per conversation to context.model_base_url, the scan's own URL,
which needs no key (docs/scan-your-agent/proxy.md). Until this is done, every attempt ends
unjudged with the message below.
"""

from __future__ import annotations

from typing import Any


def {attr}(input: str, context: Any) -> dict[str, Any]:
    # e.g. reply = MyAgent(base_url=context.model_base_url).run(input)
    #      return {{"output": reply}}
    raise NotImplementedError("connect your agent in {path} (probegate init wrote this stub)")
'''


def starter_agent(spec: str, proxy: Proxy | None = None) -> tuple[str, str] | None:
    """``(file name, text)`` of a starter agent for ``MODULE:ATTR``, or None when ``MODULE`` is
    not one plain file name (a package path is the user's own code)."""
    module, _, attr = spec.partition(":")
    if not module.isidentifier() or not attr.isidentifier():
        return None
    path = f"{module}.py"
    if proxy is not None:
        text = STARTER_PROXIED.format(
            spec=spec,
            attr=attr,
            path=path,
            base_url=proxy.base_url,
            base_url_env=proxy.base_url_env,
        )
        return path, text
    return path, STARTER.format(spec=spec, attr=attr, path=path)
