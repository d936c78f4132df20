"""`make bench`: run every benchmark script under bench/ and print its figures.

Each bench is a script with a ``main()`` that prints its own figures and the targets they are
held to. Each runs in its own process so one bench's imports, threads or memory never skew the
next one's figures; a failing bench is reported and makes `make bench` fail, after all ran.
"""

from __future__ import annotations

import compileall
import subprocess
import sys
import time
from pathlib import Path

from machine import describe  # the sibling bench/machine.py: how fast this machine is

HERE = Path(__file__).parent


def main() -> None:
    # An installed package has its bytecode compiled (pip does it at install); a checkout run
    # with PYTHONDONTWRITEBYTECODE set would compile every changed module on every start and
    # time the compiler in each bench that counts the CLI's start-up.
    import probegate

    compileall.compile_dir(Path(probegate.__file__).parent, quiet=1)
    print(describe() + "\n", flush=True)
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"== {script.stem} ==", flush=True)
        start = time.perf_counter()
        code = subprocess.run([sys.executable, str(script)], check=False).returncode
        if code != 0:
            failed.append(script.stem)
            print(f"FAILED with exit code {code}", flush=True)
        print(f"({time.perf_counter() - start:.1f} s)\n", flush=True)
    if failed:
        print("failed: " + ", ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
