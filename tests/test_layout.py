"""tests/ mirrors src/ (tests/README.md): every test file sits where the code it tests sits.

A test of ``src/probegate/<package>/...`` lives in ``tests/<package>/``, a test of a top-level
module (``scan.py``, ``gate.py``, ``cli.py``...) in ``tests/core/``, and a test file directly
in ``tests/`` checks the repository as a whole, so it imports nothing from probegate.
Support modules (servers, factories, helpers) are not test files and may sit anywhere.
"""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src" / "probegate"
IMPORTS_PROBEGATE = re.compile(r"^\s*(from|import)\s+probegate\b", re.MULTILINE)


def misplaced(tests: Path, src: Path) -> list[str]:
    """Test files whose folder has no src counterpart, with the reason."""
    problems = []
    for path in sorted(tests.rglob("test_*.py")):
        folder = path.parent.relative_to(tests)
        name = path.relative_to(tests).as_posix()
        if folder == Path("."):
            if IMPORTS_PROBEGATE.search(path.read_text(encoding="utf-8")):
                problems.append(f"{name}: imports probegate; move it beside the code it tests")
        elif folder == Path("core"):
            continue
        elif not (src / folder / "__init__.py").is_file():
            problems.append(f"{name}: no package src/probegate/{folder.as_posix()}")
    return problems


def test_every_test_file_has_a_src_counterpart() -> None:
    assert misplaced(TESTS, SRC) == []


def test_the_check_catches_a_misplaced_file(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "engine").mkdir(parents=True)
    (src / "engine" / "__init__.py").write_text("", encoding="utf-8")
    tests = tmp_path / "tests"
    for name, text in {
        "engine/test_runner.py": "",
        "core/test_scan.py": "from probegate.scan import run\n",
        "test_repo.py": "import json\n",
        "gate/test_gate.py": "",
        "test_scoring.py": "from probegate.scoring import score\n",
        "engine/helpers.py": "",
    }.items():
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text(text, encoding="utf-8")
    assert misplaced(tests, src) == [
        "gate/test_gate.py: no package src/probegate/gate",
        "test_scoring.py: imports probegate; move it beside the code it tests",
    ]
