"""What the config-defined kinds (openai, anthropic, http, python, guard) share: clients,
tools, paths.

These read a kind's validated config once, when its target is built, so a missing environment
variable or an unreadable prompt file is a usage error (exit 2) before the first request, never
an unjudged attempt halfway through a scan.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from probegate.errors import UsageError
from probegate.models import spellings
from probegate.models.redaction import Redactor
from probegate.models.report import SourceLocation, TargetInfo
from probegate.models.tools import ToolSpec
from probegate.targets.base import AgentConfig, ReplayInput, TargetSettings, env_value
from probegate.transport.http import HttpClient
from probegate.workspace import line_of, locate, repository_root


def http_client(
    settings: TargetSettings,
    url: str,
    *,
    headers: Mapping[str, str],
    headers_env: Mapping[str, str],
    what: str,
    client: HttpClient | None = None,
    peer: str = "target",
) -> tuple[HttpClient, dict[str, str]]:
    """A target's client (sized to --concurrency) and headers; it learns every secret to scrub.

    Secret header values come from the environment (``headers_env``) and a password in the URL
    is a secret too: all of them are registered so no error message or log line repeats them.
    """
    http = client or HttpClient(
        timeout=settings.timeout,
        retries=settings.retries,
        pool_size=settings.concurrency,
        seed=settings.seed,
        peer=peer,
    )
    out = {"Accept": "application/json", **headers}
    secret_headers = env_headers(dict(headers_env), what)
    for value in secret_headers.values():
        http.add_secret(value)
    out.update(secret_headers)
    password = urlsplit(url).password
    if password:
        http.add_secret(password)
    return http, out


def tool_specs(config: AgentConfig) -> list[ToolSpec]:
    """The tools the agent declares, as the sandbox and the oracles see them."""
    seen: set[str] = set()
    specs: list[ToolSpec] = []
    for tool in config.tools:
        if tool.name in seen:
            raise UsageError(f"target.tools: tool {tool.name!r} is declared twice")
        seen.add(tool.name)
        specs.append(
            ToolSpec(
                name=tool.name,
                description=tool.description,
                capabilities=frozenset(tool.capabilities),
                parameters=dict(tool.parameters),
            )
        )
    return specs


def env_headers(names: dict[str, str], what: str) -> dict[str, str]:
    """``{header: ENV_VAR}`` -> ``{header: value}``; every value is a secret."""
    return {header: env_value(var, f"{what} header {header}") for header, var in names.items()}


def config_file(settings: TargetSettings, value: str, what: str) -> Path:
    """A path from the config, relative to the config file's directory (or the cwd)."""
    path = Path(value).expanduser()
    candidates = [path] if path.is_absolute() else [settings.base_dir / path, Path.cwd() / path]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise UsageError(f"{what}: file {value} does not exist (relative to {settings.base_dir})")


def target_info(
    settings: TargetSettings,
    *,
    kind: str,
    ref: str,
    tools: list[ToolSpec],
    goal: str = "",
    fallback: Path | None = None,
    prompt: Path | None = None,
) -> TargetInfo:
    """Where the target is defined, for SARIF locations: files of the repository only.

    ``definition`` is the config's ``target:`` line (else ``fallback``, the file that stands for
    a target given by flags), ``tool_locations`` each tool's entry in the config, ``prompt`` the
    system-prompt file. A file outside the repository is left out; the scan then anchors the
    findings elsewhere (:func:`probegate.workspace.anchor`).
    """
    root = repository_root()
    caps = sorted({c.value for t in tools for c in t.capabilities})
    definition = locate(fallback, root)
    locations: dict[str, SourceLocation] = {}
    config_path = settings.config_path
    if config_path is not None and config_path.is_file():
        text = config_path.read_text(encoding="utf-8", errors="replace")
        at_target = locate(config_path, root, line_of(text, r"^target\s*:") or 1)
        definition = at_target or definition
        for tool in tools:
            line = line_of(text, rf"^\s*-?\s*name\s*:\s*['\"]?{re.escape(tool.name)}['\"]?\s*$")
            entry = locate(config_path, root, line) if line else None
            if entry is not None:
                locations[tool.name] = entry
    return TargetInfo(
        kind=kind,
        ref=ref,
        inferred_goal=goal,
        profile_source="config" if config_path is not None else "flags",
        capabilities=caps,
        tools=[t.name for t in tools],
        definition=definition,
        tool_locations=locations,
        prompt=locate(prompt, root),
    )


# --------------------------------------------------------------------------- replay scripts

