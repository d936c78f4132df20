"""Hostile agents (docs/targets.md): each repro's time, exit code, peak memory and journal; the
patterns on adversarial megabytes; a soak at concurrency 64 against the faulty mock.

Each scan runs as a child process (``python -m probegate``) against the fault-injecting
loopback server of the tests (tests/servers/faults.py), so its peak RSS is its own. ``--src
DIR`` runs the scans on another checkout's ``src`` (e.g. the commit before the bounds) for the
"before" figures; flags that checkout does not know are left out, and a scan still running
after ``--limit`` seconds is killed and shown as such.

The soak: a full-mode scan (every probe x every mutator x 3) at ``--concurrency 64`` against
the ``mix`` fault (ok, 429, 500, dropped connections, garbage, lone surrogates, 1,001-deep
replies, 300-deep arguments, 10,000 tool calls, megabyte replies, in turn). Its peak RSS is
read from /proc while it runs: once a tenth of the planned attempts are journaled ("start")
and at the end; flat means the end is not far above the start. The journal must hold one line
per planned attempt, no attempt twice.

Run: ``.venv/bin/python bench/bench_hostile.py`` (or ``make bench``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.servers.configs import openai_config  # noqa: E402
from tests.servers.faults import FaultServer  # noqa: E402

IMAGE_PROBE = "asi01.markdown-image-exfil.v1"
# (name, fault, scan flags, flags only the bounded code knows)
REPROS: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("lone surrogates", "surrogate", ("--asi", "ASI01"), ()),
    ("reply nested 1,001 deep", "deep", ("--asi", "ASI01"), ()),
    ("arguments nested 300 deep", "deepargs", ("--asi", "ASI01"), ()),
    ("10,000 tool calls per reply", "manycalls", ("--asi", "ASI01"), ()),
    ("1 MB replies", "bigreply", ("--asi", "ASI01"), ()),
    ("1 MB of '![' (image pattern)", "imagebomb", ("--probes", IMAGE_PROBE), ()),
    # Every pause of the scan counts against --max-wait; once it is spent a 429 gets the ordinary
    # backoff and the scan stops early. With the default budget (300 s: `--max-wait 300`) this
    # case takes ~250 s; `make bench` shows the same stop on a 20 s budget.
    ("Retry-After: 119, --max-wait", "retryforever", ("--asi", "ASI01,ASI02"), ("--max-wait",)),
    ("Retry-After: 119, --deadline 10", "retryforever", ("--asi", "ASI01"), ("--deadline", "10")),
)
MAX_WAIT = 20.0
SOAK_CONCURRENCY = 64
CHILD = (
    "import resource, sys\n"
    "from probegate.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "sys.stderr.write(f'\\nPEAK_RSS_KB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')\n"
    "sys.exit(code)\n"
)


def _env(src: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return env


def _knows(flag: str, src: Path | None) -> bool:
    help_text = subprocess.run(
        [sys.executable, "-m", "probegate", "scan", "--help"],
        capture_output=True,
        text=True,
        env=_env(src),
        check=False,
    ).stdout
    return flag in help_text


def _scan(
    config: Path, work: Path, flags: list[str], src: Path | None, limit: float
) -> dict[str, Any]:
    argv = ["scan", str(config), "--no-sign", "--quiet", "--store", str(work / "store")]
    argv += ["--output-dir", str(work / "out"), "--output", "json,sarif,junit,md,html", *flags]
    start = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(src),
        cwd=work,
    )
    try:
        _, err = child.communicate(timeout=limit)
        code: int | str = child.returncode
    except subprocess.TimeoutExpired:
        child.kill()
        _, err = child.communicate()
        code = f"killed after {limit:g} s"
    seconds = time.monotonic() - start
    peak = re.search(r"PEAK_RSS_KB (\d+)", err or "")
    journals = list((work / "store").glob("scans/*/journal.jsonl"))
    lines = journals[0].read_bytes().splitlines() if journals else []
    return {
        "code": code,
        "seconds": seconds,
        "peak_mb": int(peak.group(1)) / 1024 if peak else None,
        "journal_mb": sum(len(x) + 1 for x in lines) / 1e6,
        "longest_line_kb": max((len(x) for x in lines), default=0) / 1024,
        "report": (work / "out" / "scan.json").exists(),
    }


def repros(src: Path | None, limit: float, max_wait: float) -> None:
    knows_new = _knows("--deadline", src) and _knows("--max-wait", src)
    print(f"repros ({'code at ' + str(src) if src else 'this checkout'}; limit {limit:g} s)")
    print(
        f"  {'repro':34} {'exit':>16} {'time s':>7} {'peak MB':>8} {'journal MB':>10} "
        f"{'line KB':>8} report"
    )
    with FaultServer() as faults:
        for name, fault, flags, new_flags in REPROS:
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                config = openai_config(work, faults.endpoint(fault))
                if new_flags == ("--max-wait",):
                    new_flags = ("--max-wait", f"{max_wait:g}")
                    name = f"{name} {max_wait:g}"
                extra = list(flags) + (list(new_flags) if knows_new else [])
                if new_flags and not knows_new:
                    name += " (no such flag)"
                # The early stop needs the whole pause budget first (300 s without the flag).
                budget = max_wait if knows_new else 300.0
                wait = limit if "--deadline" in new_flags else max(limit, budget + 60.0)
                r = _scan(config, work, extra, src, wait if fault == "retryforever" else limit)
            peak = f"{r['peak_mb']:.0f}" if r["peak_mb"] is not None else "?"
            print(
                f"  {name:34} {r['code']!s:>16} {r['seconds']:7.1f} {peak:>8} "
                f"{r['journal_mb']:10.2f} {r['longest_line_kb']:8.0f} "
                f"{'yes' if r['report'] else 'NO'}",
                flush=True,
            )


def patterns() -> None:
    from tests.library.test_pattern_bounds import BUNDLED, adversarial

    from probegate.models.patterns import compile_pattern

    worst = (0.0, "")
    total = 0.0
    for pattern in BUNDLED:
        compiled = compile_pattern(pattern, ignore_case=True)
        for text in adversarial(pattern):
            start = time.perf_counter()
            compiled.search(text)
            spent = time.perf_counter() - start
            total += spent
            worst = max(worst, (spent, pattern))
    print(
        f"patterns: {len(BUNDLED)} bundled, each on its adversarial 1 MB texts (RE2): "
        f"{total:.2f} s in all, slowest {worst[0] * 1000:.1f} ms ({worst[1]!r})"
    )
    image = next(p for p in BUNDLED if p.startswith("!\\["))
    for size in (20_000, 40_000, 80_000):
        text = "![" * (size // 2)
        start = time.perf_counter()
        re.compile(image, re.IGNORECASE).search(text)
        before = time.perf_counter() - start
        start = time.perf_counter()
        compile_pattern(image, ignore_case=True).search(text)
        after = time.perf_counter() - start
        print(
            f"  image pattern on {size // 1000} KB of '![': Python re {before:.2f} s, "
            f"RE2 {after * 1000:.2f} ms"
        )
    start = time.perf_counter()
    compile_pattern(image, ignore_case=True).search("![" * 500_000)
    print(f"  image pattern on 1 MB of '![': RE2 {(time.perf_counter() - start) * 1000:.1f} ms")
    redaction(BUNDLED_SIZES)


BUNDLED_SIZES = (32_768, 262_144)  # TEXT_MAX and TRANSCRIPT_MAX (models/bounds.py)
# Runs that make backtracking redaction patterns slow: what their own prefixes look like.
REDACTION_UNITS = (
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY-----\nAAAA",
    "a@",
    "a.",
    "1 ",
    "1-",
    "1",
    "bearer ",
    "aws_secret_access_key=",
    "eyJ",
    "+1 (",
)


def redaction(sizes: tuple[int, ...]) -> None:
    """The redaction patterns (Python re: they need lookaround) on the longest texts a
    transcript keeps, made of their own prefixes."""
    from probegate.models.shapes import PATTERNS

    for size in sizes:
        worst = (0.0, "")
        for unit in REDACTION_UNITS:
            text = (unit * (size // len(unit) + 1))[:size]
            for pattern in PATTERNS:
                start = time.perf_counter()
                for _ in pattern.regex.finditer(text):
                    pass
                worst = max(worst, (time.perf_counter() - start, f"{pattern.kind} on {unit!r}"))
        print(
            f"  redaction patterns on {size // 1024} KiB: slowest {worst[0] * 1000:.1f} ms "
            f"({worst[1]})"
        )


def _memory_kb(pid: int) -> tuple[int, int]:
    """The process's peak and current resident memory, from /proc (0, 0 once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0, 0
    peak = re.search(r"VmHWM:\s+(\d+) kB", status)
    now = re.search(r"VmRSS:\s+(\d+) kB", status)
    return (int(peak.group(1)) if peak else 0, int(now.group(1)) if now else 0)


