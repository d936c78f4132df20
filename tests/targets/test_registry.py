"""The registry, the config schema and docs/targets.md name the same target kinds."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from probegate.config import TargetKind
from probegate.targets.registry import TARGET_KINDS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "targets.md"


def test_registry_matches_the_config_schema() -> None:
    assert set(TARGET_KINDS) == set(typing.get_args(TargetKind))


def test_every_kind_is_documented_with_a_row() -> None:
    text = DOCS.read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([a-z-]+)`", text, re.MULTILINE))
    rows |= set(re.findall(r"^\| `demo`, `([a-z-]+)`", text, re.MULTILINE))
    assert rows == set(TARGET_KINDS)
    for kind in ("openai", "http", "python"):
        assert re.search(rf"```yaml\ntarget:\n  kind: {kind}\n", text), kind
