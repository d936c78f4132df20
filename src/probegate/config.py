"""Flags + ``probegate.yml`` -> one validated :class:`ScanConfig`.

The config file is parsed once at the edge; every error is a :class:`ConfigError` naming the
file and the key's full path (``scan.mode``, ``target.tools[0].name``), with a did-you-mean for
a mistyped key. A flag wins over its own key of the file's ``scan:`` section and the others
still apply; every scan flag can live there in the forms the command line takes (``output:
json,md``, ``asi: ASI01``, ``probes: 'asi01*'``; choices in any case). Paths in the file are
relative to the file, paths on the command line to where the user stands (docs/targets.md).
The ``target:`` section is parsed as its kind's own config (each kind's module declares it;
``targets/registry.py`` lists the kinds), so this module sits above the targets. Secrets never
live here: the file names environment variables (``api_key_env``), and only their values are
read, late.

Paths in the file are confined to its directory tree: a config is often written by whoever
opens a pull request, and ``system_prompt: /proc/self/environ`` would otherwise send the CI
job's environment to the endpoint. ``--allow-outside-config`` (a flag, never a file setting)
lifts that; paths given as flags are the user's own and never confined.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, assert_never

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from probegate.errors import ConfigError
from probegate.files import read_yaml
from probegate.models.report import Mode
from probegate.models.shard import parse_shard
from probegate.models.taxonomy import Severity
from probegate.scan_flags import BY_FIELD, SCAN_FLAGS, path_fields
from probegate.targets.base import TargetConfig, TargetSettings
from probegate.targets.mcp_server import DEFAULT_LISTEN
from probegate.targets.registry import KINDS, default_target, parse_target, target_flags
from probegate.transport.addresses import parse_advertise, parse_listen
from probegate.validation import all_problems, did_you_mean, fields_at

DEFAULT_CONFIG = "probegate.yml"
DEFAULT_STORE = ".probegate"
DEFAULT_OUTPUT_DIR = "probegate-out"
# Confirm runs of a finding: more than ten times its attempts again costs more than a scan
# with a higher --repeat, which measures every probe.
MAX_CONFIRM = 10
# Fields the command line sets from where the target came from; never a ``scan:`` setting.
# Every other field is one row's of the scan flag table (scan_flags.py; a test holds the two).
NOT_SCAN_SETTINGS = frozenset({"target", "target_args", "config_path", "base_dir", "invocation"})
ALLOW_OUTSIDE_FLAG = "--allow-outside-config"


def _split_list(value: Any) -> Any:
    """``"a,b"`` or ``["a,b", "c"]`` -> ``["a", "b", "c"]``: a flag's comma list, in a file too."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return value
    out: list[Any] = []
    for item in value:
        if isinstance(item, str):
            out += [part.strip() for part in item.split(",") if part.strip()]
        else:
            out.append(item)
    return out


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


