"""probegate's MCP server under a flood of idle connections: the scan's results do not move.

Anything that can reach the server's port can open connections. A local process that holds
3,000 of them open and idle (re-opening each one the server closes) during a scan must not
change what the scan concludes, must not fill the job log, and must not be counted as the
agent's doing (docs/agent-service.md, "Limits"). The scan runs as its own process with the
common 1,024-descriptor limit, so the flood is three times what it could hold open; the flood
runs as a process of its own, as a hostile one would.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from probegate.cli import main
from probegate.models.canaries import make_canaries
from probegate.models.probe import Fixtures
from probegate.targets import mcp_connections, mcp_server
from probegate.targets.demo.tools import DEMO_TOOLS
from probegate.targets.mcp_connections import LOG_BURST, PARSE_ERROR, TIMED_OUT, BoundedLog
from probegate.targets.mcp_server import McpHost
from probegate.targets.sandbox import Sandbox
from tests.servers.brain_model import SECRETS, BrainModelServer, tool_config
from tests.servers.configs import scan_args, write_config
from tests.servers.mcp_agent import McpAgentService
from tests.targets.test_mcp_lifecycle import listening, wait_for

# Probes that ride on the MCP server's sandbox: a document, a tool result, memory across two
# conversations.
PROBES = (
    "asi01.indirect-document-email-exfil.v1",
    "asi02.email-recipient-from-tool-result.v1",
    "asi06.cross-session-instruction-plant.v1",
)
FLOOD = 3000
SCAN_NOFILE = 1024


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def flood(port: int, count: int) -> None:
    """Hold ``count`` idle connections to ``port``, re-opening each one the server closes a
    second later, until stdin closes; then print how many it held at most and how many it
    opened. A process of its own, as a hostile one would be: the agent's service in the test's
    process keeps its share of the CPU."""
    import selectors

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, count + 256)), hard))
    while True:  # until the scan's server listens (it starts with the first conversation)
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
            break
        time.sleep(0.02)
    selector = selectors.DefaultSelector()
    selector.register(sys.stdin, selectors.EVENT_READ)
    held: set[socket.socket] = set()
    closed_at: list[float] = [0.0] * count  # when each one the server closed may come back
    opened = most = 0
    while True:
        now = time.monotonic()
        while closed_at and closed_at[0] <= now:
            closed_at.pop(0)
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
            held.add(sock)
            selector.register(sock, selectors.EVENT_READ)
            opened += 1
        most = max(most, len(held))
        for key, _ in selector.select(timeout=0.05):
            if key.fileobj is sys.stdin:
                print(json.dumps({"most": most, "opened": opened}), flush=True)
                return
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                data = sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:  # closed by the server: open another in a second
                selector.unregister(sock)
                held.discard(sock)
                sock.close()
                closed_at.append(time.monotonic() + 1.0)


@contextlib.contextmanager
def flooding(port: int) -> Iterator[dict[str, int]]:
    stats: dict[str, int] = {}
    proc = subprocess.Popen(
        [sys.executable, "-c", f"from {__name__} import flood; flood({port}, {FLOOD})"],
        cwd=Path(__file__).resolve().parents[2],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield stats
    finally:
        out, _err = proc.communicate("stop\n", timeout=60)
        stats.update(json.loads(out))


def _common_limit() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (SCAN_NOFILE, hard))


def scan(tmp: Path, service: McpAgentService, port: int) -> tuple[subprocess.Popen[str], Path]:
    tmp.mkdir()
    config = write_config(tmp, service.target(tool_config(), list(SECRETS)))
    # Two conversations at a time over a model that takes 0.1 s a reply: the scan lasts a few
    # seconds after its server starts, so the flood is there for most of it.
    argv = scan_args(config, tmp, "--timeout", "20", "--mcp-listen", f"127.0.0.1:{port}")
    argv += ["--concurrency", "2"]
    argv += [arg for probe in PROBES for arg in ("--probes", probe)]
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "probegate"), *argv],
        cwd=tmp,
        env={**os.environ, "SOURCE_DATE_EPOCH": "1767225600"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_common_limit,
    )
    return proc, tmp / "out" / "scan.json"


def conclusions(report: dict[str, Any]) -> object:
    """What a scan concludes: its verdicts, findings, score and the agent's MCP traffic."""
    findings = [(f["fp"], f["attempt_count"], f["success"]) for f in report["findings"]]
    mcp = report["mcp"]
    agent = (mcp["conversations"], mcp["calls"], mcp["rejected"])
    return report["results"], report["unjudged"], findings, report["aivss"], agent


