"""`make bench`: run every benchmark script under bench/ and print its figures.

Each bench module exposes ``main() -> None`` and prints its own figures with the targets they
are held to; a missing optional piece is reported, not hidden.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    scripts = sorted(p for p in HERE.glob("bench_*.py"))
    failed = 0
    for script in scripts:
        print(f"== {script.stem} ==", flush=True)
        spec = importlib.util.spec_from_file_location(script.stem, script)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        start = time.perf_counter()
        try:
            spec.loader.exec_module(module)
            module.main()
        except Exception as exc:  # a broken bench must not hide the others' figures
            failed += 1
            print(f"FAILED: {type(exc).__name__}: {exc}", flush=True)
        print(f"({time.perf_counter() - start:.1f} s)\n", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
