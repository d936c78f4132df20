"""The one list of target kinds, and everything derived from it.

Each line of :data:`TARGETS` is one kind module's spec. From that list come the ``target:``
config union (:func:`parse_target`), the factory (:func:`build_target`), the command line's
target flags, ``--protocol`` choices (each endpoint kind's protocols) and positional kinds,
the reproducer's target arguments, and the docs check (tests/targets/test_registry.py: every
kind has a row in docs/targets.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from probegate.errors import UsageError
from probegate.targets import (
    a2a_agent,
    anthropic_agent,
    demo,
    guard,
    http_agent,
    openai_agent,
    python_agent,
    replay,
)
from probegate.targets.base import (
    Target,
    TargetConfig,
    TargetFlag,
    TargetSettings,
    TargetSpec,
    config_error,
)
from probegate.validation import did_you_mean

TARGETS: tuple[TargetSpec[Any], ...] = (
    demo.SPEC,
    demo.CAREFUL_SPEC,
    openai_agent.SPEC,
    anthropic_agent.SPEC,
    http_agent.SPEC,
    a2a_agent.SPEC,
    python_agent.SPEC,
    replay.SPEC,
    guard.SPEC,
)
DEFAULT_KIND = "demo"

# The flags every kind reachable over the network shares: ``--endpoint URL --protocol KIND``.
ENDPOINT = TargetFlag("--endpoint", "endpoint", "agent endpoint URL", metavar="URL")
PROTOCOL = TargetFlag(
    "--protocol", "protocol", "endpoint protocol (default: the first, openai)", metavar="PROTOCOL"
)
API_KEY_ENV = TargetFlag(
    "--api-key-env",
    "api_key_env",
    "name of the environment variable holding the endpoint's API key, sent as a bearer token "
    "(as x-api-key to anthropic; the name, never the key)",
    metavar="VAR",
)


class _Kinds:
    """The registry as :class:`~probegate.targets.base.KindTable` (a guard parses through it)."""

    def __init__(self, specs: Sequence[TargetSpec[Any]]) -> None:
        self._specs = {kind: spec for spec in specs for kind in spec.kinds}
        self._keys = frozenset(key for spec in specs for key in spec.config.yaml_keys())

    def kinds(self) -> Sequence[str]:
        return tuple(self._specs)

    def spec(self, kind: str) -> TargetSpec[Any] | None:
        return self._specs.get(kind)

    def parse(self, data: Any) -> TargetConfig:
        if isinstance(data, TargetConfig):
            return data
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise config_error((), "must be a mapping (kind: ... and its settings)", data)
        kind = data.get("kind", DEFAULT_KIND)
        if isinstance(kind, str):
            kind = kind.strip().lower()  # a choice, so any case, like every choice
        spec = self._specs.get(kind) if isinstance(kind, str) else None
        if spec is None:
            shown = ", ".join(self._specs)
            hint = did_you_mean(kind, self._specs) if isinstance(kind, str) else ""
            raise config_error(("kind",), f"unknown kind {kind!r}{hint} (one of {shown})", kind)
        values = {**data, "kind": kind}
        if not spec.wraps:
            # Keys another kind uses are not this kind's business; they were always accepted
            # and ignored, so a config that switches kinds keeps working. Unknown keys fail.
            own = spec.config.yaml_keys()
            values = {k: v for k, v in values.items() if k in own or k not in self._keys}
        config: TargetConfig = spec.config.model_validate(values, context={"target_kinds": self})
        return config


KINDS = _Kinds(TARGETS)


def spec_of(config: TargetConfig) -> TargetSpec[Any]:
    spec = KINDS.spec(config.kind)
    assert spec is not None, f"a parsed config of an unregistered kind {config.kind!r}"
    return spec


def parse_target(data: Any) -> TargetConfig:
    """The ``target:`` section as its kind's config; a ValidationError located in the section."""
    return KINDS.parse(data)


def default_target() -> TargetConfig:
    return KINDS.parse({})


def build_target(config: TargetConfig, settings: TargetSettings) -> Target:
    """The target a validated config describes (a wrapping kind around the one it wraps)."""
    spec = spec_of(config)
    if spec.build is not None:
        return spec.build(config, settings)
    assert spec.wrap is not None
    inner = build_target(config.agent_under_test(), settings)
    try:
        return spec.wrap(config, settings, inner)
    except BaseException:
        inner.close()
        raise


# --------------------------------------------------------------------------- command line


def positional_kinds() -> list[str]:
    """The kinds ``probegate scan KIND`` names directly (the bundled agents)."""
    return [kind for spec in TARGETS if spec.positional for kind in spec.kinds]


def endpoint_kinds() -> list[str]:
    """The kinds reachable as ``--endpoint URL``."""
    return [kind for spec in TARGETS if spec.endpoint for kind in spec.kinds]