@pytest.mark.slow
def test_three_thousand_idle_connections_change_nothing_the_scan_concludes(
    tmp_path: Path,
) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert hard == resource.RLIM_INFINITY or hard > FLOOD + 256, "the flood needs the files"
    with contextlib.ExitStack() as stack:
        # The same scan twice at once, one of them flooded (the flood's CPU slows both alike),
        # each against its own agent and model, so neither slows the other's.
        services = []
        for _ in range(2):
            brain = stack.enter_context(BrainModelServer(latency=0.1))
            services.append(stack.enter_context(McpAgentService(brain.endpoint(careful=False))))
        quiet_port, flooded_port = free_port(), free_port()
        started = time.monotonic()
        with flooding(flooded_port) as flood:
            quiet, quiet_report = scan(tmp_path / "quiet", services[0], quiet_port)
            flooded, flooded_report = scan(tmp_path / "flooded", services[1], flooded_port)
            _out, quiet_err = quiet.communicate(timeout=120)
            _out, err = flooded.communicate(timeout=120)
        took = time.monotonic() - started
        assert services[0].failures == services[1].failures == []
    assert quiet.returncode in (0, 1), quiet_err[-2000:]
    expected = json.loads(quiet_report.read_text())
    assert flooded.returncode == quiet.returncode, err[-2000:]
    report = json.loads(flooded_report.read_text())
    assert flood["most"] == FLOOD
    assert conclusions(report) == conclusions(expected)
    assert not report["unjudged"] and report["findings"]
    assert len(err.encode()) < 100_000, err[:2000]
    print(  # the figures for the record: pytest -s
        f"\nflood held {flood['most']} connections, opened {flood['opened']}; "
        f"scans {took:.1f} s; flooded stderr {len(err.encode())} bytes; "
        f"mcp.unauthenticated {report['mcp']['unauthenticated']}"
    )
    # It was felt (connections closed to make room), and counted apart from the agent's.
    assert report["mcp"]["unauthenticated"]["refused"] > 0


# --------------------------------------------------------------- each limit, on its own

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def host() -> Iterator[McpHost]:
    server = McpHost()
    try:
        yield server
    finally:
        server.close()


def _box() -> Sandbox:
    return Sandbox(list(DEMO_TOOLS), Fixtures(), make_canaries(0, "t"))


def _call(url: str) -> requests.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    body["params"] = {"name": "recall", "arguments": {"query": "notes"}}
    return requests.post(url, json=body, headers=HEADERS, timeout=10)


def _raw(address: tuple[str, int], data: bytes, wait: float = 5.0) -> tuple[int, dict[str, Any]]:
    """What the server answers ``data`` on a connection of its own: status and JSON body."""
    with socket.create_connection(address, timeout=wait) as sock:
        sock.sendall(data)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    head, _sep, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_a_body_300000_levels_deep_is_a_json_rpc_error(host: McpHost) -> None:
    endpoint = host.open(_box())
    deep = b"[" * 300_000 + b"]" * 300_000
    answer = requests.post(endpoint.url, data=deep, headers=HEADERS, timeout=30)
    assert answer.status_code == 400 and answer.headers["content-type"] == "application/json"
    assert answer.json()["error"]["code"] == PARSE_ERROR
    assert _call(endpoint.url).json()["result"]["isError"] is False  # still serving
    summary = host.summary()
    assert summary is not None and summary.rejected.oversized == 1
    assert endpoint.undelivered is None  # refused, not lost: the agent was answered


