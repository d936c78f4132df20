"""``probegate probes lint DIR``: every problem of a directory of custom probes, in one run.

Loading a library stops at the first bad field of the first bad file, which is right for a scan
(it must not start on a half-read library) and slow for someone writing probes: fix one, run
again, meet the next. Lint reads every file, validates each against the same model the loader
uses, and reports every error with its file, line and field path, plus what only a directory
shows: a file named after another id, an id used twice or already in the bundled library, a
MITRE ATLAS id that is well formed but not a technique (docs/custom-probes.md).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from probegate.errors import UsageError
from probegate.files import parse_yaml_document, read_text
from probegate.library.loader import load_atlas
from probegate.library.oracles import ORACLE_KINDS
from probegate.library.probe import Probe
from probegate.validation import field_path

# The oracle kinds: pydantic puts a union's branch label in an error's location.
_ORACLE_KINDS = frozenset(ORACLE_KINDS)


@dataclass(frozen=True)
class LintProblem:
    """One problem: where (file, line, field) and what is wrong."""

    path: Path
    line: int | None
    field: str
    reason: str

    def text(self, base: Path | None = None) -> str:
        shown = self.path
        if base is not None:
            with contextlib.suppress(ValueError):
                shown = self.path.relative_to(base)
        where = f"{shown}:{self.line}" if self.line else str(shown)
        return f"{where}: {self.field + ': ' if self.field else ''}{self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.path.as_posix(),
            "line": self.line,
            "field": self.field,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class LintResult:
    files: int
    probes: list[Probe]
    problems: list[LintProblem]


def lint_directory(directory: Path, *, known_ids: Iterable[str] = ()) -> LintResult:
    """Every problem of every probe file in ``directory``; ``known_ids`` are taken already."""
    if not directory.is_dir():
        raise UsageError(f"{directory}: not a directory of probe files")
    files = sorted(directory.glob("*.yaml"))
    problems: list[LintProblem] = []
    for stray in sorted(directory.glob("*.yml")):
        problems.append(
            LintProblem(stray, None, "", "ignored: probe files end in .yaml (rename it)")
        )
    if not files:
        problems.append(LintProblem(directory, None, "", "no probe files (*.yaml) here"))
    probes: list[Probe] = []
    seen: dict[str, Path] = {}
    taken = set(known_ids)
    atlas = load_atlas().techniques
    for path in files:
        probe = _lint_file(path, problems)
        if probe is None:
            continue
        if path.stem != probe.id:
            problems.append(
                LintProblem(path, 1, "id", f"the file name must be the probe id: {probe.id}.yaml")
            )
        if probe.id in seen:
            problems.append(
                LintProblem(path, 1, "id", f"{probe.id} is also defined in {seen[probe.id].name}")
            )
        elif probe.id in taken:
            problems.append(
                LintProblem(
                    path,
                    1,
                    "id",
                    f"{probe.id} is a bundled probe's id: give yours another name or version",
                )
            )
        seen.setdefault(probe.id, path)
        for index, technique in enumerate(probe.mitre_atlas):
            if technique not in atlas:
                problems.append(
                    LintProblem(
                        path,
                        None,
                        f"mitre_atlas[{index}]",
                        f"{technique} is not a technique of the bundled MITRE ATLAS release",
                    )
                )
        probes.append(probe)
    return LintResult(files=len(files), probes=probes, problems=problems)


def _lint_file(path: Path, problems: list[LintProblem]) -> Probe | None:
    try:
        text = read_text(path, what="probe file")
    except UsageError as exc:
        problems.append(LintProblem(path, None, "", exc.message.removeprefix(f"{path}: ")))
        return None
    try:
        # The scan's own reader, limits included: a file lint passes is one a scan loads.
        data, node = parse_yaml_document(text, source=str(path))
    except UsageError as exc:
        mark = getattr(exc.__cause__, "problem_mark", None)
        line = min(mark.line + 1, max(len(text.splitlines()), 1)) if mark is not None else None
        problems.append(LintProblem(path, line, "", exc.message.removeprefix(f"{path}: ")))
        return None
    if not isinstance(data, dict):
        problems.append(LintProblem(path, 1, "", "expected a mapping of probe fields"))
        return None
    try:
        return Probe.model_validate(data)
    except re.error as exc:
        problems.append(
            LintProblem(path, None, "", f"invalid regular expression {exc.pattern!r}: {exc.msg}")
        )
    except ValidationError as exc:
        for error in exc.errors():
            loc = tuple(error["loc"])
            reason = str(error["msg"]).removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                reason = "unknown field"
            elif error["type"] == "too_short":
                reason = "must not be empty: give at least one"
            elif error["type"] == "missing":
                reason = "required field is missing"
            where = field_path(loc, hidden=_ORACLE_KINDS) or "(probe)"
            problems.append(LintProblem(path, _line_of(node, loc), where, reason))
    return None


def _line_of(node: Any, loc: tuple[int | str, ...]) -> int | None:
    """The line of the deepest YAML node along ``loc`` (a missing key: its mapping's line)."""
    if node is None:
        return None
    line: int = node.start_mark.line + 1
    for key in loc:
        child = None
        if isinstance(key, str) and key in _ORACLE_KINDS:
            continue  # a union's branch label, not a key of the file
        if isinstance(node, yaml.MappingNode) and isinstance(key, str):
            child = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
            child = node.value[key] if 0 <= key < len(node.value) else None
        if child is None:
            return line
        node = child
        line = node.start_mark.line + 1
    return line
