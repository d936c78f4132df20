"""Writing suite files for tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

AGENTS = "tests.scenarios.agents"


def write_suite(directory: Path, name: str, scenarios: list[dict[str, Any]], **top: Any) -> Path:
    path = directory / f"{name}.yml"
    path.write_text(yaml.safe_dump({"suite": name, **top, "scenarios": scenarios}), "utf-8")
    return path
