"""Suite files -> validated :class:`Suite` objects, or one :class:`UsageError` line (exit 2).

This is the edge: everything after it works on models that are known to be runnable. Suite
files are AgenticAssure 0.4's (the ``suite: {name, description, config}`` mapping and every
scenario field it documents) or probegate's earlier short form; a directory is searched
recursively, as AgenticAssure does.

Three kinds of finding, kept apart on purpose:

- a file AgenticAssure would refuse too (bad YAML, unknown keys, wrong types) is a usage error;
- so is an unknown scorer name, or a scenario name used twice in a suite (names are the key of
  ``--compare`` and of the JUnit test case), or a suite name used twice in a run;
- a scenario that loads but can never pass (``regex`` without ``metadata.regex_pattern``,
  ``scorers: []``...) runs and fails exactly as in AgenticAssure, and the loader says why in a
  warning before the agent is called once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from probegate.errors import UsageError
from probegate.files import read_yaml
from probegate.scenarios.models import (
    SUITE_MAPPING,
    SUITE_NAME,
    Scenario,
    SuiteConfig,
    SuiteFile,
    SuiteHeader,
)
from probegate.scenarios.scorers import SCORERS, Refused
from probegate.validation import describe

SUFFIXES = (".yml", ".yaml")
# Configuration files that live beside suites and are not suites themselves.
CONFIG_FILES = frozenset({"agenticassure.yaml", "probegate.yml"})
DEFAULT_SCORERS = ["passfail"]
# Which form of `suite:` pydantic tried: a label in the error location, not a field.
_UNION_BRANCHES = (SUITE_MAPPING, SUITE_NAME)


@dataclass(frozen=True)
class Suite:
    """One suite file, validated, with what the loader noticed about it."""

    name: str
    path: Path
    scenarios: tuple[Scenario, ...]
    description: str | None = None
    config: SuiteConfig = field(default_factory=SuiteConfig)
    warnings: tuple[str, ...] = ()


def suite_files(path: Path) -> list[Path]:
    """PATH as given: one file, or every ``*.yml``/``*.yaml`` file below a directory.

    Hidden directories (``.git``, ``.venv``, ``.github``) and the configuration files in
    :data:`CONFIG_FILES` are skipped: they are never suites.
    """
    if path.is_dir():
        files = sorted(
            p
            for p in path.rglob("*")
            if p.suffix in SUFFIXES
            and p.is_file()
            and p.name not in CONFIG_FILES
            and not any(part.startswith(".") for part in p.relative_to(path).parts[:-1])
        )
        if not files:
            raise UsageError(f"{path}: no suite files (*.yml, *.yaml) in this directory")
        return files
    if path.is_file():
        return [path]
    raise UsageError(f"{path}: no such file or directory")


def load_suites(path: Path) -> list[Suite]:
    """Every suite under PATH, in path order."""
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
        raise UsageError(f"{path}: {describe(exc, data=data, hidden=_UNION_BRANCHES)}") from None
    header = parsed.suite if isinstance(parsed.suite, SuiteHeader) else None
    config = header.config if header is not None else SuiteConfig()
    warnings: list[str] = []
    names: set[str] = set()
    for index, scenario in enumerate(parsed.scenarios):
        where = f"scenarios[{index}] ({scenario.name!r})"
        if scenario.name in names:
            raise UsageError(f"{path}: {where}.name: duplicate scenario name in this suite")
        names.add(scenario.name)
        warnings += _scorer_warnings(path, where, scenario)
    warnings += _default_scorers_note(path, config, parsed.scenarios)
    return Suite(
        name=_suite_name(path, parsed, header),
        path=path,
        scenarios=tuple(parsed.scenarios),
        description=header.description if header is not None else parsed.description,
        config=config,
        warnings=tuple(warnings),
    )


def _suite_name(path: Path, parsed: SuiteFile, header: SuiteHeader | None) -> str:
    """The suite's name, from ``suite:`` (a mapping or AgenticAssure's short string), the
    top-level ``name:``, or the file's name; the two forms never disagree."""
    if header is not None and (parsed.name is not None or parsed.description is not None):
        top = "name" if parsed.name is not None else "description"
        raise UsageError(f"{path}: {top}: write it as suite.{top} in the suite: mapping")
    short = parsed.suite if isinstance(parsed.suite, str) else None
    if short and parsed.name and short != parsed.name:
        raise UsageError(f"{path}: name: {parsed.name!r} differs from suite: {short!r}")
    return header.name if header is not None else short or parsed.name or path.stem


def _scorer_warnings(path: Path, where: str, scenario: Scenario) -> list[str]:
    """Every scorer of the scenario must exist and may refuse it (exit 2) or warn that it
    will fail; a scenario with no scorer fails, as in AgenticAssure."""
    warnings: list[str] = []
    for scorer_name in scenario.scorers:
        scorer = SCORERS.get(scorer_name)
        if scorer is None:
            raise UsageError(f"{path}: {where}.scorers: {_unknown(scorer_name)}")
        try:
            problems = scorer.problems(scenario)
        except Refused as exc:
            raise UsageError(f"{path}: {where}.{exc.field}: {exc.message}") from None
        warnings += [
            f"{path}: {where}.{field}: {problem}; the scenario will fail"
            for field, problem in problems
        ]
    if not scenario.scorers:
        warnings.append(
            f"{path}: {where}.scorers: empty; a scenario with no scorer fails (as in AgenticAssure)"
        )
    return warnings


def _unknown(scorer_name: str) -> str:
    known = ", ".join(sorted(SCORERS))
    return f"unknown scorer {scorer_name!r} (known: {known})"


def _default_scorers_note(path: Path, config: SuiteConfig, scenarios: list[Scenario]) -> list[str]:
    """``config.default_scorers`` is accepted but, as in AgenticAssure 0.4, never applied."""
    chosen = config.default_scorers
    if chosen is None or chosen == DEFAULT_SCORERS:
        return []
    unset = [s.name for s in scenarios if "scorers" not in s.model_fields_set]
    if not unset:
        return []
    return [
        f"{path}: suite.config.default_scorers: {chosen} is not applied (AgenticAssure 0.4 "
        f"does not apply it either): {len(unset)} scenario(s) without scorers: use "
        f"{DEFAULT_SCORERS}; list the scorers on each scenario instead"
    ]


def select(suites: list[Suite], suite_name: str | None, tags: list[str]) -> list[Suite]:
    """The suites and scenarios ``--suite`` and ``--tag`` pick, as AgenticAssure picks them.

    ``--suite`` keeps the suite of that name; ``--tag`` (repeatable) keeps the scenarios that
    have at least one of the tags. A suite left with no scenario is not run. Picking nothing
    at all is a usage error: a typo in a tag must not pass CI with zero scenarios run.
    """
    if suite_name is not None:
        picked = [s for s in suites if s.name == suite_name]
        if not picked:
            names = ", ".join(s.name for s in suites)
            raise UsageError(f"--suite: no suite named {suite_name!r} (suites: {names})")
        suites = picked
    if not tags:
        return suites
    wanted = set(tags)
    chosen: list[Suite] = []
    for suite in suites:
        kept = tuple(s for s in suite.scenarios if wanted.intersection(s.tags))
        if kept:
            chosen.append(replace(suite, scenarios=kept))
    if not chosen:
        raise UsageError(f"--tag: no scenario is tagged {' or '.join(sorted(wanted))}")
    return chosen


def _read_yaml(path: Path) -> Any:
    data = read_yaml(path)
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise UsageError(
            f"{path}: the file is {kind}; expected a mapping with suite: and scenarios:"
        )
    return data
