"""The Action's inputs that need more than bash: the ``args`` words, the agent's packages and
the places the run will write to."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from probegate.errors import UsageError
from probegate.models.store_layout import scans_dir

# The Action owns these flags: it must know where the files are and which formats exist.
RESERVED_FLAGS = ("--output", "--output-dir")
# The ``command`` input: what the Action runs.
COMMANDS = ("scan", "run")


class ActionError(UsageError):
    """A problem with the Action's inputs or environment, explained in one line (exit 2, like
    any usage error: the Action's inputs are its flags)."""


def split_args(text: str) -> list[str]:
    """The ``args`` input as words: POSIX shell quoting, nothing expanded, nothing run.

    ``'single'`` and ``"double"`` quotes group words and backslash escapes one character, as in
    a shell; ``$VAR``, ``$(...)``, backticks, globs, ``~`` and ``#`` are plain text. The
    Action's own flags (``--output``, ``--output-dir`` and their abbreviations) are refused:
    use the ``formats`` and ``output-dir`` inputs.
    """
    try:
        words = shlex.split(text, comments=False, posix=True)
    except ValueError as exc:
        raise ActionError(f"the args input cannot be split: {exc} (check its quotes)") from exc
    for word in words:
        name = word.split("=", 1)[0]
        if len(name) > 3 and any(flag.startswith(name) for flag in RESERVED_FLAGS):
            raise ActionError(
                f"the args input may not set {name}: use the formats and output-dir inputs"
            )
    return words


def _canonical(name: str) -> str:
    """A distribution name as package indexes compare them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _versions(paths: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions(path=list(paths)):
        name = dist.metadata["Name"]
        if name:  # a broken dist-info has none; the first on the path wins, as for imports
            found.setdefault(_canonical(name), dist.version)
    return found


def package_conflicts(packages: Path, interpreter_path: Sequence[str]) -> list[str]:
    """Packages installed in ``packages`` that the interpreter has at another version.

    The agent's packages are put in front of probegate's for the scan (``PYTHONPATH``), so a
    package in both would be loaded at the agent's version by probegate too. The same version
    is harmless; another version is refused rather than breaking probegate mid-scan.
    """
    own = str(packages.absolute())
    theirs = _versions([own])
    ours = _versions([p for p in interpreter_path if p and os.path.abspath(p) != own])
    return [
        f"{name} {theirs[name]} (the image has {ours[name]})"
        for name in sorted(theirs)
        if name in ours and ours[name] != theirs[name]
    ]


def check_packages(packages: Path) -> None:
    conflicts = package_conflicts(packages, sys.path)
    if conflicts:
        raise ActionError(
            "the requirements input pins packages probegate itself uses, at other versions: "
            + ", ".join(conflicts)
            + ". Pin the image's versions (requirements/image.txt of this release) in your lock"
        )


def check_locations(output_dir: Path, store: Path) -> None:
    """Refuse output and store locations reached through a symlink.

    The container runs as root on a checkout anyone with a pull request can shape: a committed
    ``probegate-out -> /somewhere`` (or ``.probegate/scans``) would make the scan write where
    the symlink leads. Symlinks *inside* these directories are harmless: every file is written
    by renaming a new file over the name, which replaces a symlink instead of following it.
    """
    for what, path in (("output-dir", output_dir), ("store", store), ("store", scans_dir(store))):
        node = path
        while True:
            if node.is_symlink():
                shown = "" if node == path else f" ({node} is)"
                raise ActionError(
                    f"the {what} {path} is a symlink{shown}: the Action never writes through "
                    "one; remove it from the repository or choose another directory"
                )
            if node.parent == node or not node.parts:
                break
            node = node.parent


# Events whose payload is a pull request: its head may live in another repository (a fork).
_PULL_REQUEST_EVENTS = frozenset(
    {"pull_request", "pull_request_target", "pull_request_review", "pull_request_review_comment"}
)


def fork_pull_request(env: Mapping[str, str]) -> str | None:
    """Why a fork's pull request is skipped, or None when this run is not one.

    A ``pull_request`` run from a fork gets no secrets and a read-only token, so a scan of an
    agent behind an API key cannot run (exit 2, a red check nobody can fix from the fork); one
    run by ``pull_request_target`` would have the secrets and the fork's code together, which
    is worse. The payload (``GITHUB_EVENT_PATH``) says where the head lives; a head whose
    repository is gone is a fork's too. docs/github-action.md, "Pull requests from forks".
    """
    if env.get("GITHUB_EVENT_NAME") not in _PULL_REQUEST_EVENTS:
        return None
    try:
        payload = json.loads(Path(env.get("GITHUB_EVENT_PATH", "")).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ActionError(f"cannot read the event payload GITHUB_EVENT_PATH: {exc}") from exc
    pull = payload.get("pull_request") if isinstance(payload, dict) else None
    if not isinstance(pull, dict):
        raise ActionError("the event payload GITHUB_EVENT_PATH holds no pull_request")
    base = _repository(pull.get("base")) or env.get("GITHUB_REPOSITORY")
    head = _repository(pull.get("head"))
    if head is not None and head == base:
        return None
    return (
        f"skipped: this pull request comes from the fork {head or '(deleted)'}, which gets no "
        "secrets, so its scan could not reach the agent. Pull requests from this repository "
        "and pushes are scanned; set the fork-pull-requests input to scan to scan forks too."
    )


def _repository(side: object) -> str | None:
    repo = side.get("repo") if isinstance(side, dict) else None
    name = repo.get("full_name") if isinstance(repo, dict) else None
    return name if isinstance(name, str) and name else None


def target_notice(target: str) -> str | None:
    """The deprecation notice for a config file given as the ``target`` input of a scan."""
    from probegate.targets.registry import positional_kinds  # only when a target is given

    if not target or target in positional_kinds():
        return None
    return (
        f"a config file as the target input ({target}) is deprecated and still read: write "
        f"config: {target} instead (target: is for {', '.join(positional_kinds())}, and for "
        "command: run's suites)"
    )
