"""`make container-test`: the Action's image built from the Dockerfile and run as GitHub runs it.

Not part of `make test`: it needs podman (and runc, debootstrap) and several minutes. What it
does (container/README.md):

1. the base image: a stand-in for python:3.13-slim-trixie built from Debian's packages
   (container/build-base.sh), once, unless ``--rebuild-base``;
2. the Action's image: ``podman build`` of the repository's Dockerfile on that base;
3. three scenes, each a ``podman run`` of the image as GitHub runs a container action: the
   workspace mounted at /github/workspace (the working directory) and owned by the runner's
   user (uid 1001), the inputs as the ``PG_*`` variables of action.yml, ``GITHUB_OUTPUT`` and
   ``GITHUB_STEP_SUMMARY`` files in a mounted directory, the container running as root:

   - **quick start**: the README's workflow step (its ``with:`` inputs) against an agent run
     as a service container beside it (tests/servers/openai_agent.py, the weak agent);
   - **fail-on**: the demo agent with ``fail-on: high``: exit 1, annotations, summary;
   - **cancellation**: a slow scan, SIGINT to the container's PID 1, SIGTERM 7.5 s later if it
     still runs (as GitHub cancels a job): exit 143, a partial report, outputs and summary.

   Each checks the outputs, the summary, the files and that every file the run wrote belongs
   to the workspace's owner;
4. figures: build times, the image's size, start-up times; with ``--reproducible`` a second
   build without cache, and every file of both images compared.

Run: ``make container-test`` (or ``.venv/bin/python container/container_test.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.github.helpers import (  # noqa: E402
    OUTPUT_NAMES,
    assert_only_intended_commands,
    block_text,
    parse_github_output,
)
from tests.github.test_quickstart import inputs_as_env, probegate_step, readme_workflow  # noqa: E402
from tests.servers.configs import openai_config  # noqa: E402

BASE = "localhost/probegate-base:trixie"
IMAGE = "localhost/probegate-action:test"
# A store of its own, always vfs (it works where overlay cannot, in containers and sandboxes):
# the machine's own store keeps the driver it was first used with, and podman refuses to open
# it with another ("database graph driver ... does not match"), while an image imported into
# one store is not found in the other. Kept between runs, so the base is built once.
STORE = Path(os.environ.get("PROBEGATE_CONTAINER_STORE", "/var/lib/probegate/container-store"))
STORE_OPTIONS = [
    "--root",
    str(STORE / "root"),
    "--runroot",
    str(STORE / "run"),
    "--storage-driver",
    "vfs",
]
PODMAN = ["podman", *STORE_OPTIONS]
# Container limits podman must be told here: its defaults for root exceed what this sandbox
# lets a process set (runc fails with "error setting rlimits"). 1,024 files is common.
LIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"]
RUNNER = (1001, 1001)  # the runner's user on GitHub's hosted runners
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
SIGTERM_AFTER = 7.5
AGENT_PORT = 8080

# The weak agent, listening on every interface of its own container (the tests' servers
# listen on 127.0.0.1 only).
AGENT = f"""
import sys, threading
sys.path.insert(0, "/src")
from tests.servers.base import LoopbackHTTPServer
from tests.servers.openai_agent import OpenAIAgentHandler, OpenAIAgentServer
agent = OpenAIAgentServer()
httpd = LoopbackHTTPServer(("0.0.0.0", {AGENT_PORT}), OpenAIAgentHandler)
httpd.owner = agent
print("ready", flush=True)
httpd.serve_forever()
"""


def podman(*args: str, check: bool = True, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PODMAN, *args], check=check, text=True, **kwargs)


def timed(what: str, fn: Callable[[], Any], figures: dict[str, str]) -> Any:
    start = time.monotonic()
    out = fn()
    figures[what] = f"{time.monotonic() - start:.1f} s"
    return out


def build(figures: dict[str, str], rebuild_base: bool) -> None:
    exists = podman("image", "exists", BASE, check=False).returncode == 0
    if rebuild_base or not exists:
        timed(
            "base image build (debootstrap)",
            lambda: subprocess.run(
                [str(ROOT / "container" / "build-base.sh"), BASE, *STORE_OPTIONS], check=True
            ),
            figures,
        )
    timed("Action image build", lambda: build_image(IMAGE), figures)
    sizes = {name: image_size(name) for name in (BASE, IMAGE)}
    figures["base image size"] = f"{sizes[BASE] / 1e6:.0f} MB"
    figures["Action image size"] = f"{sizes[IMAGE] / 1e6:.0f} MB"


def build_image(tag: str, *extra: str) -> None:
    """The Dockerfile as it is, on the stand-in base. RUN steps reach the package index through
    the host's network; the host's CA bundle is mounted for them (a TLS-inspecting proxy's CA
    may be in it), never copied into the image."""
    args = ["build", "--network", "host", "--build-arg", f"BASE_IMAGE={BASE}", "-t", tag]
    if HOST_CA.is_file():
        args += ["--volume", f"{HOST_CA}:{HOST_CA}:ro"]
    log = Path(tempfile.mkstemp(prefix="probegate-build-", suffix=".log")[1])
    with log.open("w") as out:
        done = podman(*args, *extra, "-f", "Dockerfile", ".", cwd=ROOT, stdout=out,
                      stderr=subprocess.STDOUT, check=False)  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"podman build failed; its log: {log}")
    log.unlink()


def image_size(name: str) -> int:
    return int(podman("image", "inspect", "--format", "{{.Size}}", name,
                      capture_output=True).stdout.strip())  # fmt: skip


@dataclass
class Run:
    """One run of the Action's container and what GitHub would read of it."""

    name: str
    workspace: Path
    commands: Path  # the mounted directory of GITHUB_OUTPUT and GITHUB_STEP_SUMMARY
    container: str = ""
    rc: int = -1
    log: str = ""

    @property
    def outputs(self) -> dict[str, str]:
        return parse_github_output((self.commands / "output").read_text(encoding="utf-8"))

    @property
    def summary(self) -> str:
        return (self.commands / "summary").read_text(encoding="utf-8")

    def report(self) -> dict[str, Any]:
        path = self.workspace / self.outputs["json-path"]
        return json.loads(path.read_text(encoding="utf-8"))


