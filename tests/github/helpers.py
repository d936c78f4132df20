"""Run ``entrypoint.sh`` in a fake GitHub environment and read back what GitHub would read.

The parsers here are written from GitHub's documentation, independently of
:mod:`probegate.github`, so a test compares the Action's output with what the runner would see
rather than with the Action's own idea of it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.tools import tool_missing

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINT = REPO / "entrypoint.sh"
VENV_BIN = Path(sys.executable).parent  # holds probegate, python3, zizmor, check-jsonschema

# What the runner's ActionCommand reads back from an escaped workflow command, in one pass (so
# ``%250A`` stays ``%0A``): the inverse of probegate.github.workflow's escaping.
_UNESCAPE_PROPERTY = re.compile(r"%(25|0D|0A|3A|2C)")
_UNESCAPE_DATA = re.compile(r"%(25|0D|0A)")
_UNESCAPED = {"25": "%", "0D": "\r", "0A": "\n", "3A": ":", "2C": ","}


def unescape_data(text: str) -> str:
    """A workflow command's message as the runner reads it."""
    return _UNESCAPE_DATA.sub(lambda m: _UNESCAPED[m.group(1)], text)


def unescape_property(text: str) -> str:
    """A workflow command's property value as the runner reads it."""
    return _UNESCAPE_PROPERTY.sub(lambda m: _UNESCAPED[m.group(1)], text)


OUTPUT_NAMES = {
    "sarif-path",
    "json-path",
    "summary-path",
    "junit-path",
    "score",
    "band",
    "authoritative",
    "findings",
    "new-findings",
    "skipped",
    "exit-code",
}

# The runner splits the log into lines on LF, CR and CRLF; splitting on every line break
# Python knows is stricter still.
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_INTENDED = re.compile(r"::(group|endgroup|error|warning|notice)( [^:]*)?::.*")


@dataclass
class ActionRun:
    rc: int
    stdout: str
    outputs: dict[str, str]
    summary: str
    workspace: Path
    argv_log: list[list[str]] = field(default_factory=list)

    @property
    def annotations(self) -> list[str]:
        return [
            line
            for line in commands_outside_block(self.stdout)
            if line.startswith(("::error", "::warning", "::notice"))
        ]

    def level_count(self, level: str) -> int:
        return sum(
            1
            for a in self.annotations
            if a.startswith(f"::{level} ") or a.startswith(f"::{level}::")
        )


def parse_github_output(text: str) -> dict[str, str]:
    """Read a $GITHUB_OUTPUT file the way the runner does: ``k=v`` or ``k<<D`` ... ``D``."""
    outputs: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        eq, heredoc = line.find("="), line.find("<<")
        if heredoc != -1 and (eq == -1 or heredoc < eq):
            name, delimiter = line[:heredoc], line[heredoc + 2 :]
            value: list[str] = []
            while lines[i] != delimiter:
                value.append(lines[i])
                i += 1
            i += 1
            outputs[name] = "\n".join(value)
        else:
            name, _, val = line.partition("=")
            outputs[name] = val
    return outputs


def read_log(stdout: str) -> tuple[list[str], list[str]]:
    """Split a log as the runner reads it: the lines that could be commands (those outside a
    ``::stop-commands::TOKEN`` ... ``::TOKEN::`` block) and the tokens of the blocks.

    Inside a block the runner ignores every command but the one that ends it, so a nested
    ``::stop-commands::`` there is plain text.
    """
    outside: list[str] = []
    tokens: list[str] = []
    token: str | None = None
    for line in _LINE_BREAKS.split(stdout):
        if token is not None:
            if line.strip() == f"::{token}::":
                token = None
            continue
        match = re.fullmatch(r"::stop-commands::(.*)", line.strip())
        if match:
            token = match.group(1)
            tokens.append(token)
            continue
        if line.strip():
            outside.append(line)
    assert token is None, "the stop-commands block was never closed"
    return outside, tokens


def commands_outside_block(stdout: str) -> list[str]:
    return read_log(stdout)[0]


def block_text(stdout: str) -> str:
    """What was printed inside the stop-commands block."""
    match = re.search(r"::stop-commands::([0-9a-f]+)\n(.*)\n::\1::", stdout, re.S)
    assert match, "no stop-commands block"
    return match.group(2)


def assert_only_intended_commands(stdout: str) -> None:
    """Outside the stop-commands block the Action prints its own commands and nothing else."""
    outside, tokens = read_log(stdout)
    assert len(tokens) == 1, tokens
    assert re.fullmatch(r"[0-9a-f]{32}", tokens[0]), "the token must be 128 random bits"
    for line in outside:
        assert _INTENDED.fullmatch(line), f"unexpected line outside the block: {line!r}"


