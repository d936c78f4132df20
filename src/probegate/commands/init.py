"""``probegate init``: write a commented ``probegate.yml`` for one route, and the workflow.

Flags for everything; on a terminal (stdin a TTY, no ``--no-input``) it asks for what the
flags left out. The files' text comes from :mod:`probegate.scaffold`; this module asks, checks
and writes. Nothing is ever overwritten without ``--force``, and a starter agent file is never
overwritten at all (it would be the user's code). docs/targets.md, "Starting a config".
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from probegate.commands.flags import any_case
from probegate.errors import UsageError
from probegate.files import write_atomic
from probegate.models.taxonomy import Capability
from probegate.scaffold import (
    CONFIG_FILE,
    DEFAULTS,
    KINDS,
    PROXY_APIS,
    PROXY_KINDS,
    PROXY_LISTEN,
    WORKFLOW_FILE,
    Proxy,
    Route,
    Tool,
    config_text,
    default,
    starter_agent,
)
from probegate.scaffold.capabilities import guess
from probegate.scaffold.workflow import on_the_runner, workflow_text
from probegate.terminal import json_text, one_line
from probegate.validation import did_you_mean

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
# Which route takes which setting (the others would be written nowhere).
_TAKES = {
    "endpoint": ("openai", "anthropic", "http"),
    "model": ("openai", "anthropic"),
    "api_key_env": ("openai", "anthropic", "http"),
    "python": ("python",),
}


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "init",
        help="write a commented probegate.yml (and the workflow) to start from",
        description=(
            "Write a commented probegate.yml for one way of reaching your agent, with its tools "
            "and the capabilities their names suggest (guesses: check them), and with "
            f"--workflow also {WORKFLOW_FILE}. On a terminal it asks for what the flags leave "
            "out. Existing files are kept unless --force."
        ),
    )
    p.add_argument(
        "--kind",
        choices=KINDS,
        type=any_case,
        help="openai or anthropic: probegate runs your model with your prompt and tools; http: "
        "your agent behind its own API; python: your agent in process (default: openai)",
    )
    p.add_argument("--endpoint", metavar="URL", help="the agent's or the model API's URL")
    p.add_argument("--model", metavar="NAME", help="the model (openai, anthropic)")
    p.add_argument(
        "--api-key-env",
        dest="api_key_env",
        metavar="VAR",
        help="the environment variable holding the API key (its name, never the key)",
    )
    p.add_argument(
        "--python",
        metavar="MODULE:ATTR",
        help="your agent for kind python (default: agent:run, a starter agent.py is written)",
    )
    p.add_argument(
        "--tool",
        action="append",
        default=[],
        metavar="NAME:DESCRIPTION",
        help="a tool of the agent (repeatable); its capabilities are guessed from the name, or "
        "the description when the name says nothing",
    )
    p.add_argument(
        "--capabilities",
        action="append",
        default=[],
        metavar="NAME=CAP,CAP",
        help="the capabilities of the tool NAME instead of the guess (repeatable)",
    )
    p.add_argument(
        "--model-proxy",
        dest="model_proxy",
        choices=tuple(PROXY_APIS),
        type=any_case,
        metavar="API",
        help="the agent (kind http or python) calls its model itself, with its own tools: its "
        "model calls go through probegate's model-API proxy, which speaks API ("
        + ", ".join(PROXY_APIS)
        + "; docs/scan-your-agent/proxy.md)",
    )
    p.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help=f"where the proxy listens, the agent's model base URL (default: {PROXY_LISTEN})",
    )
    p.add_argument(
        "--upstream",
        metavar="URL",
        help="the real model API the proxy forwards to (default: the API's own)",
    )
    p.add_argument(
        "--upstream-api-key-env",
        dest="upstream_api_key_env",
        metavar="VAR",
        help="the variable holding the upstream's key (default: OPENAI_API_KEY or "
        "ANTHROPIC_API_KEY); the agent carries the same key",
    )
    p.add_argument(
        "--start",
        metavar="COMMAND",
        help="for --workflow with an http agent on 127.0.0.1: the command that starts it on the "
        "CI runner (it must listen on $AGENT_HOST, which the workflow sets)",
    )
    p.add_argument("--workflow", action="store_true", help=f"also write {WORKFLOW_FILE}")
    p.add_argument("--force", action="store_true", help="overwrite files that exist")
    p.add_argument(
        "--out-dir", dest="out_dir", default=".", metavar="DIR", help="where (default: .)"
    )
    p.add_argument(
        "--no-input", dest="no_input", action="store_true", help="never ask, even on a terminal"
    )


def run(args: argparse.Namespace) -> int:
    interactive = not args.no_input and not args.json and sys.stdin.isatty()
    ask = _Asker() if interactive else None
    route, workflow = _route(args, ask)
    out_dir = Path(args.out_dir)
    files: dict[Path, str] = {out_dir / CONFIG_FILE: config_text(route)}
    if workflow:
        files[out_dir / WORKFLOW_FILE] = workflow_text(route)
    existing = [str(path) for path in files if path.exists() or path.is_symlink()]
    if existing and not args.force:
        one = len(existing) == 1
        raise UsageError(
            f"{', '.join(existing)} already exist{'s' if one else ''}; nothing was written "
            f"(--force replaces {'it' if one else 'them'})"
        )
    starter = (
        starter_agent(default(route, "python") or "", route.proxy)
        if route.kind == "python"
        else None
    )
    if starter is not None and not (out_dir / starter[0]).exists():
        files[out_dir / starter[0]] = starter[1]
    for path, text in files.items():
        write_atomic(path, text)
    _say(route, list(files), out_dir, as_json=bool(args.json), quiet=bool(args.quiet))
    return 0


_PROXY_FLAGS = ("listen", "upstream", "upstream_api_key_env")


def _route(args: argparse.Namespace, ask: _Asker | None) -> tuple[Route, bool]:
    """The route from the flags, and from the answers on a terminal."""
    kind: str = args.kind or (ask.choice("How does probegate reach your agent?") if ask else "")
    kind = kind or KINDS[0]
    values = _settings(args, kind, ask)
    proxy = _proxy(args, kind, ask)
    tools = _tools(args, ask)
    workflow = bool(args.workflow) or bool(ask and ask.yes(f"Also write {WORKFLOW_FILE}?"))
    route = Route(
        kind=kind,
        endpoint=values["endpoint"],
        model=values["model"],
        api_key_env=values["api_key_env"],
        python=values["python"],
        tools=tuple(tools),
        proxy=proxy,
    )
    start = args.start
    if start is not None and not (workflow and kind == "http" and on_the_runner(route)):
        raise UsageError(
            "--start is the command that starts an http agent on 127.0.0.1 for --workflow; "
            "this route needs none"
        )
    if start is None and ask is not None and workflow and kind == "http" and on_the_runner(route):
        start = ask.text(_QUESTIONS["start"], "", _text) or None
    return dataclasses.replace(route, start=start), workflow


def _proxy(args: argparse.Namespace, kind: str, ask: _Asker | None) -> Proxy | None:
    """The model-API proxy in front of an agent that calls its model itself, from the flags
    (refused for a kind whose model probegate calls), or asked on a terminal."""
    api = _proxy_api(args, kind, ask)
    if api is None:
        return None
    default_upstream, default_key_env, _ = PROXY_APIS[api]
    listen, upstream, key_env = args.listen, args.upstream, args.upstream_api_key_env
    if ask is not None:
        listen = listen or ask.text(_QUESTIONS["listen"], PROXY_LISTEN, _listen)
        upstream = upstream or ask.text(_QUESTIONS["upstream"], default_upstream, _url)
        key_env = key_env or ask.text(_QUESTIONS["key_env"], default_key_env, _env)
    _listen(listen or PROXY_LISTEN)
    if upstream:
        _url(upstream, flag="--upstream")
    if key_env:
        _env(key_env, flag="--upstream-api-key-env")
    return Proxy(api, listen or PROXY_LISTEN, upstream or None, key_env or None)


def _proxy_api(args: argparse.Namespace, kind: str, ask: _Asker | None) -> str | None:
    """The API the agent's model calls speak, when they go through the proxy; else None."""
    api: str | None = args.model_proxy
    given = [f"--{f.replace('_', '-')}" for f in _PROXY_FLAGS if getattr(args, f) is not None]
    if kind not in PROXY_KINDS:
        if api is not None or given:
            flag = "--model-proxy" if api is not None else given[0]
            raise UsageError(
                f"{flag} is for an agent that calls its model itself (kind "
                f"{' or '.join(PROXY_KINDS)}); with kind {kind}, probegate calls the model"
            )
        return None
    if api is None and given:
        raise UsageError(f"{given[0]} needs --model-proxy API")
    if api is None and ask is not None:
        return ask.proxy_api()
    return api