def start(
    run: Run, inputs: dict[str, str], *, network: str = "none", env: dict[str, str] | None = None
) -> None:
    """``podman run -d`` as the runner runs a container action (its docker run, in short)."""
    args = ["run", "-d", *LIMITS, "--network", network, "--workdir", "/github/workspace"]
    args += [
        "-v",
        f"{run.workspace}:/github/workspace",
        "-v",
        f"{run.commands}:/github/file_commands",
    ]
    variables = {
        "GITHUB_WORKSPACE": "/github/workspace",
        "GITHUB_OUTPUT": "/github/file_commands/output",
        "GITHUB_STEP_SUMMARY": "/github/file_commands/summary",
        "GITHUB_ACTIONS": "true",
        "CI": "true",
        "HOME": "/github/home",
        **inputs,
        **(env or {}),
    }
    for key, value in variables.items():
        args += ["-e", f"{key}={value}"]
    run.container = podman(*args, IMAGE, capture_output=True).stdout.strip()


def finish(run: Run, timeout: float = 600) -> Run:
    run.rc = int(podman("wait", run.container, capture_output=True, timeout=timeout).stdout)
    run.log = podman("logs", run.container, capture_output=True).stdout
    podman("rm", run.container, capture_output=True)
    return run


def workspace(base: Path, name: str) -> Run:
    ws = base / name / "workspace"
    commands = base / name / "file_commands"
    ws.mkdir(parents=True)
    commands.mkdir()
    for file in ("output", "summary"):
        (commands / file).touch()
    os.chown(ws, *RUNNER)
    return Run(name, ws, commands)


def owned_by_runner(run: Run) -> None:
    written = [p for p in run.workspace.rglob("*")]
    assert written, "the run wrote nothing"
    wrong = [p for p in written if (p.lstat().st_uid, p.lstat().st_gid) != RUNNER]
    assert not wrong, f"not the workspace owner's: {wrong[:5]}"


# ------------------------------------------------------------------------------ scenes