def protocols() -> list[str]:
    """The ``--protocol`` choices: each endpoint kind's protocols, the default first."""
    return [name for spec in TARGETS for name in spec.protocol_table()]


def _protocol(name: str) -> dict[str, Any]:
    """The ``target:`` values a ``--protocol`` name sets: its kind, and e.g. ``api``."""
    for spec in TARGETS:
        values = spec.protocol_table().get(name)
        if values is not None:
            return {"kind": spec.kind, **values}
    return {"kind": name}  # not a protocol: the config's parser names the choices


def _set_protocol(out: dict[str, Any], name: str) -> None:
    """Set what ``--protocol NAME`` says in ``out``: in front of a wrapping kind (a guard) it
    names the agent behind it, which is the one that speaks the protocol."""
    values = _protocol(name)
    kind = _kind_named(out)
    spec = KINDS.spec(kind) if kind is not None else None
    if spec is not None and spec.wraps:
        values["behind"] = values.pop("kind")
    out.update(values)


def target_flags() -> list[TargetFlag]:
    """Every target flag once, in registry order after ``--endpoint``/``--protocol``."""
    flags = [ENDPOINT, PROTOCOL, API_KEY_ENV]
    for spec in TARGETS:
        flags += [f for f in spec.flags if f.flag not in {g.flag for g in flags}]
    return flags


def selecting_flags() -> list[TargetFlag]:
    """The flags that name a target on their own (without them a scan needs a config file)."""
    return [ENDPOINT, *(f for spec in TARGETS for f in spec.flags if f.selects)]


def apply_flags(
    target: dict[str, Any],
    given: Mapping[str, str | None],
    positional: str | None,
    *,
    source: str | None = None,
) -> dict[str, Any]:
    """The ``target:`` section as the command line changes it: a flag replaces one key.

    ``probegate scan KIND`` replaces the file's target. ``--endpoint`` keeps the file's kind
    unless ``--protocol`` names one (the first endpoint kind by default). A selecting flag
    (``--python``, ``--replay``) names the kind; a wrapping kind's flag (``--guard``) stands
    in front of whatever the command line named so far. Every other key of the section stays.

    ``source`` names the config file ``target`` came from. A flag cannot change the kind of
    agent the file describes (the file's other settings were written for that kind), nor set
    a key the kind does not take (it would be dropped without a word): both are a
    :class:`~probegate.errors.UsageError` saying so. Replaying a recording (a kind that is not
    live) stands in for the file's agent and keeps its settings (docs/targets.md).
    """
    out = dict(target)
    if positional is not None:
        out = {"kind": positional}
    _apply_endpoint(out, given)
    if given.get(API_KEY_ENV.key):
        out[API_KEY_ENV.key] = given[API_KEY_ENV.key]
    for spec in TARGETS:
        for flag in spec.flags:
            _apply_kind_flag(out, spec, flag, given.get(flag.key))
    _check_flags_apply(out, given)
    if source is not None and positional is None:
        _check_kind_kept(target, out, given, source)
    _check_keys_taken(out, given, target if source is not None else {}, source)
    return out


def _apply_endpoint(out: dict[str, Any], given: Mapping[str, str | None]) -> None:
    """``--endpoint`` keeps the section's kind unless ``--protocol`` names one (the first
    endpoint kind by default when the section names none)."""
    endpoint, protocol = given.get(ENDPOINT.key), given.get(PROTOCOL.key)
    if endpoint:
        out["endpoint"] = endpoint
        if protocol or not out.get("kind"):
            _set_protocol(out, protocol or protocols()[0])
    elif protocol:
        _set_protocol(out, protocol)


def _apply_kind_flag(
    out: dict[str, Any], spec: TargetSpec[Any], flag: TargetFlag, value: str | None
) -> None:
    """One kind's flag: its key, and the kind itself for a selecting flag; a wrapping kind's
    selecting flag keeps what was named so far as the agent behind it."""
    if not value:
        return
    if spec.wraps and flag.selects:
        behind = out.get("kind")
        if behind is not None and behind not in spec.kinds:
            out.setdefault("behind", behind)
    out[flag.key] = value
    if flag.selects:
        out["kind"] = spec.kind


def _check_flags_apply(out: Mapping[str, Any], given: Mapping[str, str | None]) -> None:
    """A flag for a kind the command line does not end up naming is an error: the API key
    flag off the network, a wrapping kind's own setting without that kind."""
    key_env = given.get(API_KEY_ENV.key)
    kind = out.get("kind", DEFAULT_KIND)
    wrapping = any(spec.wraps and kind in spec.kinds for spec in TARGETS)
    if key_env and kind not in endpoint_kinds() and not wrapping:
        raise UsageError(
            f"{API_KEY_ENV.flag} is for a target reached over the network "
            f"({', '.join(endpoint_kinds())}), not a {kind} target"
        )
    for spec in TARGETS:
        # A wrapping kind's own settings (``--guard-api-key-env``) mean nothing without it.
        given_own = [f for f in spec.flags if not f.selects and given.get(f.key)]
        if spec.wraps and given_own and out.get("kind") not in spec.kinds:
            selector = next((f.flag for f in spec.flags if f.selects), spec.kind)
            raise UsageError(
                f"{given_own[0].flag} sets up a {spec.kind} target: give {selector} too "
                f"(or a config file with kind: {spec.kind})"
            )


