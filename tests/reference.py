"""The project's shared reference material (``../shared/reference/`` beside the checkout).

Third-party schemas and tools that tests check our files against live there, never in the
repository. CI lays ``shared/`` beside the clone; a worktree may sit deeper, so every parent of
the checkout is tried. Missing material skips a test locally and fails it under CI
(:func:`tests.tools.tool_missing`).
"""

from __future__ import annotations

from pathlib import Path

from tests.tools import tool_missing

ROOT = Path(__file__).resolve().parents[1]


def reference_path(*parts: str) -> Path:
    """``shared/reference/<parts>``: the first parent of the checkout that has it."""
    for parent in ROOT.parents:
        candidate = parent.joinpath("shared", "reference", *parts)
        if candidate.exists():
            return candidate
    tool_missing(f"shared/reference/{'/'.join(parts)} not found beside the checkout")
