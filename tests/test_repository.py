"""The repository holds only what every clone can use: no link to one machine's paths.

A tracked symlink to ``/work/main/.venv`` (or any path outside the tree) dangles in every other
clone, and tools that follow it (a packager, a linter walking the tree) fail there or, worse,
read another checkout's files.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tracked_links(root: Path) -> dict[str, str]:
    """Every symlink git tracks under ``root``, with where it points."""
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-s", "-z"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    links = {}
    for entry in filter(None, listed.split("\0")):
        meta, path = entry.split("\t", 1)
        if meta.split(" ", 1)[0] == "120000":
            links[path] = os.readlink(root / path) if (root / path).is_symlink() else "?"
    return links


def _outside(root: Path, links: dict[str, str]) -> list[str]:
    out = []
    for path, points_to in sorted(links.items()):
        resolved = Path(os.path.normpath(root / Path(path).parent / points_to))
        if Path(points_to).is_absolute() or not resolved.is_relative_to(root):
            out.append(f"{path} -> {points_to}")
    return out


def test_no_tracked_link_leads_outside_the_repository() -> None:
    assert _outside(ROOT, _tracked_links(ROOT)) == []


def test_the_check_catches_a_link_to_a_machine_path(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("a\n", encoding="utf-8")
    (tmp_path / ".venv-main").symlink_to("/work/main/.venv")
    (tmp_path / "up").symlink_to("../elsewhere")
    (tmp_path / "inside").symlink_to("docs/a.md")
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    assert _outside(tmp_path, _tracked_links(tmp_path)) == [
        ".venv-main -> /work/main/.venv",
        "up -> ../elsewhere",
    ]