def test_what_is_not_http_and_what_is_too_slow_is_answered_in_json_rpc(
    host: McpHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_connections, "HEAD_TIMEOUT", 0.3)
    monkeypatch.setattr(mcp_server, "BODY_TIMEOUT", 0.3)
    endpoint = host.open(_box())
    address = host.address
    assert address is not None
    assert _raw(address, b"\x16\x03\x01 not http\r\n\r\n") == (
        400,
        {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": ANY_TEXT}},
    )
    status, body = _raw(address, b"")  # connects, says nothing
    assert (status, body["error"]["code"]) == (408, TIMED_OUT)
    status, body = _raw(address, b"POST /mcp/x HTTP/1.1\r\nHost: a\r\n")  # a head, never ended
    assert (status, body["error"]["code"]) == (408, TIMED_OUT)
    path = endpoint.url.split(str(address[1]), 1)[1].encode()
    late = b"POST " + path + b" HTTP/1.1\r\nHost: a\r\nContent-Length: 99\r\n\r\n{"
    status, body = _raw(address, late)  # the agent's own request, its body never ends
    assert (status, body["error"]["code"]) == (408, TIMED_OUT)
    assert endpoint.undelivered is not None  # its attempt is unjudged
    summary = host.summary()
    assert summary is not None
    assert summary.unauthenticated.model_dump() == {
        "requests": 0,
        "refused": 0,
        "timed_out": 2,
        "invalid": 1,
    }
    assert summary.rejected.model_dump() == dict.fromkeys(summary.rejected.model_dump(), 0)


class _AnyText(str):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(other)

    __hash__ = str.__hash__


ANY_TEXT = _AnyText()


def test_at_the_cap_silent_connections_make_room_and_the_agent_is_answered(
    host: McpHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four connections fill the server; eight more that send nothing are closed after their
    probation; the agent's, whose request comes with it, takes a silent one's place."""
    monkeypatch.setattr(mcp_server, "connection_cap", lambda: 4)
    monkeypatch.setattr(mcp_connections, "GRACE", 0.3)
    endpoint = host.open(_box())
    address = host.address
    assert address is not None
    silent = [socket.create_connection(address) for _ in range(12)]
    try:
        time.sleep(1)  # past every probation and the grace of the four it kept
        summary = host.summary()
        assert summary is not None and summary.unauthenticated.refused == 8
        answer = _call(endpoint.url)
        assert answer.json()["result"]["isError"] is False
        assert endpoint.undelivered is None
        summary = host.summary()
        assert summary is not None and summary.unauthenticated.refused == 9  # one made room
        told = [_peek(sock) for sock in silent]
        assert sum(b"503 Service Unavailable" in t for t in told) == 9  # each told why
        assert told.count(b"") == 3  # the three left open
    finally:
        for sock in silent:
            sock.close()
    assert (summary.calls, summary.rejected.unknown_endpoint) == (1, 0)


def _peek(sock: socket.socket) -> bytes:
    """What waits on ``sock``, without waiting for more."""
    sock.setblocking(False)
    try:
        return sock.recv(65536, socket.MSG_PEEK)
    except BlockingIOError:
        return b""


def test_a_tool_call_the_server_could_not_answer_leaves_the_attempt_unjudged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent is told the call failed and answers anyway; what it said cannot be judged
    on a sandbox that never saw its call."""
    real = Sandbox.call

    def failing(self: Sandbox, name: str, arguments: dict[str, Any]) -> Any:
        if name == "send_email":
            raise RuntimeError("the sandbox broke")
        return real(self, name, arguments)

    monkeypatch.setattr(Sandbox, "call", failing)
    with (
        BrainModelServer() as brain,
        McpAgentService(brain.endpoint(careful=False), tolerant=True) as service,
    ):
        config = write_config(tmp_path, service.target(tool_config(), list(SECRETS)))
        argv = scan_args(config, tmp_path, "--timeout", "20", "--probes", PROBES[0])
        assert main(argv) in (0, 1, 3)
    report = json.loads((tmp_path / "out" / "scan.json").read_text())
    (unjudged, *_) = report["unjudged"]
    assert unjudged["probe_id"] == PROBES[0]
    assert "probegate's MCP server: a tool call failed (RuntimeError)" in unjudged["reason"]
    assert not report["findings"]


def test_the_server_logs_one_line_per_message_and_stops(capsys: pytest.CaptureFixture[str]) -> None:
    log = BoundedLog()
    logger = logging.getLogger("probegate-test-bounded")
    logger.addHandler(log)
    logger.propagate = False
    try:
        for i in range(10_000):
            try:
                raise OSError(24, "Too many open files")
            except OSError:
                logger.exception("accept failed \x1b[31m%d", i)
    finally:
        logger.removeHandler(log)
        log.close()
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == LOG_BURST + 1 and "Traceback" not in err and "\x1b" not in err
    assert lines[0] == "probegate MCP server: error: accept failed 0 (OSError)"
    assert lines[-1] == f"probegate MCP server: {10_000 - LOG_BURST} more log message(s) left out"


def test_a_tool_call_that_arrives_as_the_server_stops_is_answered_and_the_server_ends(
    host: McpHost,
) -> None:
    """A scan that ends (Ctrl-C, or its last attempt) while an agent's tool call is on the
    wire: the server answers the call as it stops, and its thread ends with it. The call needs
    the host's lock on the server's thread (it is counted), so ``close`` must not hold that
    lock while it waits for the thread: it did, and waited out its 10 s join instead, with the
    port still open."""
    endpoint = host.open(_box())
    address = host.address
    assert address is not None
    path = endpoint.url.split(str(address[1]), 1)[1]
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": "notes"}},
        }
    ).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: a\r\nContent-Length: {len(body)}\r\n"
        + "".join(f"{name}: {value}\r\n" for name, value in HEADERS.items())
        + "\r\n"
    ).encode()
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(head + body[:1])  # the router has the head and waits for the body
        rest = threading.Timer(0.1, sock.sendall, args=(body[1:],))
        rest.start()
        serving = host._thread
        assert serving is not None
        host.close()
        rest.join()
        assert not serving.is_alive()
        assert not listening(address[1])
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    status, _sep, answer = reply.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 200")
    assert json.loads(answer)["result"]["isError"] is False
    summary = host.summary()
    assert summary is not None and summary.calls == 1


def test_the_port_closes_at_once_while_a_tool_call_is_still_running(
    host: McpHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool blocked in its sandbox (a guard in front of it that answers slowly) does not
    keep the port open after the scan: the server stops accepting and releases the port as
    soon as it is asked to stop; the call is left to finish on its own."""
    entered, release = threading.Event(), threading.Event()
    real = Sandbox.call

    def slow(self: Sandbox, name: str, arguments: dict[str, Any]) -> Any:
        entered.set()
        release.wait(timeout=30)
        return real(self, name, arguments)

    monkeypatch.setattr(Sandbox, "call", slow)
    endpoint = host.open(_box())
    address = host.address
    assert address is not None
    calling = threading.Thread(target=lambda: _call(endpoint.url), daemon=True)
    calling.start()
    closing = threading.Thread(target=host.close, daemon=True)
    try:
        assert entered.wait(timeout=10)
        closing.start()
        assert wait_for(lambda: not listening(address[1]), timeout=5)
        assert not release.is_set() and calling.is_alive()  # the call is still running
    finally:
        release.set()
        closing.join(timeout=30)
        calling.join(timeout=30)
    assert not closing.is_alive()