class ScanConfig(BaseModel):
    """Every scan setting, whichever of flag or file it came from."""

    model_config = ConfigDict(extra="forbid")

    target: TargetConfig = Field(default_factory=default_target)
    # The target as the command line named it, for a finding's reproducer (registry).
    target_args: list[str] = Field(default_factory=list)
    config_path: Path | None = None
    base_dir: Path = Field(default_factory=Path.cwd)
    mode: Mode = Mode.FAST
    # Only this variant of each probe (a reproducer's ``--variant``): seed or a mutator's name.
    variant: str | None = None
    asi: list[str] = Field(default_factory=list)
    probes: list[str] = Field(default_factory=list)
    probe_dirs: list[Path] = Field(default_factory=list)
    # An external benchmark's task pairs instead of the library: ``agentdojo[:SUITE,...]``
    # (docs/agentdojo.md; the optional extra ``probegate[agentdojo]``).
    suite: str | None = None
    concurrency: int = Field(default=8, ge=1, le=1024)
    rps: float | None = Field(default=None, gt=0)
    timeout: float = Field(default=60.0, gt=0)
    retries: int = Field(default=3, ge=0, le=20)
    # The whole scan's time (docs/targets.md, "Deadline"): none by default, a CI job has its
    # own; and the seconds it may spend paused on Retry-After in total.
    deadline: float | None = Field(default=None, gt=0)
    max_wait: float = Field(default=300.0, ge=0)
    repeat: int | None = Field(default=None, ge=1, le=100)
    seed: int = 0
    budget_usd: float | None = Field(default=None, gt=0)
    allow_unpriced: bool = False
    max_requests: int | None = Field(default=None, ge=1)
    judge: str | None = None
    # Check each vulnerable verdict against a control (docs/scoring.md); off is not authoritative.
    controls: bool = True
    output: list[str] = Field(default_factory=lambda: ["json"])
    output_dir: Path = Path(DEFAULT_OUTPUT_DIR)
    fail_under: float | None = Field(default=None, ge=0, le=100)
    fail_on: Severity | None = None
    baseline: Path | None = None
    tolerance: float = Field(default=0.0, ge=0)
    allow_mismatch: bool = False
    # With a baseline: run the probes of the findings it lacked (or held less often) this many
    # more times before the gate decides on the pooled counts (docs/gating.md).
    confirm: int = Field(default=0, ge=0, le=MAX_CONFIRM)
    suppressions: Path | None = None
    sign: bool | None = None
    signing_key: Path | None = None
    resume: str | None = None
    record: Path | None = None
    shard: str | None = None
    dry_run: bool = False
    store: Path = Path(DEFAULT_STORE)
    quiet: bool = False
    # probegate's MCP server (docs/agent-service.md): where it listens, what the agent is told.
    mcp_listen: str = DEFAULT_LISTEN
    mcp_advertise: str | None = None
    # probegate's A2A peers (docs/scan-your-agent/a2a.md): the same, for agents calling agents.
    a2a_listen: str = DEFAULT_LISTEN
    a2a_advertise: str | None = None
    # The command line as data, kept with the scan so ``--resume SCAN_ID`` needs nothing else.
    invocation: dict[str, Any] = Field(default_factory=dict)

    @field_validator("target", mode="before")
    @classmethod
    def _target_of_its_kind(cls, value: Any) -> TargetConfig:
        return parse_target(value)

    @field_validator("output", "asi", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        return _split_list(value)

    @field_validator("probes", mode="before")
    @classmethod
    def _globs(cls, value: Any) -> Any:
        # Probe ids are lower case, so a glob is matched in any case, like every choice.
        value = _split_list(value)
        return [_lower(v) for v in value] if isinstance(value, list) else value

    @field_validator("probe_dirs", mode="before")
    @classmethod
    def _one_or_more(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("mode", "fail_on", "variant", mode="before")
    @classmethod
    def _any_case(cls, value: Any) -> Any:
        return _lower(value)

    @field_validator("variant")
    @classmethod
    def _known_variant(cls, value: str | None) -> str | None:
        from probegate.library.mutators import MUTATORS, SEED_VARIANT

        known = [SEED_VARIANT, *sorted(MUTATORS)]
        if value is not None and value not in known:
            raise ValueError(
                f"unknown variant {value!r}{did_you_mean(value, known)} (one of {', '.join(known)})"
            )
        return value

    @field_validator("asi")
    @classmethod
    def _asi_ids(cls, value: list[str]) -> list[str]:
        from probegate.models.taxonomy import ASI_IDS, unknown_asi

        out = []
        for item in value:
            for part in item.split(","):
                part = part.strip().upper()
                if not part:
                    continue
                if part not in ASI_IDS:
                    raise ValueError(unknown_asi(part))
                out.append(part)
        return out

    @field_validator("mcp_listen", "a2a_listen")
    @classmethod
    def _listen_address(cls, value: str) -> str:
        parse_listen(value)
        return value

    @field_validator("mcp_advertise", "a2a_advertise")
    @classmethod
    def _advertised_url(cls, value: str | None) -> str | None:
        return None if value is None else parse_advertise(value)

    @field_validator("shard")
    @classmethod
    def _shard_shape(cls, value: str | None) -> str | None:
        return None if value is None else str(parse_shard(value))

    def target_settings(self) -> TargetSettings:
        """The scan-wide settings a target gets; the rest of the config is not its business."""
        return TargetSettings(
            timeout=self.timeout,
            retries=self.retries,
            concurrency=self.concurrency,
            seed=self.seed,
            base_dir=self.base_dir,
            config_path=self.config_path,
            mcp_listen=self.mcp_listen,
            mcp_advertise=self.mcp_advertise,
            a2a_listen=self.a2a_listen,
            a2a_advertise=self.a2a_advertise,
            store=self.store,
        )

    @property
    def effective_repeat(self) -> int:
        if self.repeat is not None:
            return self.repeat
        match self.mode:
            case Mode.FULL:
                return 3
            case Mode.FAST | Mode.SMART:
                return 1
            case _:
                assert_never(self.mode)


def read_config_file(path: Path, *, allow_outside: bool = False) -> dict[str, Any]:
    """Parse the YAML file into a plain mapping; one clear error for any problem.

    Its paths (the target's path settings and the scan's, scan_flags.py) come back
    absolute, resolved against the file's directory with symlinks followed; one that leads out
    of that directory tree is a :class:`ConfigError` unless ``allow_outside``. Keys the file
    may not hold are left for :func:`build_config`, which reports them with every other
    problem of the file in one run.
    """
    data = read_yaml(path, what="config file", error=ConfigError)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: expected a mapping with 'target:' and 'scan:'")
    return _confined(data, path, allow_outside)


def _confined(data: dict[str, Any], path: Path, allow_outside: bool) -> dict[str, Any]:
    """``data`` with every path setting of the file resolved and confined (read_config_file)."""
    base = path.parent.resolve()
    settings = scan_settings()
    path_keys = {
        "target": {f.key for f in target_flags() if f.path},
        "scan": set(path_fields()),
    }
    out = dict(data)
    for section, keys in path_keys.items():
        values = data.get(section)
        if not isinstance(values, dict):
            continue  # validation says what is wrong with it
        confined = dict(values)
        for raw_key, value in values.items():
            key = str(raw_key).replace("-", "_")
            if settings.get(key, key) in keys:
                where = f"{path}: {section}.{raw_key}"
                confined[raw_key] = _confine(value, base, where, allow_outside)
        out[section] = confined
    return out


def _confine(value: Any, base: Path, where: str, allow_outside: bool) -> Any:
    """A path setting of the file as an absolute path inside ``base`` (see the module doc)."""
    if isinstance(value, list):
        return [_confine(item, base, where, allow_outside) for item in value]
    if not isinstance(value, str) or not value:
        return value  # not a path: validation says so
    try:
        resolved = (base / Path(value).expanduser()).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL byte
        raise ConfigError(f"{where}: cannot resolve {value!r}: {exc}") from None
    if not allow_outside and not resolved.is_relative_to(base):
        raise ConfigError(
            f"{where}: {value!r} leads outside the config file's directory {base}"
            f"{' (through a symlink)' if _through_symlink(base, value) else ''}; "
            f"move it under that directory, or pass {ALLOW_OUTSIDE_FLAG} to allow it"
        )
    return os.fspath(resolved)


def _through_symlink(base: Path, value: str) -> bool:
    lexical = Path(os.path.normpath(base / Path(value).expanduser()))
    return lexical.is_relative_to(base)


def scan_settings() -> dict[str, str]:
    """The names a ``scan:`` section accepts (the field, or the flag's long name where it
    differs; ``_`` or ``-``) -> field."""
    names = {row.field: row.field for row in SCAN_FLAGS}
    names.update({row.key: row.field for row in SCAN_FLAGS})
    return names


def flag_name(field: str) -> str:
    """The command-line flag that sets a :class:`ScanConfig` field."""
    row = BY_FIELD.get(field)
    return row.flag if row is not None else "--" + field.replace("_", "-")


def scan_settings_replaced(file_data: dict[str, Any], flags: dict[str, Any]) -> list[str]:
    """The fields of the file's ``scan:`` section a flag replaces (both set: the flag wins)."""
    section = file_data.get("scan")
    if not isinstance(section, dict):
        return []
    accepted = scan_settings()
    fields = (accepted.get(str(key).replace("-", "_")) for key in section)
    return [f for f in fields if f is not None and flags.get(f) is not None]


def _file_settings(
    scan_section: dict[Any, Any], base_dir: Path
) -> tuple[dict[str, Any], list[str]]:
    """The ``scan:`` section as fields with every path made absolute, and what is wrong in it
    (each key the section may not hold, as ``scan.key: reason``)."""
    accepted = scan_settings()
    target_keys = {f.key for f in target_flags()}
    merged: dict[str, Any] = {}
    problems: list[str] = []
    for raw_key, value in scan_section.items():
        key = str(raw_key).replace("-", "_")
        if key in NOT_SCAN_SETTINGS:
            problems.append(f"scan.{raw_key}: not a scan setting")
        elif key in target_keys:
            problems.append(
                f"scan.{raw_key}: a target setting; write it under target: (target.{key})"
            )
        elif key not in accepted:
            problems.append(f"scan.{raw_key}: unknown setting{did_you_mean(key, accepted)}")
        else:
            merged[accepted[key]] = value
    for key in path_fields():
        if key in merged:
            merged[key] = _against(base_dir, merged[key])
    return merged, problems


def _against(base_dir: Path, value: Any) -> Any:
    """A path setting of the file (or each of a list of them) relative to ``base_dir``."""
    if isinstance(value, list):
        return [_against(base_dir, item) for item in value]
    return str(base_dir / Path(value).expanduser()) if isinstance(value, str) else value


_SECTIONS = ("target", "scan")


def build_config(file_data: dict[str, Any], flags: dict[str, Any], *, source: str) -> ScanConfig:
    """Merge the file's ``scan:`` section under the flags and validate everything once.

    Every problem is reported in one run (a file with two typos names both), each where the
    user wrote it: ``scan.key`` or ``target.key`` of the file, or the ``--flag``.
    """
    in_file: list[str] = [
        f"{key}: unknown top-level key{did_you_mean(str(key), _SECTIONS) or _SECTIONS_HINT}"
        for key in file_data
        if key not in _SECTIONS
    ]
    scan_section = file_data.get("scan") or {}
    if not isinstance(scan_section, dict):
        in_file.append("scan: must be a mapping of scan settings")
        scan_section = {}
    base_dir = Path(flags.get("base_dir") or Path.cwd())
    merged, scan_problems = _file_settings(scan_section, base_dir)
    in_file += scan_problems
    from_flags = {k for k, v in flags.items() if v is not None and k not in NOT_SCAN_SETTINGS}
    merged.update({k: v for k, v in flags.items() if v is not None})
    if "target" in file_data:
        merged["target"] = file_data["target"] or {}
    on_line: list[str] = []
    try:
        config = ScanConfig.model_validate(merged)
    except ValidationError as exc:
        for from_file, line in _explain(exc, merged, from_flags):
            (in_file if from_file else on_line).append(line)
    if in_file or on_line:
        raise ConfigError(_problems_message(source, in_file, on_line))
    return config


_SECTIONS_HINT = " (a config file holds target: and scan:)"


def _problems_message(source: str, in_file: list[str], on_line: list[str]) -> str:
    """One problem as one line; several as a count and one indented line each."""
    lines = [f"{source}: {line}" for line in in_file] + on_line
    if len(lines) == 1:
        return lines[0]
    if not on_line:
        return f"{source}: {len(in_file)} problems:\n" + "\n".join(f"  {p}" for p in in_file)
    return f"{len(lines)} problems:\n" + "\n".join(f"  {line}" for line in lines)


def _fields_where(loc: tuple[int | str, ...], merged: dict[str, Any]) -> frozenset[str]:
    """The keys that may stand at ``loc``: the target's are its kind's own."""
    if loc[:1] != ("target",):
        return fields_at(ScanConfig, loc)
    target = merged.get("target")
    kind = target.get("kind", "demo") if isinstance(target, dict) else None
    spec = KINDS.spec(_lower(kind)) if isinstance(kind, str) else None
    return fields_at(spec.config, loc[1:]) if spec is not None else frozenset()


def _explain(
    exc: ValidationError, merged: dict[str, Any], from_flags: set[str]
) -> list[tuple[bool, str]]:
    """Every problem as the user wrote it, and whether it is the file's: ``--flag: reason``,
    ``scan.key: reason`` or ``target.key: reason``."""
    out: list[tuple[bool, str]] = []
    for problem in all_problems(exc, data=merged, fields=lambda loc: _fields_where(loc, merged)):
        head = str(problem.loc[0]) if problem.loc else ""
        if head == "target":
            out.append((True, f"{problem.path}: {problem.reason}"))
        elif head in from_flags:
            out.append((False, f"{flag_name(head)}: {problem.reason}"))
        else:
            out.append((True, f"scan.{problem.path}: {problem.reason}"))
    return out
