"""Reading a stored 10,000-finding report: time and peak memory (target: 1 s and 150 MB each).

``probegate report``, ``compare`` and ``merge`` (and ``scan --baseline``, and the Action) read a
stored report through one strict reader (models/stored.py): UTF-8, no duplicate key, finite
numbers, bounded depth, then validation into a ScanReport. Each figure comes from a child
process of its own, so one's heap never flatters the next: a fresh interpreter imports what
the command imports, then reads the file once, and prints the seconds the read took and the
process's peak resident memory (imports included: what a CI runner must have); CPU seconds
beside the wall-clock ones, which a loaded machine stretches. The peak is the process's
``VmHWM``: its ``ru_maxrss`` starts at the bench's own peak (Linux keeps it across fork and
exec), which had this figure at 339 MB whatever the reader did.

Where the memory went when the report was read whole (measured for the record): the raw file
(24 MB), its text while it is parsed (the agents' text is not all ASCII, so four bytes a
character: ~96 MB), the parsed data, and the validated ScanReport, of which pydantic's
per-instance set of the fields given was nearly half: 267 MB at the peak. The reader now reads
a piece of the file at a time and validates each finding as it is parsed
(models/report_json.py), and the models share their sets of fields (perf.share_field_sets).

The whole commands are timed too, as a user runs them (``report --output json`` and ``html``,
``compare``, ``merge`` of two shards, unsigned and signed with an HMAC and an Ed25519 key), for
context: they also render, sign and write, which the read target does not cover. The JSON report
and the HTML page are written a piece at a time (reports/json_report.py, html_report.py) and a
signature is made from the report's fields a piece at a time (reports/signing.py): written
whole, ``report --output json`` peaked at 200 MB and a signed merge at 198 MB. The SARIF log
is written a rule and a result at a time, each checked against the schema as it comes
(reports/sarif/): built whole, it peaked at 202 MB. ``compare`` reads each finding's
transcript and evidence and lets them go (it compares fingerprints and counts): 166 MB at the
peak when it kept the evidence.

The 1 s target is absolute, and machines of this class differ: the read took 0.82 to 0.98 s on
one (2026-12-06, early) and 2.29 s (2.29 s of CPU: pydantic's validation alone of the parsed
report took 1.8 s there) on a slower one later that day, with the same code. So the bench first
prints how long a fixed piece of work takes on the machine it runs on (bench/machine.py: about
300 ms on the slower one, idle), to read the figure against.

Run: ``.venv/bin/python bench/bench_stored.py`` (``make bench`` runs it too).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_compare import FINDINGS, _pair  # the sibling benches; run as a script from bench/
from bench_reports import synthetic_report
from machine import describe

from probegate.canonical import pretty_bytes
from probegate.models.report import ScanReport
from probegate.reports.signing import KEY_ENV, SECRET_ENV, generate_key_pair

TARGET_SECONDS = 1.0
TARGET_MB = 150.0
PROBEGATE = Path(sys.executable).parent / "probegate"

# A child that reads one report as the commands do and prints what it cost.
_READ = """
import json, resource, sys, time
import probegate.cli  # what a command has imported before it reads
from probegate.models.stored import load_report
from pathlib import Path
start, cpu = time.perf_counter(), time.process_time()
report = load_report(Path(sys.argv[1]))
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
try:  # this process's own peak: ru_maxrss keeps the parent's across fork and exec (Linux)
    status = Path("/proc/self/status").read_text().splitlines()
    peak = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) / 1024
except (OSError, StopIteration):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
figures = {"seconds": seconds, "cpu": cpu, "peak_mb": peak}
print(json.dumps({**figures, "findings": len(report.findings)}))
"""


def read_figures(path: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _READ, str(path)], capture_output=True, text=True, check=True
    )
    figures: dict[str, float] = json.loads(done.stdout)
    return figures


# A child that runs one command and prints its wall time and its peak memory: the largest
# child a process has waited for is all ``RUSAGE_CHILDREN`` says, so each gets a fresh parent.
_COMMAND = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.run(sys.argv[1:], capture_output=True, check=False).returncode
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_mb": peak, "code": code}))
"""


def command_figures(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[float, float, int]:
    """Wall seconds, peak MB and exit code of one probegate command."""
    done = subprocess.run(
        [sys.executable, "-c", _COMMAND, str(PROBEGATE), *argv],
        cwd=cwd, capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    figures = json.loads(done.stdout)
    return figures["seconds"], figures["peak_mb"], figures["code"]


def shards(count: int) -> list[ScanReport]:
    """The synthetic scan as the reports of two ``--shard`` jobs, half the findings each."""
    full = synthetic_report(count)
    out = []
    for number, part in enumerate((slice(0, count // 2), slice(count // 2, None)), 1):
        findings = full.findings[part]
        probes = {f.probe_id for f in findings}
        results = [r for r in full.results if r.probe_id in probes]
        update = {"findings": findings, "results": results, "shard": f"{number}/2"}
        out.append(full.model_copy(update={**update, "scan_id": f"pg-bench00000{number}"}))
    return out


def main() -> None:
    print(describe(), flush=True)  # the 1 s target is absolute: how fast this machine is
    baseline, current = _pair()
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base, cur = root / "baseline.json", root / "current.json"
        base.write_bytes(pretty_bytes(baseline.to_dict()))
        cur.write_bytes(pretty_bytes(current.to_dict()))
        size = cur.stat().st_size / 1e6
        parts = [root / "shard-1.json", root / "shard-2.json"]
        for path, shard in zip(parts, shards(FINDINGS), strict=True):
            path.write_bytes(pretty_bytes(shard.to_dict()))
        best: dict[str, float] | None = None
        for _ in range(3):  # best of three: a shared machine's load falls on some of them
            figures = read_figures(cur)
            assert figures["findings"] == FINDINGS
            if best is None or figures["seconds"] < best["seconds"]:
                best = figures
        assert best is not None
        ok = best["seconds"] <= TARGET_SECONDS and best["peak_mb"] <= TARGET_MB
        failed |= not ok
        print(
            f"bench_stored: read a {FINDINGS:,}-finding report ({size:.1f} MB): "
            f"{best['seconds'] * 1000:.0f} ms ({best['cpu'] * 1000:.0f} ms CPU), "
            f"peak {best['peak_mb']:.0f} MB "
            f"(target <= {TARGET_SECONDS * 1000:.0f} ms and {TARGET_MB:.0f} MB) "
            f"{'OK' if ok else 'OVER TARGET'}"
        )
        key = root / "signing.key"
        key.write_bytes(generate_key_pair()[0])
        unsigned = {k: v for k, v in os.environ.items() if k not in (SECRET_ENV, KEY_ENV)}
        signing = {**unsigned, SECRET_ENV: "b" * 64, KEY_ENV: str(key)}
        merge = ["merge", *map(str, parts), "--output-dir", str(root / "m")]
        runs = {
            "report --output json": (["report", str(cur), "--output-dir", str(root / "r")], {}),
            "report --output html": (["report", str(cur), "--output", "html"], {}),
            "report --output sarif": (["report", str(cur), "--output", "sarif"], {}),
            "compare": (["compare", str(base), str(cur), "--output", "json"], {}),
            "merge of 2 shards": ([*merge, "--no-sign"], unsigned),
            "merge, signed": ([*merge, "--sign"], signing),
        }
        for name, (argv, env) in runs.items():
            seconds, peak, code = command_figures([*argv, "--quiet"], root, env or unsigned)
            print(f"  whole command {name:22} {seconds:5.2f} s, peak {peak:4.0f} MB (exit {code})")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
