"""The shape docs/architecture.md promises for src/: no module over 650 lines, no radon D or
worse, no function over 80 lines but argparse tables. `make shape` prints the same lists and
figures."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _shape() -> ModuleType:
    spec = importlib.util.spec_from_file_location("code_shape", ROOT / "bench" / "code_shape.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("code_shape", module)
    spec.loader.exec_module(module)
    return module


def test_src_keeps_its_shape() -> None:
    assert _shape().problems() == []


def test_the_check_sees_a_long_and_tangled_function(tmp_path: Path) -> None:
    """The limits are read from the code itself: a function of 81 lines and one graded F are
    both named (so the check above cannot pass for want of looking)."""
    src = tmp_path / "probegate"
    src.mkdir()
    long_body = "\n".join(f"    x{i} = {i}" for i in range(80))
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(45))
    (src / "m.py").write_text(
        f"def long():\n{long_body}\n\n\ndef tangled(x):\n{branches}\n    return -1\n\n\n"
        f"def add_parser():\n{long_body}\n"
    )
    found = _shape().problems(src)
    assert any("longer than 80 lines" in p and "long" in p for p in found), found
    assert any(p.startswith("radon F") and "tangled" in p for p in found), found
    assert not any("add_parser" in p for p in found), found


def test_the_check_sees_a_long_module_and_a_d_block(tmp_path: Path) -> None:
    """A module of 651 lines and a block graded D are each named."""
    src = tmp_path / "probegate"
    src.mkdir()
    (src / "big.py").write_text("\n".join(f"x{i} = {i}" for i in range(651)) + "\n")
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(22))
    (src / "d.py").write_text(f"def graded_d(x):\n{branches}\n    return -1\n")
    found = _shape().problems(src)
    assert any("longer than 650 lines" in p and "big.py" in p for p in found), found
    assert any("D or E" in p for p in found), found
