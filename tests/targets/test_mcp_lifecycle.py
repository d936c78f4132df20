"""probegate's MCP server never outlives its scan: normal end, errors, SIGINT, SIGTERM.

Each test pins the server's port with ``--mcp-listen`` and checks it refuses connections once
the scan is over. The signal tests run the installed entry point and check more: the port
closes while the process is still alive (a worker is still waiting on a slow agent), so it is
the scan that stopped the server, not the process dying around it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import probegate.scan.finalise
from probegate.cli import main
from tests.servers.base import Handler, LoopbackServer
from tests.servers.brain_model import SECRETS, BrainModelServer, tool_config
from tests.servers.configs import scan_args, write_config
from tests.servers.mcp_agent import McpAgentService, http_target

PROBE = "asi01.indirect-document-email-exfil.v1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def serves(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a socket listening on ``port``.

    Read from /proc: a connection to the port cannot tell the scan's server from another
    test's that took the freed port meanwhile (tests run side by side), which once kept a
    signal test waiting 10 s for a port that the scan had in fact closed."""
    if not Path("/proc/self/net/tcp").exists():  # not Linux: the connection has to do
        return listening(port)
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
        tables = [Path(f"/proc/{pid}/net/{name}").read_text() for name in ("tcp", "tcp6")]
    except FileNotFoundError:  # the process is gone, and its sockets with it
        return False
    inodes = set()
    for fd in fds:
        with contextlib.suppress(OSError):  # closed since the listing: not the server's
            link = os.readlink(fd)
            if link.startswith("socket:["):
                inodes.add(link[len("socket:[") : -1])
    for table in tables:
        for row in table.splitlines()[1:]:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port and inode in inodes:
                return True  # 0A: LISTEN
    return False


def wait_for(condition: Any, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


class _StuckHandler(Handler):
    def do_POST(self) -> None:
        server: StuckAgent = self.owner
        self.read_json()
        server.reached.set()
        if server.status is not None:
            self.send_json(server.status, {"detail": "no"})
            return
        server.release.wait(timeout=30)
        self.send_json(200, {"output": "sorry, that took a while"})


class StuckAgent(LoopbackServer):
    """An agent service that answers ``status`` at once, or nothing until released."""

    handler = _StuckHandler

    def __init__(self, status: int | None = None) -> None:
        super().__init__()
        self.status = status
        self.reached = threading.Event()
        self.release = threading.Event()

    def stop(self) -> None:
        self.release.set()
        super().stop()


@pytest.fixture
def stuck() -> Iterator[StuckAgent]:
    with StuckAgent() as server:
        yield server


def scan_argv(tmp: Path, target: dict[str, Any], port: int, *extra: str) -> list[str]:
    listen = f"127.0.0.1:{port}"
    extra = ("--probes", PROBE, "--mcp-listen", listen, "--retries", "0", *extra)
    return scan_args(write_config(tmp, target), tmp, *extra)


def test_normal_end(tmp_path: Path) -> None:
    port = free_port()
    with BrainModelServer() as brain, McpAgentService(brain.endpoint(careful=False)) as service:
        code = main(scan_argv(tmp_path, service.target(tool_config(), list(SECRETS)), port))
    assert code == 0
    report = json.loads((tmp_path / "out" / "scan.json").read_text(encoding="utf-8"))
    assert report["mcp"]["calls"] > 0  # it served on that port...
    assert not serves(os.getpid(), port)  # ...and is gone


def test_target_error_end(tmp_path: Path) -> None:
    port = free_port()
    with StuckAgent(status=401) as agent:
        code = main(scan_argv(tmp_path, http_target(f"{agent.url}/chat", tool_config(), []), port))
    assert code == 3
    assert agent.reached.is_set()
    assert not serves(os.getpid(), port)


def test_internal_error_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        assert serves(os.getpid(), port), "the server should be up while the scan runs"
        raise RuntimeError("a bug")

    monkeypatch.setattr(probegate.scan.finalise, "assemble", broken)
    port = free_port()
    with BrainModelServer() as brain, McpAgentService(brain.endpoint(careful=True)) as service:
        code = main(scan_argv(tmp_path, service.target(tool_config(), list(SECRETS)), port))
    assert code == 4
    assert not serves(os.getpid(), port)


def test_a_port_in_use_is_a_usage_error(tmp_path: Path, stuck: StuckAgent) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        target = http_target(f"{stuck.url}/chat", tool_config(), [])
        code = main(scan_argv(tmp_path, target, port))
    assert code == 2
    assert not stuck.reached.is_set()  # nothing was sent to the agent


def threads_of(proc: subprocess.Popen[str]) -> str:
    """Where each thread of a scan that did not stop was (faulthandler's dump on SIGABRT),
    with what the scan had said: a failure that happened once in CI says why next time."""
    proc.send_signal(signal.SIGABRT)
    _, err = proc.communicate(timeout=30)
    return str(err)[-20_000:]


@pytest.mark.parametrize(("signum", "expected"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signals(tmp_path: Path, stuck: StuckAgent, signum: int, expected: int) -> None:
    port = free_port()
    argv = scan_argv(tmp_path, http_target(f"{stuck.url}/chat", tool_config(), []), port)
    entry = Path(sys.executable).parent / "probegate"
    proc = subprocess.Popen(
        [str(entry), *argv, "--timeout", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A run that does not stop can be asked what its threads are doing (SIGABRT).
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
    )
    try:
        assert wait_for(stuck.reached.is_set), "the scan never reached the agent"
        assert serves(proc.pid, port) and listening(port)
        proc.send_signal(signum)
        # The server stops while a worker still waits on the agent: the scan closed it.
        if not wait_for(lambda: not serves(proc.pid, port), timeout=10):
            pytest.fail(f"the port was still open 10 s after the signal:\n{threads_of(proc)}")
        assert proc.poll() is None
        stuck.release.set()
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == expected
    # a clean stop that says what stopped it and how to go on (docs: README, exit codes)
    what = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
    assert f"interrupted by {what}: scan " in err
    assert err.strip().splitlines()[-1].startswith("resume with: probegate scan --resume ")
    assert "Traceback" not in err


def test_without_the_mcp_extra(tmp_path: Path, stuck: StuckAgent) -> None:
    """One clear line and exit 2, before any request, when the SDK is not installed."""
    argv = scan_argv(tmp_path, http_target(f"{stuck.url}/chat", tool_config(), []), free_port())
    hide = (
        "import sys; sys.modules['mcp'] = None; sys.modules['uvicorn'] = None; "
        "from probegate.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", hide, *argv], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: target.http mentions {{mcp_url}}: the agent needs probegate's MCP server, and "
        "the mcp package is missing; install the MCP extra: pip install 'probegate[mcp]'"
    ]
    assert not stuck.reached.is_set()
