"""`make shape`: the shape of src/ that docs/architecture.md promises, printed and checked.

Prints the ten largest modules and functions (lines) and every block radon grades D or worse
(cyclomatic complexity), then the limits they are held to: no module longer than
``MODULE_LINES``, no block graded D or worse, no function longer than ``FUNCTION_LINES`` except
argparse tables (a command's ``add_parser``: one declarative line per flag).
tests/test_code_shape.py runs the same check, so a change that breaks a limit fails the
suite, not only this report.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

from radon.complexity import cc_rank, cc_visit

SRC = Path(__file__).resolve().parents[1] / "src" / "probegate"
MODULE_LINES = 650
FUNCTION_LINES = 80
MAX_D_OR_E = 0
# Declarative tables: a command's flags, one add_argument call each.
TABLES = frozenset({"add_parser"})


@dataclass(frozen=True)
class Block:
    path: str
    name: str
    line: int
    size: int  # lines, or radon's complexity

    def __str__(self) -> str:
        return f"{self.size:5d}  {self.path}:{self.line} {self.name}"


def _sources(src: Path) -> list[tuple[str, str]]:
    return [
        (p.relative_to(src.parent).as_posix(), p.read_text()) for p in sorted(src.rglob("*.py"))
    ]


def module_sizes(src: Path = SRC) -> list[Block]:
    rows = [Block(path, "", 1, text.count("\n")) for path, text in _sources(src)]
    return sorted(rows, key=lambda b: -b.size)


def function_sizes(src: Path = SRC) -> list[Block]:
    rows = []
    for path, text in _sources(src):
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                rows.append(Block(path, node.name, node.lineno, _own_lines(node)))
    return sorted(rows, key=lambda b: -b.size)


def _lines(node: ast.AST) -> int:
    return (getattr(node, "end_lineno", None) or node.lineno) - node.lineno + 1  # type: ignore[attr-defined]


def _own_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's lines less those of classes it defines: a factory that builds a class
    (a server protocol bound to its state) is as long as its class, whose methods are
    measured one by one."""
    classes = [n for n in ast.walk(function) if isinstance(n, ast.ClassDef)]
    outermost = [
        c
        for c in classes
        if not any(o is not c and o.lineno <= c.lineno <= (o.end_lineno or 0) for o in classes)
    ]
    return _lines(function) - sum(_lines(c) for c in outermost)


def complex_blocks(src: Path = SRC) -> list[tuple[str, Block]]:
    """(radon rank, block) for every function or method ranked D or worse."""
    rows = []
    for path, text in _sources(src):
        for block in cc_visit(text):
            rank = cc_rank(block.complexity)
            if rank in "DEF":
                name = block.fullname if hasattr(block, "fullname") else block.name
                rows.append((rank, Block(path, name, block.lineno, block.complexity)))
    return sorted(rows, key=lambda r: -r[1].size)


def problems(src: Path = SRC) -> list[str]:
    """Every broken limit, in words; empty when src/ keeps them all."""
    found = [
        f"longer than {MODULE_LINES} lines: {b}" for b in module_sizes(src) if b.size > MODULE_LINES
    ]
    ranked = complex_blocks(src)
    found += [f"radon F: {b}" for rank, b in ranked if rank == "F"]
    d_or_e = [b for rank, b in ranked if rank in "DE"]
    if len(d_or_e) > MAX_D_OR_E:
        found.append(f"{len(d_or_e)} blocks graded D or E (at most {MAX_D_OR_E})")
    found += [
        f"longer than {FUNCTION_LINES} lines: {b}"
        for b in function_sizes(src)
        if b.size > FUNCTION_LINES and b.name not in TABLES
    ]
    return found


def main(argv: list[str]) -> int:
    """``code_shape.py [SRC]``: SRC is a package directory (default: this checkout's), so
    an older checkout can be measured with today's rules."""
    src = Path(argv[0]).resolve() if argv else SRC
    print("largest modules (lines)")
    print("\n".join(str(b) for b in module_sizes(src)[:10]))
    print("\nlongest functions (lines)")
    print("\n".join(str(b) for b in function_sizes(src)[:10]))
    print("\nradon D or worse (complexity)")
    print("\n".join(f"{rank} {b}" for rank, b in complex_blocks(src)) or "none")
    broken = problems(src)
    print(
        f"\nlimits: modules <= {MODULE_LINES} lines, at most {MAX_D_OR_E} D/E and no F, "
        f"functions <= {FUNCTION_LINES} lines "
        f"({', '.join(sorted(TABLES))} aside): " + ("kept" if not broken else "BROKEN")
    )
    for problem in broken:
        print(f"  {problem}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
