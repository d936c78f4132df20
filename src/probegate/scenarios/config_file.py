"""The adapter named in AgenticAssure's project file, for ``probegate run`` without ``--adapter``.

AgenticAssure reads ``adapter:`` from ``agenticassure.yaml`` in the current directory, or from
``agenticassure.toml`` when there is no YAML file; the ``--adapter`` flag wins over both. Its
value is a dotted path (``mymodule.MyAgent``), which ``--adapter`` accepts as it is.

Unlike AgenticAssure, which ignores a file it cannot parse, a broken file is a usage error
(exit 2) naming the file: a typo there must not look like "no adapter configured".
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probegate.errors import UsageError
from probegate.files import parse_yaml, read_text

FILES = ("agenticassure.yaml", "agenticassure.toml")


@dataclass(frozen=True)
class ConfiguredAdapter:
    spec: str
    source: Path


def configured_adapter(directory: Path) -> ConfiguredAdapter | None:
    """The ``adapter`` of the first project file in ``directory`` that sets one."""
    for name in FILES:
        path = directory / name
        if not path.is_file():
            continue
        data = _read(path)
        value = data.get("adapter")
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"{path}: adapter: expected a dotted path such as my_agent.MyAgent")
        return ConfiguredAdapter(value.strip(), path)
    return None


def _read(path: Path) -> dict[str, Any]:
    text = read_text(path)
    if path.suffix == ".toml":
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            problem = " ".join(str(exc).split())
            raise UsageError(f"{path}: invalid TOML: {problem}") from None
    else:
        data = parse_yaml(text, source=str(path))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a mapping with adapter:")
    return data
