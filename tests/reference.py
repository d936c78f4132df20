"""The project's shared reference material (``../shared/reference/`` beside the checkout).

Third-party schemas and tools that tests check our files against live there, never in the
repository (their licences are theirs, and nothing third-party is copied into the project).
CI lays ``shared/`` beside the clone; a worktree may sit deeper, so every parent of the
checkout is tried. Missing material skips a test locally and fails it under CI
(:func:`tests.tools.tool_missing`); the skip says what the material is, what the tests check
with it, and where to get it, since a new checkout has no ``shared/`` at all.
"""

from __future__ import annotations

from pathlib import Path

from tests.tools import tool_missing

ROOT = Path(__file__).resolve().parents[1]

# What each piece is and where it comes from, by its path under shared/reference/.
MATERIAL: dict[str, str] = {
    "junit": (
        "the JUnit XML schema strict CI consumers check junit.xml against (junit-10.xsd, the "
        "Jenkins xunit plugin's, MIT); pytest's source distribution ships it: `pip download "
        "--no-deps --no-binary :all: pytest==9.2.0`, then copy "
        "testing/example_scripts/junit-10.xsd from the archive"
    ),
    "codeql-action": (
        "GitHub's upload-sarif fingerprinting code, to check scan.sarif the way code scanning "
        "reads it (lib/fingerprints.js and lib/doc-url.js of github/codeql-action at v3.28.18, "
        "MIT, with the project's check_fingerprints.sh runner that loads them in node); take "
        "the two files from that tag's lib/ on GitHub, and the runner from a maintainer's "
        "shared/ (CI lays it beside the clone)"
    ),
}


def reference_path(*parts: str) -> Path:
    """``shared/reference/<parts>``: the first parent of the checkout that has it."""
    for parent in ROOT.parents:
        candidate = parent.joinpath("shared", "reference", *parts)
        if candidate.exists():
            return candidate
    what = MATERIAL.get(parts[0], "third-party reference material the tests check against")
    tool_missing(
        f"{what}: not found at ../shared/reference/{'/'.join(parts)} (a directory beside the "
        "checkout, never in the repository; tests/reference.py)"
    )