def target_keys_replaced(
    target: Mapping[str, Any], given: Mapping[str, str | None]
) -> list[tuple[str, str]]:
    """``(flag, key)`` for each key of the file's ``target:`` section a flag replaced
    (``--protocol NAME`` replaces the keys its protocol sets beside the kind, e.g. ``api``)."""
    replaced = [
        (flag.flag, flag.key)
        for flag in target_flags()
        if flag is not PROTOCOL and given.get(flag.key) and flag.key in target
    ]
    protocol = given.get(PROTOCOL.key)
    if protocol:
        for key, value in _protocol(protocol).items():
            if key != "kind" and key in target and target[key] != value:
                replaced.append((f"{PROTOCOL.flag} {protocol}", key))
    return replaced


def _kind_named(target: Mapping[str, Any], key: str = "kind") -> str | None:
    value = target.get(key)
    return value.strip().lower() if isinstance(value, str) else None


def _agent_kind(target: Mapping[str, Any]) -> str:
    """The kind of the agent under test a section describes (behind a wrapping kind, its own)."""
    kind = _kind_named(target) or DEFAULT_KIND
    spec = KINDS.spec(kind)
    if spec is None or not spec.wraps:
        return kind
    behind = _kind_named(target, "behind")
    if behind is not None:
        return behind
    field = spec.config.model_fields.get("behind")
    return str(field.get_default()) if field is not None else kind


def _described(target: Mapping[str, Any]) -> str:
    """How the file states its kind, in its own keys: ``target.kind: guard, behind: openai``."""
    kind = _kind_named(target) or DEFAULT_KIND
    agent = _agent_kind(target)
    return f"target.kind: {kind}" + (f", behind: {agent}" if agent != kind else "")


def _check_kind_kept(
    file_target: Mapping[str, Any],
    out: Mapping[str, Any],
    given: Mapping[str, str | None],
    source: str,
) -> None:
    """A flag that turns the file's agent into another kind is an error (see apply_flags)."""
    stated = _kind_named(file_target)
    if stated is None or KINDS.spec(stated) is None:
        return  # no kind written: the flags choose it; an unknown one: validation says so
    before, after = _agent_kind(file_target), _agent_kind(out)
    spec = KINDS.spec(after)
    if before == after or spec is None or not spec.live:
        return
    culprits = [PROTOCOL, *(f for s in TARGETS if not s.wraps for f in s.flags if f.selects)]
    flag = next((f for f in culprits if given.get(f.key)), ENDPOINT)
    shown = flag.flag if flag is ENDPOINT else f"{flag.flag} {given.get(flag.key)}"
    raise UsageError(
        f"{shown} makes the target kind {after}, but {source} says "
        f"{_described(file_target)}: a flag replaces one setting of the file, never its kind "
        f"(change target.kind in {source}, or give a config file of kind {after} with --config)"
    )


def _check_keys_taken(
    out: Mapping[str, Any],
    given: Mapping[str, str | None],
    file_target: Mapping[str, Any],
    source: str | None,
) -> None:
    """A flag whose key the resulting kind does not take would be dropped silently: an error."""
    kind = _kind_named(out) or DEFAULT_KIND
    agent = _agent_kind(out)
    specs = [s for s in (KINDS.spec(kind), KINDS.spec(agent)) if s is not None]
    if not specs or KINDS.spec(kind) is None:
        return  # an unknown kind: validation says so
    taken = frozenset().union(*(s.config.yaml_keys() for s in specs))
    for flag in target_flags():
        if flag is PROTOCOL or not given.get(flag.key) or flag.key in taken:
            continue
        where = f" ({source} says {_described(file_target)})" if _kind_named(file_target) else ""
        raise UsageError(f"{flag.flag} is not a setting of a {agent} target{where}")


def reproducer_args(
    given: Mapping[str, str | None], positional: str | None, config_path: Path | None
) -> list[str]:
    """The target arguments a finding's reproducer passes: what the user gave, paths resolved."""
    args: list[str] = []
    if positional is not None:
        args.append(positional)
    if config_path is not None:
        resolved = str(config_path.resolve())
        args += ["--config", resolved] if positional is not None else [resolved]
    for flag in target_flags():
        value = given.get(flag.key)
        if value:
            args += [flag.flag, str(Path(value).resolve()) if flag.path else value]
    return args