def quick_start(base: Path) -> str:
    """The README's step, against the agent as a service container of the job."""
    run = workspace(base, "quick-start")
    step = probegate_step(readme_workflow()[1])
    inputs = inputs_as_env(step["with"])
    agent = podman("run", "-d", *LIMITS, "--network", "podman", "-v", f"{ROOT}:/src:ro", BASE,
                   "python3", "-c", AGENT, capture_output=True).stdout.strip()  # fmt: skip
    try:
        address = podman("inspect", "--format", "{{.NetworkSettings.IPAddress}}", agent,
                         capture_output=True).stdout.strip()  # fmt: skip
        deadline = time.monotonic() + 30
        while "ready" not in podman("logs", agent, capture_output=True).stdout:
            assert time.monotonic() < deadline, "the agent's container never got ready"
            time.sleep(0.2)
        openai_config(run.workspace, f"http://{address}:{AGENT_PORT}/v1")
        for path in run.workspace.iterdir():
            os.chown(path, *RUNNER)
        secrets = {name: "test-key" for name in step.get("env", {})}
        start(run, inputs, network="podman", env=secrets)
        finish(run)
    finally:
        podman("rm", "-f", agent, capture_output=True)
    assert run.rc == 0, run.log[-3000:]
    assert_only_intended_commands(run.log)
    outputs = run.outputs
    assert outputs.keys() == OUTPUT_NAMES and outputs["exit-code"] == "0"
    assert outputs["sarif-path"] == "probegate-out/scan.sarif"
    assert json.loads((run.workspace / outputs["sarif-path"]).read_text())["runs"][0]["results"]
    findings = run.report()["findings"]
    assert findings and outputs["new-findings"] == str(len(findings))
    assert "probegate gate: passed" in run.summary and "title=probegate baseline" in run.log
    owned_by_runner(run)
    return f"exit 0, {len(findings)} findings, SARIF and summary published, files 1001:1001"


def fail_on(base: Path) -> str:
    run = workspace(base, "fail-on")
    start(run, {"PG_TARGET": "demo", "PG_FAIL_ON": "high", "PG_FORMATS": "json,sarif,md,junit"})
    finish(run)
    assert run.rc == 1, run.log[-3000:]
    assert_only_intended_commands(run.log)
    outputs = run.outputs
    assert outputs["exit-code"] == "1" and outputs["junit-path"] == "probegate-out/junit.xml"
    assert "probegate gate: failed" in run.summary
    errors = [line for line in run.log.splitlines() if line.startswith("::error ")]
    assert errors, "no annotation for the high findings"
    owned_by_runner(run)
    return f"exit 1, {len(errors)} error annotations, outputs and summary published"


def cancellation(base: Path) -> str:
    """A scan paced to 5 requests a second, cancelled the way GitHub cancels a job."""
    run = workspace(base, "cancellation")
    inputs = {"PG_TARGET": "demo", "PG_FORMATS": "json,sarif,md,html", "PG_ARGS": "--rps 5"}
    start(run, inputs)
    journals = run.workspace / ".probegate" / "scans"
    deadline = time.monotonic() + 120
    while sum(len(p.read_bytes().splitlines()) for p in journals.glob("*/journal.jsonl")) < 3:
        assert time.monotonic() < deadline, "the scan never got going"
        time.sleep(0.1)
    sent = time.monotonic()
    podman("kill", "--signal", "SIGINT", run.container, capture_output=True)
    termed = False
    while podman("inspect", "--format", "{{.State.Running}}", run.container,
                 capture_output=True).stdout.strip() == "true":  # fmt: skip
        if not termed and time.monotonic() - sent >= SIGTERM_AFTER:
            podman("kill", "--signal", "SIGTERM", run.container, capture_output=True, check=False)
            termed = True
        time.sleep(0.05)
    took = time.monotonic() - sent
    finish(run)
    assert run.rc == 143, run.log[-3000:]
    assert_only_intended_commands(run.log)
    outputs = run.outputs
    assert outputs["exit-code"] == "143" and outputs["json-path"] == "probegate-out/scan.json"
    report = run.report()
    assert report["stopped_reason"] == "cancelled"
    done, planned = report["coverage"]["attempts_completed"], report["coverage"]["attempts_planned"]
    assert 0 < done < planned
    assert "probegate gate: cancelled" in run.summary
    assert "interrupted by SIGTERM" in block_text(run.log)
    written = {p.name for p in (run.workspace / "probegate-out").iterdir()}
    assert written == {"scan.json", "scan.sarif", "summary.md", "report.html"}, written
    owned_by_runner(run)
    return (
        f"SIGINT to PID 1, {'SIGTERM 7.5 s later, ' if termed else ''}container ended "
        f"{took:.1f} s after SIGINT with exit 143; partial report of {done}/{planned} attempts "
        f"(stopped_reason cancelled) in json, sarif, md, html; outputs, summary "
        f"('probegate gate: cancelled'), files 1001:1001"
    )