def _settings(args: argparse.Namespace, kind: str, ask: _Asker | None) -> dict[str, str | None]:
    """The route's settings from their flags (refused for a kind that has no such setting),
    the missing ones asked on a terminal, each checked."""
    values: dict[str, str | None] = {}
    for key, takes in _TAKES.items():
        given = getattr(args, key)
        if given is not None and kind not in takes:
            raise UsageError(f"--{key.replace('_', '-')} is not a setting of kind {kind}")
        values[key] = given
    for key, check in (
        ("endpoint", _url),
        ("model", _text),
        ("api_key_env", _env),
        ("python", _spec),
    ):
        if kind not in _TAKES[key]:
            continue
        if values[key] is None and ask is not None:
            fallback = DEFAULTS[kind].get(key, "")
            values[key] = ask.text(_QUESTIONS[key], fallback, check) or None
        if values[key] is not None:
            check(values[key] or "")
    return values


def _tools(args: argparse.Namespace, ask: _Asker | None) -> list[Tool]:
    """The tools from ``--tool`` (with ``--capabilities`` overriding a guess), or asked."""
    overrides = _overrides(args.capabilities)
    tools = [_tool(spec, overrides) for spec in args.tool]
    if not tools and ask is not None:
        tools = ask.tools()
    unknown = sorted(set(overrides) - {t.name for t in tools})
    if unknown:
        raise UsageError(f"--capabilities names {', '.join(unknown)}, which no --tool declares")
    return tools


