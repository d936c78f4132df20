"""``probegate run``'s flags as one validated :class:`RunConfig`, the way ``scan`` has its
:class:`~probegate.config.ScanConfig`: the command parses argv, this checks what argparse
cannot (the formats and their clashes), and :func:`probegate.scenarios.pipeline.execute_run`
takes the result and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from probegate.errors import UsageError
from probegate.scenarios.formats import EXCLUSIVE, FORMATS


@dataclass(frozen=True)
class RunConfig:
    """Every setting of one ``probegate run``."""

    path: Path  # a suite file, or a directory searched recursively
    adapter: str | None  # MODULE:ATTR; None: agenticassure.yaml or .toml in the cwd names it
    formats: tuple[str, ...]  # names of scenarios.formats.FORMATS, each once
    output_dir: Path
    suite: str | None
    tags: tuple[str, ...]
    dry_run: bool
    # None: the suite's config (timeout, retries) decides, else the runner's default.
    timeout: float | None
    retries: int | None
    retry_delay: float
    fail_under_pass_rate: float | None
    baselines: tuple[Path, ...]  # --compare, one per suite


def parse_formats(values: Sequence[str] | None) -> tuple[str, ...]:
    """``--output json,md -o junit`` -> the names, each once, in order (default json); an
    unknown name or two formats that write the same file are a :class:`UsageError`."""
    chosen: list[str] = []
    for value in values or ["json"]:
        for name in (part.strip() for part in value.split(",")):
            if not name:
                continue
            if name not in FORMATS:
                raise UsageError(
                    f"--output: unknown format {name!r} (choose from {', '.join(FORMATS)})"
                )
            if name not in chosen:
                chosen.append(name)
    clash = EXCLUSIVE.intersection(chosen)
    if len(clash) > 1:
        raise UsageError(
            f"--output: {' and '.join(sorted(clash))} both write results_{{run_id}}.json; "
            "choose one"
        )
    return tuple(chosen) or ("json",)
