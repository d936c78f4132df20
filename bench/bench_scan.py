"""In-process scan speed of the bundled demo agent: the engine's own overhead.

Prints attempts per second for a full-mode scan of `demo` (every probe x every mutator x 3)
through the real CLI entry (`main(argv)`), the process's peak memory, and the CLI start-up
time.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from probegate.cli import main as cli_main


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        old = os.getcwd()
        os.chdir(tmp)
        try:
            start = time.perf_counter()
            cli_main(["scan", "demo", "--mode", "full", "--quiet", "--no-sign"])
            elapsed = time.perf_counter() - start
            report = json.loads(Path("probegate-out/scan.json").read_text())
        finally:
            os.chdir(old)
    attempts = report["coverage"]["attempts_completed"]
    rate = attempts / elapsed
    verdict = "OK" if rate >= 1000 else "BELOW TARGET"
    print(
        f"demo full scan: {attempts} attempts in {elapsed:.2f} s = {rate:.0f} attempts/s "
        f"(in-process agent; target >= 1000/s) {verdict}"
    )
    # ru_maxrss is KiB on Linux; this process ran nothing but the scan (run_all isolates it).
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory of the scanning process: {peak_mb:.0f} MB")
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "probegate", "--version"], check=True, capture_output=True
    )
    print(f"cli start-up (python -m probegate --version): {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