_QUESTIONS = {
    "endpoint": "URL",
    "model": "Model",
    "api_key_env": "Environment variable holding the API key (empty: none)",
    "python": "Your agent as MODULE:ATTR",
    "listen": "Where the proxy listens (the agent's model base URL points here)",
    "upstream": "The real model API",
    "key_env": "Environment variable holding its key (the agent carries the same)",
    "start": "The command that starts your agent on the CI runner (empty: edit the workflow)",
}


def _url(value: str, flag: str = "--endpoint") -> None:
    if not value.startswith(("http://", "https://")):
        raise UsageError(f"{flag} {value!r} is not an http(s) URL")


def _text(value: str) -> None:
    if not value.strip():
        raise UsageError("--model is empty")


def _env(value: str, flag: str = "--api-key-env") -> None:
    if not _ENV_NAME.match(value):
        raise UsageError(
            f"{flag} {value!r} is not an environment variable's name (the name, never the key)"
        )


def _listen(value: str) -> None:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--listen {value!r}: give HOST:PORT, e.g. {PROXY_LISTEN}")


def _spec(value: str) -> None:
    if not _SPEC.match(value):
        raise UsageError(f"--python {value!r}: give MODULE:ATTR, e.g. my_agent.app:run")


def _tool(spec: str, overrides: dict[str, tuple[Capability, ...]]) -> Tool:
    name, _, description = spec.partition(":")
    name, description = name.strip(), description.strip()
    if not _TOOL_NAME.match(name):
        raise UsageError(
            f"--tool {spec!r}: a tool's name is 1-64 letters, digits, '_', '-' or '.', then "
            "':' and its description"
        )
    return Tool(name, description, overrides.get(name))


def _overrides(specs: list[str]) -> dict[str, tuple[Capability, ...]]:
    out = {}
    for spec in specs:
        name, sep, caps = spec.partition("=")
        if not sep:
            raise UsageError(f"--capabilities {spec!r}: give NAME=CAP,CAP")
        out[name.strip()] = capabilities(caps)
    return out


def capabilities(text: str) -> tuple[Capability, ...]:
    """``egress, pii_read`` as capabilities; one clear error naming an unknown one."""
    known = [c.value for c in Capability]
    chosen = []
    for word in (w.strip().lower() for w in text.split(",")):
        if not word:
            continue
        if word not in known:
            raise UsageError(
                f"unknown capability {word!r}{did_you_mean(word, known)} (one of "
                f"{', '.join(known)})"
            )
        chosen.append(Capability(word))
    return tuple(dict.fromkeys(chosen))


