"""Suite files -> validated :class:`Suite` objects, or one :class:`UsageError` line (exit 2).

This is the edge: everything after it works on models that are known to be runnable. Besides
the shape (pydantic), the loader checks what only makes sense across fields or files: every
scorer named exists and has the fields it needs, scenario names are unique in a suite (they are
the key of a baseline comparison and of the JUnit test case), and suite names are unique in a
run (each suite gets its own ``results_{run_id}.json``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from probegate.errors import UsageError
from probegate.scenarios.models import Scenario, SuiteFile
from probegate.scenarios.scorers import SCORERS

SUFFIXES = (".yml", ".yaml")


@dataclass(frozen=True)
class Suite:
    """One suite file, validated."""

    name: str
    path: Path
    scenarios: tuple[Scenario, ...]
    description: str | None = None


def suite_files(path: Path) -> list[Path]:
    """PATH as given: one file, or the ``*.yml``/``*.yaml`` files directly in a directory."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in SUFFIXES)
        if not files:
            raise UsageError(f"{path}: no suite files (*.yml, *.yaml) in this directory")
        return files
    if path.is_file():
        return [path]
    raise UsageError(f"{path}: no such file or directory")


def load_suites(path: Path) -> list[Suite]:
    """Every suite under PATH, in file-name order."""
    suites: list[Suite] = []
    seen: dict[str, Path] = {}
    for file in suite_files(path):
        suite = load_suite(file)
        if suite.name in seen:
            raise UsageError(
                f"{file}: suite: name {suite.name!r} is already used by {seen[suite.name]}"
            )
        seen[suite.name] = file
        suites.append(suite)
    return suites


def load_suite(path: Path) -> Suite:
    """Read and validate one suite file."""
    data = _read_yaml(path)
    try:
        parsed = SuiteFile.model_validate(data)
    except ValidationError as exc:
        raise UsageError(f"{path}: {_describe(exc, data)}") from None
    if parsed.suite and parsed.name and parsed.suite != parsed.name:
        raise UsageError(f"{path}: name: {parsed.name!r} differs from suite: {parsed.suite!r}")
    name = parsed.suite or parsed.name or path.stem
    names: set[str] = set()
    for index, scenario in enumerate(parsed.scenarios):
        where = f"scenarios[{index}] ({scenario.name!r})"
        if scenario.name in names:
            raise UsageError(f"{path}: {where}.name: duplicate scenario name in this suite")
        names.add(scenario.name)
        for scorer_name in scenario.scorers:
            scorer = SCORERS.get(scorer_name)
            if scorer is None:
                known = ", ".join(sorted(SCORERS))
                raise UsageError(
                    f"{path}: {where}.scorers: unknown scorer {scorer_name!r} (known: {known})"
                )
            for field, problem in scorer.problems(scenario):
                raise UsageError(f"{path}: {where}.{field}: {problem}")
    return Suite(
        name=name,
        path=path,
        scenarios=tuple(parsed.scenarios),
        description=parsed.description,
    )


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise UsageError(f"{path}: invalid YAML: {problem}{where}") from None
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise UsageError(
            f"{path}: the file is {kind}; expected a mapping with suite: and scenarios:"
        )
    return data


def _describe(exc: ValidationError, data: Any) -> str:
    """The first validation error as ``scenarios[2] ('name').field: message``."""
    errors = exc.errors()
    first = errors[0]
    loc = list(first["loc"])
    parts: list[str] = []
    node: Any = data
    for key in loc:
        if isinstance(key, int):
            part = f"[{key}]"
            item = node[key] if isinstance(node, list) and key < len(node) else None
            if (
                parts == ["scenarios"]
                and isinstance(item, dict)
                and isinstance(item.get("name"), str)
            ):
                part += f" ({item['name']!r})"
            parts.append(part)
            node = item
        else:
            parts.append(("." if parts else "") + str(key))
            node = node.get(key) if isinstance(node, dict) else None
    field = "".join(parts) or "(top level)"
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "unknown field"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{field}: {message}{more}"