# ------------------------------------------------------------------------------ figures


def startup(figures: dict[str, str]) -> None:
    """What a step pays to start: a container (podman with vfs copies the image's files for
    each one: most of it), and inside it the entrypoint's cheapest calls, timed by bash in one
    container, the median of five."""
    start = time.monotonic()
    podman("run", "--rm", *LIMITS, "--network", "none", "--entrypoint", "true", IMAGE,
           capture_output=True)  # fmt: skip
    figures["start-up: a container (podman run true, vfs)"] = f"{time.monotonic() - start:.1f} s"
    imports = "import asyncio, email.parser, json, ssl, urllib.request"
    for label, image, command in (
        ("start-up: probegate --version", IMAGE, "probegate --version"),
        ("start-up: python -m probegate.github token", IMAGE, "python -m probegate.github token"),
        ("start-up: python -c pass", IMAGE, "python -c pass"),
        (f"start-up: python -c '{imports}'", IMAGE, f"python -c '{imports}'"),
        ("start-up: the same in the base (no compiled standard library)", BASE,
         f"python -B -c '{imports}'"),
    ):  # fmt: skip
        script = (
            f"TIMEFORMAT=%R; for i in 1 2 3 4 5; do {{ time {command} >/dev/null; }} 2>&1; done"
        )
        out = podman("run", "--rm", *LIMITS, "--network", "none", "--entrypoint", "bash", image,
                     "-c", script, capture_output=True).stdout  # fmt: skip
        times = sorted(float(line) for line in out.split())
        figures[label] = f"{times[2]:.3f} s"


def files_of(image: str) -> dict[str, str]:
    """Every regular file of an image: path -> sha256 (and symlinks -> target)."""
    container = podman("create", image, capture_output=True).stdout.strip()
    try:
        with tempfile.TemporaryFile() as tar_file:
            podman("export", container, stdout=tar_file)
            tar_file.seek(0)
            out: dict[str, str] = {}
            with tarfile.open(fileobj=tar_file) as tar:
                for member in tar:
                    if member.isfile():
                        data = tar.extractfile(member)
                        assert data is not None
                        out[member.name] = hashlib.sha256(data.read()).hexdigest()
                    elif member.issym():
                        out[member.name] = "-> " + member.linkname
            return out
    finally:
        podman("rm", container, capture_output=True)


def reproducible(figures: dict[str, str]) -> None:
    again = IMAGE + "-again"
    timed("second Action image build (no cache)", lambda: build_image(again, "--no-cache"), figures)
    first, second = files_of(IMAGE), files_of(again)
    differ = sorted(k for k in first.keys() | second.keys() if first.get(k) != second.get(k))
    figures["files differing between the two builds"] = f"{len(differ)} of {len(first)}" + (
        f": {', '.join(differ[:10])}" if differ else ""
    )
    podman("rmi", again, capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rebuild-base", action="store_true", help="build the base again")
    parser.add_argument("--reproducible", action="store_true", help="build twice and compare")
    args = parser.parse_args()
    for tool in ("podman", "runc"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is missing: apt-get install podman runc debootstrap")
    if os.geteuid() != 0:
        sys.exit("run as root: the scenes hand files to uid 1001 as GitHub's runner does")
    figures: dict[str, str] = {}
    build(figures, args.rebuild_base)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="probegate-container-") as tmp:
        for scene in (quick_start, fail_on, cancellation):
            try:
                said = timed(f"scene {scene.__name__}", lambda s=scene: s(Path(tmp)), figures)
                print(f"PASS {scene.__name__}: {said}", flush=True)
            except AssertionError as exc:
                failed += 1
                print(f"FAIL {scene.__name__}: {exc}", flush=True)
    startup(figures)
    if args.reproducible:
        reproducible(figures)
    print()
    for what, figure in figures.items():
        print(f"{what}: {figure}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