_SCRIPT_HEAD = '''#!/usr/bin/env python3
"""{title}

Sends the attempt's messages to the agent again, without probegate: plain Python 3, standard
library only. Secrets are read from the environment variables named below, never stored here;
what the agent says is printed with each of them hidden, whole or in part, in any spelling
(DATA["secrets"] names each one's variable: set it, and the script hides that secret too).
Run it from anywhere: python3 {name}
"""

import json
import os
import sys
import urllib.error
import urllib.request

DATA = json.loads({data})

# The secrets this script hides in what it prints: the rule probegate's reports follow
# (probegate/models/spellings.py, as it was when this script was written).
{spellings}

HIDDEN = Spellings({{}})


def headers():
    out = {{"Content-Type": "application/json", "Accept": "application/json"}}
    out.update(DATA["headers"])
    for header, variable in DATA["headers_env"].items():
        out[header] = os.environ[variable]
    if DATA["api_key_env"]:
        key = os.environ[DATA["api_key_env"]]
        if DATA.get("key_header"):
            out[DATA["key_header"]] = key
        else:
            out["Authorization"] = "Bearer " + key
    return out


def send(method, url, body):
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, headers=headers(), method=method)
    try:
        with urllib.request.urlopen(request, timeout=DATA["timeout"]) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        said = exc.read(8000).decode("utf-8", "replace")
        sys.exit(f"HTTP {{exc.code}} from the agent: {{shown(said)}}")


def shown(said):
    """What the agent said, on one line, every secret of the scan hidden, with every
    character a terminal would act on (an escape sequence, a bidi override) written as its
    Python escape instead. JSON (tool-call arguments) is read first: a secret inside it is
    hidden as the characters it stands for, not as the escapes that spell them."""
    if isinstance(said, str):
        try:
            said = json.loads(said) if said.lstrip()[:1] in ("{{", "[") else said
        except ValueError:
            pass
    text = said if isinstance(said, str) else json.dumps(said, ensure_ascii=False, default=str)
    flat = hide(" ".join(text.split())[:4000], HIDDEN)[:2000]
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in flat)
'''

_SCRIPT_TAIL = """

if __name__ == "__main__":
    for variable in [DATA["api_key_env"], *DATA["headers_env"].values()]:
        if variable and not os.environ.get(variable):
            sys.exit(f"set {{variable}} first (the agent's credentials are never stored here)")
    held = {{name: os.environ.get(variable, "") for name, variable in DATA["secrets"].items()}}
    unset = sorted(DATA["secrets"][name] for name, value in held.items() if not value)
    if unset:
        print(
            f"note: {{', '.join(unset)}} not set: the agent's replies are printed without "
            "hiding what they stand for",
            file=sys.stderr,
        )
    HIDDEN = Spellings({{name: value for name, value in held.items() if value}})
    main()
    print("probegate saw:", shown(DATA["evidence"]))
"""


def script_text(
    given: ReplayInput,
    name: str,
    data: dict[str, Any],
    body: str,
    variables: Mapping[str, str],
) -> str:
    """A standalone replay script: the shared head (HTTP, credentials), ``body``, the tail.

    The data is embedded as one ASCII JSON string literal, parsed when the script runs, so no
    value from a transcript can end a string or inject code into the script, and none acts on
    the reader's editor; it is printed only through ``shown``. The scan's secrets become their
    placeholders in the data itself, before the literal's escaping could spell one differently
    (a secret holding a quote would otherwise survive as ``\\'``).

    What the agent says when the script runs is printed with the scan's secrets hidden as the
    reports hide them: ``variables`` names the environment variable each one is read from (the
    API key, secret headers, ``canaries_env``); any other (a canary written in the config) is
    read from the variable named as its placeholder (``CANARY_1``), when it is set.
    """
    hide = Redactor(given.secrets, patterns=False)
    readable = {**dict(data), "secrets": {n: variables.get(n, n) for n in sorted(given.secrets)}}
    literal = repr(json.dumps(hide.value(readable), indent=1, sort_keys=True, ensure_ascii=True))
    title = ascii(hide.text(given.title))[1:-1].replace('"', "'")
    head = _SCRIPT_HEAD.format(title=title, name=name, data=literal, spellings=_spellings_source())
    return head + body + _SCRIPT_TAIL.format()


@functools.cache
def _spellings_source() -> str:
    """:mod:`probegate.models.spellings` without its docstring, for a script to carry."""
    source = inspect.getsource(spellings)
    docstring = ast.parse(source).body[0]
    return "".join(source.splitlines(keepends=True)[docstring.end_lineno or 0 :]).strip()
