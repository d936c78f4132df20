"""The repository a scan runs in, and the files of it that a finding can point at.

GitHub code scanning places a SARIF result at a path relative to the repository root, and
upload-sarif hashes that file's line to track the alert. A path relative to the working
directory (a scan started in a subdirectory) or to a file that does not exist shows nothing,
so every location a report carries is checked here, where the scan still sees the file system,
and the emitters only write what they are given (docs/report-format.md, "SARIF locations").

The root is ``GITHUB_WORKSPACE`` in GitHub Actions (the checkout, also inside the Action's
container), else what ``git rev-parse --show-toplevel`` says, else the working directory.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from probegate.models.report import SourceLocation

GIT_TIMEOUT_SECONDS = 10


def repository_root(env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path:
    """The root of the repository being scanned (see the module docstring)."""
    env = os.environ if env is None else env
    return _root(env.get("GITHUB_WORKSPACE", ""), str((cwd or Path.cwd()).resolve()))


@functools.lru_cache(maxsize=16)
def _root(workspace: str, cwd: str) -> Path:
    if workspace and Path(workspace).is_dir():
        return Path(workspace).resolve()
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return Path(cwd)  # no git: the working directory is the best guess
    top = proc.stdout.strip()
    return Path(top).resolve() if proc.returncode == 0 and top else Path(cwd)


def repo_path(path: Path, root: Path) -> str | None:
    """``path`` relative to ``root`` (POSIX), or None unless it is an existing file under it."""
    try:
        resolved = path.resolve()
        relative = resolved.relative_to(root.resolve())
    except (OSError, ValueError):
        return None
    return relative.as_posix() if resolved.is_file() else None


def locate(path: Path | None, root: Path, line: int = 1) -> SourceLocation | None:
    """A location at ``line`` of ``path``, when ``path`` is a file of the repository."""
    if path is None:
        return None
    relative = repo_path(path, root)
    return SourceLocation(path=relative, line=line) if relative is not None else None


def line_of(text: str, pattern: str) -> int | None:
    """The first line (1-based) of ``text`` that matches ``pattern``."""
    rx = re.compile(pattern)
    for number, line in enumerate(text.splitlines(), start=1):
        if rx.search(line):
            return number
    return None


def workflow_location(root: Path, env: Mapping[str, str] | None = None) -> SourceLocation | None:
    """The workflow file running this job, at its first line naming probegate.

    ``GITHUB_WORKFLOW_REF`` is ``owner/repo/.github/workflows/scan.yml@refs/heads/main``; the
    path between the repository and the ``@`` is relative to the checkout.
    """
    env = os.environ if env is None else env
    ref = env.get("GITHUB_WORKFLOW_REF", "").split("@", 1)[0]
    parts = ref.split("/", 2)
    if len(parts) < 3 or not parts[2]:
        return None
    path = root / parts[2]
    found = locate(path, root)
    if found is None:
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    return SourceLocation(path=found.path, line=line_of(text, r"(?i)probegate") or 1)


def anchor(
    candidates: list[Path], root: Path, env: Mapping[str, str] | None = None
) -> SourceLocation:
    """Where findings go that no file of the target explains (the demo, a target of flags).

    The workflow running the scan (in GitHub Actions it names the target), else the first of
    ``candidates`` inside the repository: the scan's stored report and its output files, which
    exist by the time any report is read. Only when none of them is (a ``--store`` and an
    ``--output-dir`` outside the repository) is the location the stored report's bare name.
    """
    found = workflow_location(root, env)
    if found is not None:
        return found
    resolved_root = root.resolve()
    for path in candidates:
        try:
            relative = path.resolve().relative_to(resolved_root)
        except ValueError:
            continue
        return SourceLocation(path=relative.as_posix(), line=1)
    return SourceLocation(path=candidates[0].name if candidates else "probegate.yml", line=1)
