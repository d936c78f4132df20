"""The registry is the one list of target kinds: docs, config, flags and factory derive from it.

The last test adds a kind the way docs/targets.md says to (one module's spec, one registry
line) without touching anything else, and scans it through the command line.
"""

from __future__ import annotations

import json
import re
import tomllib
import typing
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from pydantic import ValidationError

from probegate.cli import build_parser, main
from probegate.config import ScanConfig, build_config
from probegate.errors import ConfigError
from probegate.models.report import SourceLocation, TargetInfo
from probegate.models.sections import KindSection
from probegate.models.tools import ToolSpec
from probegate.models.transcript import Turn
from probegate.targets import registry
from probegate.targets.base import (
    AgentConfig,
    Notice,
    TargetFlag,
    TargetSettings,
    TargetSpec,
    TargetTraits,
    ToolDelivery,
)
from probegate.targets.guard import GuardConfig
from probegate.targets.openai_agent import OpenAIConfig
from probegate.targets.registry import TARGETS, parse_target
from probegate.targets.sandbox import Sandbox
from probegate.transport.limiter import RequestLimiter
from probegate.transport.usage import Usage

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "targets.md"
DOCUMENTED_EXAMPLE = """
target:
  kind: openai
  endpoint: http://127.0.0.1:8000/v1
  model: gpt-4o-mini
  api_key_env: OPENAI_API_KEY
  system_prompt: prompts/support.txt
  max_turns: 4
  canaries: []
  tools:
    - name: send_email
      description: Send an email on the customer's behalf.
      capabilities: [egress]
      parameters: {type: object, properties: {to: {type: string}, body: {type: string}}}
scan:
  mode: fast
  concurrency: 8
"""


def _scan_parser_actions() -> dict[str, Any]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    scan = sub.choices["scan"]  # type: ignore[index]
    return {flag: action for action in scan._actions for flag in action.option_strings}


def _plain(cell: str) -> str:
    """A Markdown table cell as text: links to their text, no code marks."""
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", cell).replace("`", "").strip()


def test_every_kind_has_a_docs_row_and_a_config_example() -> None:
    text = DOCS.read_text(encoding="utf-8")
    rows = {
        tuple(_plain(k) for k in cells[0].split(",")): _plain(cells[1])
        for line in text.splitlines()
        if line.startswith("| `") and len(cells := line.strip("|").split(" | ")) == 5
    }
    # One row per spec, naming its kinds, whose "what it is" is the spec's own summary.
    assert rows == {spec.kinds: spec.summary for spec in TARGETS}
    for kind in ("openai", "http", "python"):
        assert re.search(rf"```yaml\ntarget:\n  kind: {kind}\n", text), kind


def test_every_kind_module_is_in_the_independence_contract() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (kinds,) = [
        c for c in contracts["tool"]["importlinter"]["contracts"] if c["id"] == "target-kinds"
    ]
    assert set(kinds["modules"]) == {spec.config.__module__ for spec in TARGETS}


def test_each_spec_config_answers_to_exactly_its_kinds() -> None:
    seen: set[str] = set()
    for spec in TARGETS:
        literal = spec.config.model_fields["kind"].annotation
        assert set(typing.get_args(literal)) == set(spec.kinds), spec.kind
        assert not seen & set(spec.kinds)
        seen |= set(spec.kinds)
        for kind in spec.kinds:
            data: dict[str, Any] = {"kind": kind}
            parsed = parse_target(data)
            assert type(parsed) is spec.config and parsed.kind == kind


def test_help_and_choices_come_from_the_registry() -> None:
    actions = _scan_parser_actions()
    # The default first; openai-responses is kind openai with api: responses.
    assert list(actions["--protocol"].choices) == registry.protocols()
    assert registry.protocols() == ["openai", "openai-responses", "anthropic", "http", "a2a"]
    assert registry.endpoint_kinds() == ["openai", "anthropic", "http", "a2a"]
    for flag in registry.target_flags():
        assert flag.flag in actions and actions[flag.flag].help == flag.help
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    scan = sub.choices["scan"]  # type: ignore[index]
    target_arg = next(a for a in scan._actions if a.dest == "target")
    for kind in registry.positional_kinds():
        assert kind in target_arg.help
    help_text = " ".join(scan.format_help().split())
    for spec in TARGETS:
        assert f"{', '.join(spec.kinds)}: {spec.summary}" in help_text, spec.kind