def write_fake_probegate(bin_dir: Path) -> Path:
    """A `probegate` that records its argv (JSON, one line per call) and does what FAKE_* say.

    With FAKE_SLEEP a scan runs that long unless a signal stops it: then it takes
    FAKE_STOPPING seconds to write its report (more signals may come meanwhile), writes the
    FAKE_* files and exits 143. Every signal it gets is one line of FAKE_SIGNAL_LOG.
    """
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "probegate"
    script.write_text(
        f"#!{sys.executable}\n"
        + """
import json, os, shutil, sys
from pathlib import Path


import signal
import time

argv = sys.argv[1:]
received = []


def on_signal(signum, frame):
    received.append(signum)
    with open(os.environ["FAKE_SIGNAL_LOG"], "a", encoding="utf-8") as handle:
        handle.write(signal.Signals(signum).name + "\\n")


log = os.environ.get("FAKE_ARGV_LOG")
if log:
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(argv) + "\\n")
sys.stdout.write(os.environ.get("FAKE_STDOUT", ""))
sys.stdout.flush()
sys.stderr.write(os.environ.get("FAKE_STDERR", ""))
sys.stderr.flush()
if argv and argv[0] == "scan" and os.environ.get("FAKE_SLEEP"):
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    deadline = time.monotonic() + float(os.environ["FAKE_SLEEP"])
    while not received and time.monotonic() < deadline:
        time.sleep(0.02)
    if received:
        time.sleep(float(os.environ.get("FAKE_STOPPING", "0")))
        os.environ["FAKE_RC"] = "143"
if argv and argv[0] == "scan":
    out = next((a.split("=", 1)[1] for a in argv if a.startswith("--output-dir=")), None)
    for variable, name in (("FAKE_SCAN_JSON", "scan.json"), ("FAKE_SUMMARY_MD", "summary.md")):
        source = os.environ.get(variable)
        if source and out:
            Path(out).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, Path(out) / name)
sys.exit(int(os.environ.get("FAKE_RC", "0")))
""",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def run_action(
    tmp_path: Path,
    inputs: dict[str, str],
    *,
    fake: bool = False,
    env: dict[str, str] | None = None,
    umask: int | None = None,
    workspace: Path | None = None,
) -> ActionRun:
    """Run entrypoint.sh as the container would: cwd = workspace, inputs as PG_* variables."""
    started = start_action(tmp_path, inputs, fake=fake, env=env, umask=umask, workspace=workspace)
    return started.finish(timeout=120)


@dataclass
class StartedAction:
    """entrypoint.sh running (``proc``), and where GitHub would read what it wrote."""

    proc: subprocess.Popen[bytes]
    workspace: Path
    github_output: Path
    step_summary: Path
    argv_log: Path
    stdout_path: Path  # files, not pipes: a full pipe would stall the script while it runs
    stderr_path: Path

    def finish(self, timeout: float) -> ActionRun:
        self.proc.wait(timeout=timeout)
        stdout, stderr = self.stdout_path.read_bytes(), self.stderr_path.read_bytes()
        # The entrypoint sends everything to stdout; stderr staying empty proves it.
        assert stderr == b"", stderr
        calls = []
        if self.argv_log.exists():
            lines = self.argv_log.read_text(encoding="utf-8").splitlines()
            calls = [json.loads(line) for line in lines]
        return ActionRun(
            rc=self.proc.returncode,
            stdout=stdout.decode("utf-8", errors="replace"),
            outputs=parse_github_output(self.github_output.read_text(encoding="utf-8")),
            summary=self.step_summary.read_text(encoding="utf-8"),
            workspace=self.workspace,
            argv_log=calls,
        )


def start_action(
    tmp_path: Path,
    inputs: dict[str, str],
    *,
    fake: bool = False,
    env: dict[str, str] | None = None,
    umask: int | None = None,
    workspace: Path | None = None,
) -> StartedAction:
    """Start entrypoint.sh as :func:`run_action` runs it, without waiting for it."""
    ws = workspace or tmp_path / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    github_output = tmp_path / "github_output"
    step_summary = tmp_path / "step_summary"
    github_output.touch()
    step_summary.touch()
    path = [str(VENV_BIN), "/usr/bin", "/bin"]
    full_env = {
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "GITHUB_WORKSPACE": str(ws),
        "GITHUB_OUTPUT": str(github_output),
        "GITHUB_STEP_SUMMARY": str(step_summary),
        **inputs,
        **(env or {}),
    }
    argv_log = tmp_path / "argv.jsonl"
    if fake:
        write_fake_probegate(tmp_path / "fakebin")
        path.insert(0, str(tmp_path / "fakebin"))
        full_env["FAKE_ARGV_LOG"] = str(argv_log)
    full_env["PATH"] = os.pathsep.join(path)
    command = ["bash", str(ENTRYPOINT)]
    if umask is not None:
        command = ["bash", "-c", f'umask {umask:03o}; exec bash "$0"', str(ENTRYPOINT)]
    stdout_path, stderr_path = tmp_path / "action.stdout", tmp_path / "action.stderr"
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        proc = subprocess.Popen(command, cwd=ws, env=full_env, stdout=out, stderr=err)
    return StartedAction(proc, ws, github_output, step_summary, argv_log, stdout_path, stderr_path)


def which(tool: str) -> str | None:
    candidate = VENV_BIN / tool
    return str(candidate) if candidate.exists() else shutil.which(tool)


def require_tool(tool: str) -> str:
    """The tool's path; missing, it skips a local run and fails under CI (tests/tools.py)."""
    path = which(tool)
    if path is None:
        tool_missing(f"{tool} is not installed (make install)")
    return path