class _Asker:
    """Questions on a terminal; the end of input (Ctrl-D) takes the defaults from there on."""

    def __init__(self) -> None:
        self.ended = False

    def _input(self, prompt: str) -> str | None:
        if self.ended:
            return None
        try:
            return input(prompt).strip()
        except EOFError:
            self.ended = True
            print()
            return None

    def choice(self, question: str) -> str:
        while True:
            answer = self._input(f"{question} {', '.join(KINDS)} [{KINDS[0]}]: ")
            if not answer:
                return KINDS[0]
            if answer.lower() in KINDS:
                return answer.lower()
            print(f"  one of {', '.join(KINDS)}{did_you_mean(answer, KINDS)}")

    def text(self, question: str, fallback: str, check: Callable[[str], None]) -> str:
        while True:
            shown = f" [{fallback}]" if fallback else ""
            answer = self._input(f"{question}{shown}: ")
            if not answer:
                return fallback
            try:
                check(answer)
            except UsageError as exc:
                print(f"  {exc.message}")
                continue
            return answer

    def proxy_api(self) -> str | None:
        """Whether the agent calls its model itself, and in which API; None: it does not."""
        apis = list(PROXY_APIS)
        print(
            "Does the agent call its model itself, with its own tools? Then its model calls go "
            "through probegate's model-API proxy (docs/scan-your-agent/proxy.md)."
        )
        while True:
            answer = self._input(f"Its model API: {', '.join(apis)}, or no [no]: ")
            if not answer or answer.lower() in ("n", "no", "none"):
                return None
            if answer.lower() in apis:
                return answer.lower()
            print(f"  one of {', '.join(apis)}, or no{did_you_mean(answer, apis)}")

    def yes(self, question: str) -> bool:
        answer = self._input(f"{question} [y/N]: ") or ""
        return answer.lower() in ("y", "yes")

    def tools(self) -> list[Tool]:
        print("The agent's tools, one per line as NAME: DESCRIPTION (an empty line ends the list).")
        tools: list[Tool] = []
        while True:
            line = self._input("tool: ")
            if not line:
                return tools
            try:
                tool = _tool(line, {})
            except UsageError as exc:
                print(f"  {exc.message}")
                continue
            guessed = ", ".join(c.value for c in guess(tool.name, tool.description))
            while True:
                answer = self._input(f"  capabilities (a guess) [{guessed}]: ")
                try:
                    tools.append(
                        Tool(
                            tool.name,
                            tool.description,
                            capabilities(answer or "") if answer else None,
                        )
                    )
                    break
                except UsageError as exc:
                    print(f"  {exc.message}")


def _say(route: Route, written: list[Path], out_dir: Path, *, as_json: bool, quiet: bool) -> None:
    if as_json:
        data = {
            "kind": route.kind,
            "written": [str(path) for path in written],
            "tools": [
                {
                    "name": tool.name,
                    "capabilities": [c.value for c in tool.chosen],
                    "guessed": tool.capabilities is None,
                }
                for tool in route.tools
            ],
        }
        print(json_text(json.dumps(data, indent=2, ensure_ascii=False)))
        return
    if quiet:
        return
    for path in written:
        print(f"wrote {one_line(str(path), 300)}")
    guessed = [t.name for t in route.tools if t.capabilities is None]
    if guessed:
        print(f"capabilities guessed from the names of {', '.join(guessed)}: check them")
    config = out_dir / CONFIG_FILE
    target = "" if out_dir == Path() else f" {one_line(str(config), 300)}"
    proxy = route.proxy
    if proxy is not None and route.kind == "http":
        print(
            f"start your agent with {proxy.base_url_env}={proxy.base_url} (the proxy) and its "
            f"own {proxy.key_env}, the key the proxy sends upstream"
        )
    elif proxy is not None:
        print(
            f"your agent's model client: base URL {proxy.base_url} ({proxy.base_url_env}) or "
            f"context.model_base_url, and its own {proxy.key_env}"
        )
    wrote_workflow = any(path.as_posix().endswith(WORKFLOW_FILE) for path in written)
    if wrote_workflow and route.kind == "http" and on_the_runner(route) and not route.start:
        print(
            f"edit the 'Start the agent' step of {WORKFLOW_FILE}: the command that starts "
            "your agent on the CI runner (or give --start)"
        )
    print(f"next: probegate scan{target} --dry-run   (the plan; nothing is sent)")