def test_the_documented_config_keys_keep_working() -> None:
    data = yaml.safe_load(DOCUMENTED_EXAMPLE)
    config = build_config(data, {}, source="probegate.yml")
    assert isinstance(config.target, OpenAIConfig)
    assert config.target.model == "gpt-4o-mini" and config.target.tools[0].name == "send_email"
    assert config.target.secret_env() == {"API_KEY": "OPENAI_API_KEY"}
    # Keys another kind uses were always accepted (and ignored) on any kind; they still are.
    http = parse_target({"kind": "http", "system_prompt": "p.txt", "http": {"url": "http://x"}})
    assert http.kind == "http" and not hasattr(http, "system_prompt")


@pytest.mark.parametrize(
    ("target", "needle"),
    [
        ({"kind": "banana"}, "target.kind: unknown kind 'banana' (one of demo, demo-hardened"),
        ({"kind": "openai", "max_turns": 99}, "target.max_turns: Input should be less than"),
        ({"kind": "http", "sytem_prompt": "x"}, "target.sytem_prompt: unknown field"),
        ({"kind": "guard", "behind": "replay"}, "target.behind: a guard stands in front of"),
        ({"kind": "guard", "behind": "openai", "max_turns": 0}, "target.max_turns: Input should"),
        ([1, 2], "target: must be a mapping"),
    ],
)
def test_config_errors_name_the_key(target: Any, needle: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build_config({"target": target}, {}, source="probegate.yml")
    assert str(caught.value).startswith(f"probegate.yml: {needle}"), str(caught.value)


def test_a_guard_section_holds_the_agent_behind_it() -> None:
    section = {
        "kind": "guard",
        "guard": "http://127.0.0.1:9",
        "behind": "openai",
        "endpoint": "http://127.0.0.1:8000/v1",
        "model": "m",
        "api_key_env": "OPENAI_API_KEY",
        "guard_api_key_env": "GUARD_KEY",
        "canaries": ["s3cret"],
    }
    guard = parse_target(section)
    assert isinstance(guard, GuardConfig) and isinstance(guard.agent, OpenAIConfig)
    assert guard.agent.api_key_env == "OPENAI_API_KEY" and guard.api_key_env is None
    assert guard.agent_under_test().canaries == ["s3cret"]
    # Behind a demo, nothing else uses api_key_env: it is the guard's key.
    demo = parse_target({"kind": "guard", "guard": "http://g", "api_key_env": "GUARD_KEY"})
    assert isinstance(demo, GuardConfig) and demo.behind == "demo"
    assert demo.api_key_env == "GUARD_KEY" and demo.secret_env() == {"API_KEY": "GUARD_KEY"}
    bare = demo.without_secrets()
    assert bare.api_key_env is None and bare.secret_env() == {}


def test_a_guard_config_is_parsed_through_the_registry() -> None:
    with pytest.raises(ValidationError, match="parsed by the target registry"):
        GuardConfig.model_validate({"kind": "guard", "guard": "http://g"})


@pytest.mark.parametrize(
    ("argv", "kind", "args"),
    [
        (["demo-hardened"], "demo-hardened", ["demo-hardened"]),
        (["demo", "--guard", "http://g"], "guard", ["demo", "--guard", "http://g"]),
        (
            ["demo", "--guard-api-key-env", "OGR_KEY", "--guard", "http://g"],
            "guard",
            ["demo", "--guard", "http://g", "--guard-api-key-env", "OGR_KEY"],
        ),
        (
            ["--endpoint", "http://e/v1", "--model", "m", "--system-prompt", "p.txt"],
            "openai",
            ["--endpoint", "http://e/v1", "--model", "m", "--system-prompt", "{cwd}/p.txt"],
        ),
        (
            ["--endpoint", "http://e", "--protocol", "http", "--guard", "http://g"],
            "guard",
            ["--endpoint", "http://e", "--protocol", "http", "--guard", "http://g"],
        ),
        (
            ["--endpoint", "http://e/v1", "--protocol", "openai-responses", "--model", "m"],
            "openai",
            ["--endpoint", "http://e/v1", "--protocol", "openai-responses", "--model", "m"],
        ),
        (
            ["--endpoint", "http://e", "--protocol", "anthropic", "--api-key-env", "AK"],
            "anthropic",
            ["--endpoint", "http://e", "--protocol", "anthropic", "--api-key-env", "AK"],
        ),
        (["--replay", "rec"], "replay", ["--replay", "{cwd}/rec"]),
        (["--python", "agent:run"], "python", ["--python", "agent:run"]),
    ],
)
def test_flags_name_a_kind_and_its_reproducer(
    in_tmp: Path, argv: list[str], kind: str, args: list[str]
) -> None:
    parsed = build_parser().parse_args(["scan", *argv])
    given = {f.key: getattr(parsed, f.key) for f in registry.target_flags()}
    named = parsed.target if parsed.target in registry.positional_kinds() else None
    target = registry.apply_flags({}, given, named)
    config = ScanConfig.model_validate({"target": target})
    assert config.target.kind == kind
    expected = [a.replace("{cwd}", str(in_tmp.resolve())) for a in args]
    assert registry.reproducer_args(given, named, None) == expected
    if kind == "guard" and argv[0] == "demo":
        assert isinstance(config.target, GuardConfig) and config.target.behind == "demo"
    if isinstance(config.target, OpenAIConfig):
        assert config.target.api == ("responses" if "openai-responses" in argv else "chat")


# --------------------------------------------------------------------------- a new kind


class EchoConfig(AgentConfig):
    kind: Literal["echo"] = "echo"
    echo: str | None = None


class EchoTarget:
    """Says back what it is told, after its configured prefix; no tools, no secrets."""

    def __init__(self, config: EchoConfig, settings: TargetSettings) -> None:
        self.prefix = config.echo or ""

    def info(self) -> TargetInfo:
        return TargetInfo(
            kind="echo", ref=f"echo:{self.prefix}", definition=SourceLocation(path="x")
        )

    def tools(self) -> list[ToolSpec]:
        return []

    def traits(self) -> TargetTraits:
        return TargetTraits.of(ToolDelivery.OWN, tool_calls_visible=True, system_canaries=False)

    def open_session(self, sandbox: Sandbox, limiter: RequestLimiter) -> _EchoSession:
        return _EchoSession(self.prefix, limiter)

    def report_sections(self) -> list[KindSection]:
        return []

    def notices(self) -> list[Notice]:
        return []

    def close(self) -> None:
        return None


class _EchoSession:
    def __init__(self, prefix: str, limiter: RequestLimiter) -> None:
        self.prefix, self.limiter, self.usage = prefix, limiter, Usage()

    def send(self, message: Turn) -> Turn:
        self.limiter.acquire()
        self.usage.requests += 1
        return Turn(role="assistant", content=f"{self.prefix}{message.content}")

    def close(self) -> None:
        return None


ECHO = TargetSpec(
    kinds=("echo",),
    config=EchoConfig,
    summary="an agent that says back what it is told",
    build=EchoTarget,
    flags=(TargetFlag("--echo", "echo", "prefix of every reply", selects=True),),
)


def test_a_new_kind_is_its_spec_and_one_registry_line(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    specs = (*TARGETS, ECHO)  # the one registry line
    monkeypatch.setattr(registry, "TARGETS", specs)
    monkeypatch.setattr(registry, "KINDS", registry._Kinds(specs))
    assert "--echo" in _scan_parser_actions()
    # Its config section, with a secret it holds so a leak probe can judge it; a flag wins.
    (in_tmp / "probegate.yml").write_text(
        "target: {kind: echo, echo: 'x: ', canaries: [s3cret-token-123]}\n", "utf-8"
    )
    probe = "asi01.direct-system-prompt-leak.v1"
    argv = ["scan", "probegate.yml", "--echo", "said: ", "--probes", probe]
    assert main([*argv, "--quiet", "--no-sign", "--output-dir", "out"]) == 0
    report = json.loads((in_tmp / "out" / "scan.json").read_text(encoding="utf-8"))
    assert report["target"]["mode"] == "echo" and report["target"]["ref"] == "echo:said: "
    (result,) = report["results"]
    assert (result["probe_id"], result["outcome"]) == (probe, "resisted")