def soak(src: Path | None, limit: float) -> None:
    with FaultServer() as faults, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        config = openai_config(work, faults.endpoint("mix"))
        flags = ["--mode", "full", "--concurrency", str(SOAK_CONCURRENCY), "--retries", "1"]
        flags += ["--max-wait", "5"] if _knows("--max-wait", src) else []
        dry = subprocess.run(
            [sys.executable, "-m", "probegate", "scan", str(config), *flags, "--dry-run"],
            capture_output=True,
            text=True,
            env=_env(src),
            cwd=work,
            check=True,
        ).stdout
        planned = int(re.search(r"(\d+) attempts", dry).group(1))  # type: ignore[union-attr]
        argv = ["scan", str(config), "--no-sign", "--quiet", "--store", str(work / "store")]
        argv += ["--output-dir", str(work / "out"), *flags]
        start = time.monotonic()
        child = subprocess.Popen(
            [sys.executable, "-m", "probegate", *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(src),
            cwd=work,
        )
        marks = {10: (0, 0), 50: (0, 0), 100: (0, 0)}
        last = (0, 0)
        while child.poll() is None and time.monotonic() - start < limit:
            last = _memory_kb(child.pid) if _memory_kb(child.pid)[0] else last
            journals = list((work / "store").glob("scans/*/journal.jsonl"))
            done = journals[0].read_bytes().count(b"\n") - 1 if journals else 0
            for share in (10, 50):
                if not marks[share][0] and done * 100 >= planned * share:
                    marks[share] = last
            time.sleep(0.2)
        marks[100] = last
        if child.poll() is None:
            child.kill()
        child.wait()
        seconds = time.monotonic() - start
        (journal,) = (work / "store").glob("scans/*/journal.jsonl")
        ids = [
            json.loads(line)["attempt"]["attempt_id"]
            for line in journal.read_bytes().splitlines()[1:]
            if line.strip()
        ]
        controls = sum(1 for i in ids if "#control#" in i)
        print(
            f"soak: full mode, concurrency {SOAK_CONCURRENCY}, fault 'mix', exit "
            f"{child.returncode}, {seconds:.1f} s, {faults.requests} requests"
        )
        shown = ", ".join(
            f"{share}% journaled {peak / 1024:.0f} MB (now {now / 1024:.0f})"
            for share, (peak, now) in marks.items()
        )
        print(f"  peak RSS at {shown}")
        print(
            f"  attempts planned {planned}, journaled {len(ids) - controls} (+{controls} "
            f"controls), duplicates {len(ids) - len(set(ids))}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, help="run the scans on this checkout's src/")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds per scan")
    parser.add_argument("--only", choices=["repros", "patterns", "soak"])
    parser.add_argument(
        "--max-wait",
        type=float,
        default=MAX_WAIT,
        help=f"the Retry-After case's pause budget (default {MAX_WAIT:g}; the scan's own is 300)",
    )
    args = parser.parse_args()
    if args.only in (None, "repros"):
        repros(args.src, args.limit, args.max_wait)
    if args.only in (None, "patterns"):
        patterns()
    if args.only in (None, "soak"):
        soak(args.src, max(args.limit, 300.0))


if __name__ == "__main__":
    main()
