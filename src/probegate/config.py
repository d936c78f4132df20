"""Flags + ``probegate.yml`` -> one validated :class:`ScanConfig`.

The config file is parsed once at the edge; every error is a :class:`ConfigError` naming the
file and the key. Flags win over the file's ``scan:`` section. Secrets never live here: the
file names environment variables (``api_key_env``), and only their values are read, late.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from probegate.errors import ConfigError
from probegate.models.taxonomy import Capability, Severity

DEFAULT_CONFIG = "probegate.yml"
TargetKind = Literal["demo", "demo-hardened", "openai", "http", "python", "replay", "guard"]


class ToolConfig(BaseModel):
    """A tool the agent under test declares (openai/http/python targets)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    capabilities: list[Capability] = Field(default_factory=list)
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class HttpConfig(BaseModel):
    """How to talk to an agent behind its own HTTP API."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["POST", "PUT", "GET"] = "POST"
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    headers_env: dict[str, str] = Field(default_factory=dict)
    body: Any = None
    response_text: str = "output"
    response_tool_calls: str | None = None


# What a runtime guard (``kind: guard``) can stand in front of. Not ``replay`` (recorded replies
# cannot react to a refusal) and not another guard.
GuardedKind = Literal["demo", "demo-hardened", "openai", "http", "python"]


class GuardIdentity(BaseModel):
    """The identity fields of every GuardEvent sent to the guard (the seed 004 runtime).

    A runtime resolves its policy by ``agent_id``; set these to what your deployed agent
    asserts so the scan meets the policy production traffic meets. Empty means "no assertion".
    """

    model_config = ConfigDict(extra="forbid")

    agent_id: str = ""
    agent_type: str = ""
    agent_workspace: str = ""
    agent_user: str = ""


class TargetConfig(BaseModel):
    """The ``target:`` section of ``probegate.yml`` (PRODUCT.md section 3)."""

    model_config = ConfigDict(extra="forbid")

    kind: TargetKind = "demo"
    endpoint: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    # header -> name of the environment variable holding its (secret) value
    headers_env: dict[str, str] = Field(default_factory=dict)
    # extra request body fields for the openai target (temperature, seed, max_tokens, ...)
    params: dict[str, Any] = Field(default_factory=dict)
    system_prompt: str | None = None
    max_turns: int = Field(default=4, ge=1, le=32)
    canaries: list[str] = Field(default_factory=list)
    canaries_env: list[str] = Field(default_factory=list)
    tools: list[ToolConfig] = Field(default_factory=list)
    http: HttpConfig | None = None
    python: str | None = None
    replay: str | None = None
    guard: str | None = None
    # kind: guard -- the agent behind the guard (default: demo, or demo-hardened when scanning
    # demo-hardened --guard URL), the variable holding the guard's API key, and its identity.
    behind: GuardedKind | None = None
    guard_api_key_env: str | None = None
    guard_identity: GuardIdentity = Field(default_factory=GuardIdentity)
    prices: dict[str, dict[str, float]] = Field(default_factory=dict)


class ScanConfig(BaseModel):
    """Every scan setting, whichever of flag or file it came from."""

    model_config = ConfigDict(extra="forbid")

    target: TargetConfig = Field(default_factory=TargetConfig)
    target_ref: str = "demo"
    config_path: Path | None = None
    base_dir: Path = Field(default_factory=Path.cwd)
    mode: Literal["fast", "smart", "full"] = "fast"
    asi: list[str] = Field(default_factory=list)
    probes: list[str] = Field(default_factory=list)
    probe_dirs: list[Path] = Field(default_factory=list)
    concurrency: int = Field(default=8, ge=1, le=1024)
    rps: float | None = Field(default=None, gt=0)
    timeout: float = Field(default=60.0, gt=0)
    retries: int = Field(default=3, ge=0, le=20)
    repeat: int | None = Field(default=None, ge=1, le=100)
    seed: int = 0
    budget_usd: float | None = Field(default=None, gt=0)
    max_requests: int | None = Field(default=None, ge=1)
    judge: str | None = None
    output: list[str] = Field(default_factory=lambda: ["json"])
    output_dir: Path = Path("probegate-out")
    fail_under: float | None = Field(default=None, ge=0, le=100)
    fail_on: Severity | None = None
    baseline: Path | None = None
    tolerance: float = Field(default=0.0, ge=0)
    allow_mismatch: bool = False
    suppressions: Path | None = None
    sign: bool | None = None
    signing_key: Path | None = None
    resume: str | None = None
    record: Path | None = None
    shard: str | None = None
    dry_run: bool = False
    store: Path = Path(".probegate")
    quiet: bool = False

    @field_validator("asi")
    @classmethod
    def _asi_ids(cls, value: list[str]) -> list[str]:
        from probegate.models.taxonomy import ASI_IDS

        out = []
        for item in value:
            for part in item.split(","):
                part = part.strip().upper()
                if not part:
                    continue
                if part not in ASI_IDS:
                    raise ValueError(f"unknown ASI category {part!r} (ASI01..ASI10)")
                out.append(part)
        return out

    @field_validator("shard")
    @classmethod
    def _shard_shape(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            k, n = (int(x) for x in value.split("/"))
        except ValueError:
            raise ValueError("--shard takes K/N, e.g. 1/4") from None
        if not 1 <= k <= n:
            raise ValueError("--shard K/N needs 1 <= K <= N")
        return value

    @property
    def effective_repeat(self) -> int:
        if self.repeat is not None:
            return self.repeat
        return 3 if self.mode == "full" else 1


def read_config_file(path: Path) -> dict[str, Any]:
    """Parse the YAML file into a plain mapping; one clear error for any problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(f"config file {path} is not valid YAML{where}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: expected a mapping with 'target:' and 'scan:'")
    unknown = set(data) - {"target", "scan"}
    if unknown:
        raise ConfigError(
            f"config file {path}: unknown top-level key(s) {', '.join(sorted(unknown))}"
        )
    return data


def build_config(file_data: dict[str, Any], flags: dict[str, Any], *, source: str) -> ScanConfig:
    """Merge the file's ``scan:`` section under the flags and validate everything once."""
    scan_section = file_data.get("scan") or {}
    if not isinstance(scan_section, dict):
        raise ConfigError(f"{source}: 'scan:' must be a mapping of scan settings")
    merged: dict[str, Any] = {k.replace("-", "_"): v for k, v in scan_section.items()}
    merged.update({k: v for k, v in flags.items() if v is not None})
    if "target" in file_data:
        merged["target"] = file_data["target"] or {}
    try:
        return ScanConfig.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{source}: {loc}: {msg}") from None
