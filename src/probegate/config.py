"""Flags + ``probegate.yml`` -> one validated :class:`ScanConfig`.

The config file is parsed once at the edge; every error is a :class:`ConfigError` naming the
file and the key. Flags win over the file's ``scan:`` section. The ``target:`` section is
parsed as its kind's own config (each kind's module declares it; ``targets/registry.py`` lists
the kinds), so this module sits above the targets. Secrets never live here: the file names
environment variables (``api_key_env``), and only their values are read, late.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from probegate.errors import ConfigError
from probegate.files import read_yaml
from probegate.models.shard import parse_shard
from probegate.models.taxonomy import Severity
from probegate.targets.base import TargetConfig, TargetSettings
from probegate.targets.mcp_server import DEFAULT_LISTEN, parse_advertise, parse_listen
from probegate.targets.registry import default_target, parse_target
from probegate.validation import describe

DEFAULT_CONFIG = "probegate.yml"
# Fields the command line sets from where the target came from; never a ``scan:`` setting.
_NOT_SCAN_SETTINGS = frozenset({"target", "target_args", "config_path", "base_dir"})


class ScanConfig(BaseModel):
    """Every scan setting, whichever of flag or file it came from."""

    model_config = ConfigDict(extra="forbid")

    target: TargetConfig = Field(default_factory=default_target)
    # The target as the command line named it, for a finding's reproducer (registry).
    target_args: list[str] = Field(default_factory=list)
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
    # probegate's MCP server (docs/agent-service.md): where it listens, what the agent is told.
    mcp_listen: str = DEFAULT_LISTEN
    mcp_advertise: str | None = None

    @field_validator("target", mode="before")
    @classmethod
    def _target_of_its_kind(cls, value: Any) -> TargetConfig:
        return parse_target(value)

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

    @field_validator("mcp_listen")
    @classmethod
    def _listen_address(cls, value: str) -> str:
        parse_listen(value)
        return value

    @field_validator("mcp_advertise")
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
        )

    @property
    def effective_repeat(self) -> int:
        if self.repeat is not None:
            return self.repeat
        return 3 if self.mode == "full" else 1


def read_config_file(path: Path) -> dict[str, Any]:
    """Parse the YAML file into a plain mapping; one clear error for any problem."""
    data = read_yaml(path, what="config file", error=ConfigError)
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
    inner = sorted(_NOT_SCAN_SETTINGS & set(merged))
    if inner:
        raise ConfigError(f"{source}: scan.{inner[0]}: not a scan setting")
    merged.update({k: v for k, v in flags.items() if v is not None})
    if "target" in file_data:
        merged["target"] = file_data["target"] or {}
    try:
        return ScanConfig.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {describe(exc, data=merged)}") from None
