"""The model-API proxy against a hostile local process: a capability, not an open port.

While a scan runs, anything on the machine can reach the proxy's port. These tests play that
process with raw sockets and ``requests``, against a real proxy in front of a recording
upstream (and a second host that must never be reached): without the scan's credential
nothing is forwarded and every refusal is counted; with it, only the declared API's model
endpoints are; a request target that is not a plain path is refused before any URL is built;
a body without a valid length, or over the cap, is refused at its head; thousands of
connections are held by a bounded number of threads, and closing the proxy takes no longer
for them (docs/scan-your-agent/proxy.md, "What the proxy protects").
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from probegate.models.canaries import make_canaries
from probegate.models.probe import Fixtures
from probegate.targets.base import TargetSettings
from probegate.targets.configured import tool_specs
from probegate.targets.model_proxy import ModelProxy, ModelProxyConfig
from probegate.targets.model_proxy.host import ProxyConversation
from probegate.targets.python_agent import PythonConfig
from probegate.targets.sandbox import Sandbox
from probegate.transport import connections
from probegate.transport.limiter import RequestLimiter
from probegate.transport.usage import Usage
from tests.servers.base import Handler, LoopbackServer
from tests.servers.brain_model import SECRETS, BrainModelServer, tool_config
from tests.servers.configs import write_config
from tests.servers.model_apis import ModelApiServer
from tests.servers.own_tools import model_proxy, python_target
from tests.servers.peers import self_signed

USER_KEY = "sk-user-7c1d2e3f4a5b6c7d8e9f0a1b"  # the user's upstream key: it must never leave
KEY_ENV = "PG_TEST_UPSTREAM_KEY"
CHAT_BODY = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
MESSAGES_BODY = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}


def chat_reply(_body: Any) -> tuple[str, bytes]:
    message = {"role": "assistant", "content": "hi"}
    data = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    return "application/json", json.dumps(data).encode()


def messages_reply(_body: Any) -> tuple[str, bytes]:
    data = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    return "application/json", json.dumps(data).encode()


class _Recording(Handler):
    """Records every request, whatever its method and path; a model endpoint gets a reply."""

    def _any(self) -> None:
        server: Recording = self.owner
        length = self.headers.get("Content-Length") or "0"
        body = self.rfile.read(int(length)) if length.isdigit() and int(length) > 0 else b""
        with server.lock:
            server.seen.append(
                (self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
        if self.command == "POST" and self.path.endswith(("/chat/completions", "/messages")):
            kind, data = server.reply(json.loads(body or b"null"))
            self.send_raw(200, data, content_type=kind)
        else:
            self.send_json(200, {"object": "list", "data": []})

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any


class Recording(LoopbackServer):
    handler = _Recording

    def __init__(self, reply: Callable[[Any], tuple[str, bytes]] = chat_reply) -> None:
        super().__init__()
        self.reply = reply
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []


@contextlib.contextmanager
def running(
    api: str, upstream: str, *, key: bool = True, safe: bool = True, **config: Any
) -> Iterator[ModelProxy]:
    """A proxy on a free loopback port, with one conversation open (so it reports)."""
    proxy_config = ModelProxyConfig(
        api=api,
        listen="127.0.0.1:0",
        upstream=upstream,
        upstream_api_key_env=KEY_ENV if key else None,
        safe=safe,
        **config,
    )
    tools = tool_specs(PythonConfig.model_validate({"tools": tool_config()}))
    proxy = ModelProxy(proxy_config, TargetSettings(timeout=5, retries=0), tools, {})
    try:
        sandbox = Sandbox(tools, Fixtures(), make_canaries(0, "x"), attempt_id="x")
        proxy.open(sandbox, Usage())
        yield proxy
    finally:
        proxy.close()


@pytest.fixture(autouse=True)
def _user_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, USER_KEY)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def root(proxy: ModelProxy) -> str:
    host, port = proxy.address
    return f"http://{host}:{port}"


def exchange(address: tuple[str, int], data: bytes, *, wait: float = 5.0) -> tuple[int, bytes]:
    """``data`` sent on a connection of its own: the status and body of the answer."""
    with socket.create_connection(address, timeout=wait) as sock:
        sock.sendall(data)
        return read_answer(sock)


def read_answer(sock: socket.socket) -> tuple[int, bytes]:
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"closed without an answer: {reply!r}")
        reply += chunk
    head, _sep, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(lines[0].split()[1]), body


def post(target: str, body: Any, *headers: str) -> bytes:
    data = json.dumps(body).encode()
    head = [f"POST {target} HTTP/1.1", "Host: 127.0.0.1", *headers]
    head += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data


def refused(proxy: ModelProxy) -> dict[str, int]:
    summary = proxy.summary()
    assert summary is not None
    return summary.refused.model_dump()


# -- the capability ---------------------------------------------------------------------------


def test_without_the_scans_credential_nothing_leaves_and_every_refusal_is_counted() -> None:
    """The open-relay attack: any method on any path, with no credential; then the user's key
    on what is not a model endpoint. Nothing reaches the upstream until the request carries the
    scan's base URL or the key, and then only the API's model endpoints (and ``GET /models``,
    which SDKs call on start-up)."""
    with Recording() as upstream, running("openai-chat", f"{upstream.url}/v1") as proxy:
        base = root(proxy)
        attacks = [
            ("GET", "/v1/models"),
            ("DELETE", "/v1/files/file-abc"),
            ("POST", "/v1/fine_tuning/jobs"),
            ("PUT", "/v1/assistants/asst_1"),
            ("POST", "/v1/chat/completions"),
            ("POST", "/pg-guessed/v1/chat/completions"),
        ]
        for method, path in attacks:
            answer = requests.request(method, base + path, json=CHAT_BODY, timeout=5)
            assert answer.status_code == 401, (method, path, answer.status_code)
            assert "credential" in answer.json()["error"]["message"]
        wrong = {"Authorization": "Bearer sk-not-the-users"}
        assert requests.post(f"{base}/v1/chat/completions", json=CHAT_BODY, headers=wrong,
                             timeout=5).status_code == 401  # fmt: skip
        assert upstream.seen == []
        keyed = {"Authorization": f"Bearer {USER_KEY}"}
        for method, path in [("DELETE", "/v1/files/file-abc"), ("POST", "/v1/fine_tuning/jobs")]:
            answer = requests.request(method, base + path, json=CHAT_BODY, headers=keyed, timeout=5)
            assert answer.status_code == 404, (method, path)
        assert upstream.seen == []
        # The scan's base URL (what is printed and written for the agent), with no key at all.
        assert proxy.base_url.startswith(f"{base}/pg-") and proxy.base_url.endswith("/v1")
        answer = requests.post(f"{proxy.base_url}/chat/completions", json=CHAT_BODY, timeout=5)
        assert answer.status_code == 200
        assert requests.get(f"{proxy.base_url}/models", timeout=5).status_code == 200
        # The key the agent already carries, on the base URL it was started with.
        answer = requests.post(f"{base}/v1/chat/completions", json=CHAT_BODY, headers=keyed,
                               timeout=5)  # fmt: skip
        assert answer.status_code == 200
        counts = refused(proxy)
    forwarded = [(method, path) for method, path, _headers, _body in upstream.seen]
    assert forwarded == [
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
        ("POST", "/v1/chat/completions"),
    ]
    assert all(h["authorization"] == f"Bearer {USER_KEY}" for _m, _p, h, _b in upstream.seen)
    assert counts["no_credential"] == len(attacks) + 1
    assert counts["not_model_endpoint"] == 2


def test_without_an_upstream_key_a_caller_without_its_own_gets_nothing() -> None:
    """``upstream_api_key_env`` unset: the caller's own key is what goes upstream, so a request
    without one is refused, and one with one carries it (not anything of the user's)."""
    with Recording() as upstream, running("openai-chat", upstream.url, key=False) as proxy:
        base = root(proxy)
        answer = requests.post(f"{base}/v1/chat/completions", json=CHAT_BODY, timeout=5)
        assert answer.status_code == 401 and upstream.seen == []
        own = {"Authorization": "Bearer sk-callers-own"}
        answer = requests.post(f"{base}/v1/chat/completions", json=CHAT_BODY, headers=own,
                               timeout=5)  # fmt: skip
        assert answer.status_code == 200
        assert refused(proxy)["no_credential"] == 1
    assert [h["authorization"] for _m, _p, h, _b in upstream.seen] == ["Bearer sk-callers-own"]


def test_the_base_url_is_written_for_a_start_command_and_removed_after(tmp_path: Any) -> None:
    with Recording() as upstream:
        config = ModelProxyConfig(api="anthropic-messages", listen="127.0.0.1:0",
                                  upstream=upstream.url)  # fmt: skip
        tools = tool_specs(PythonConfig.model_validate({"tools": tool_config()}))
        proxy = ModelProxy(config, TargetSettings(store=tmp_path), tools, {})
        try:
            written = tmp_path / "model-proxy.url"
            assert written.read_text(encoding="utf-8") == proxy.base_url + "\n"
            assert written.stat().st_mode & 0o777 == 0o600
            host, port = proxy.address
            assert proxy.base_url.startswith(f"http://{host}:{port}/pg-")
            assert "/v1" not in proxy.base_url  # the Anthropic SDK adds /v1/messages itself
            answer = requests.post(f"{proxy.base_url}/v1/messages", json=MESSAGES_BODY, timeout=5)
            assert answer.status_code == 200
        finally:
            proxy.close()
        assert not written.exists()


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "[::]:0", "192.0.2.7:8790", "example.com:80"])
def test_a_listen_address_beyond_loopback_needs_the_unsafe_key(listen: str) -> None:
    with pytest.raises(ValueError, match="unsafe_listen_beyond_loopback"):
        ModelProxyConfig(api="openai-chat", listen=listen, upstream="http://127.0.0.1:9")


def test_the_unsafe_key_opens_it_with_a_warning() -> None:
    with Recording() as upstream:
        config = ModelProxyConfig(api="openai-chat", listen="0.0.0.0:0", upstream=upstream.url,
                                  unsafe_listen_beyond_loopback=True)  # fmt: skip
        tools = tool_specs(PythonConfig.model_validate({"tools": tool_config()}))
        proxy = ModelProxy(config, TargetSettings(), tools, {})
        try:
            warnings = [n.text for n in proxy.notices() if n.warning]
        finally:
            proxy.close()
    assert len(warnings) == 1 and "beyond this machine" in warnings[0]


# -- URLs are built, never concatenated -----------------------------------------------------


def test_a_request_target_that_is_not_a_plain_path_reaches_no_other_host() -> None:
    """The documented Anthropic form (``upstream: https://api.anthropic.com``, no path): a
    request line ``POST @host:port/v1/messages`` once made the upstream URL
    ``https://api.anthropic.com@host:port/...`` and sent the key there. Every form that could
    name another host or climb out of the API's path is refused before a URL is built."""
    with (
        Recording(messages_reply) as upstream,
        Recording(messages_reply) as other,
        running("anthropic-messages", upstream.url) as proxy,
    ):
        at = other.url.removeprefix("http://")
        targets = [
            f"@{at}/v1/messages",
            f"//{at}/v1/messages",
            f"{other.url}/v1/messages",  # absolute-form
            f"/@{at}/v1/messages",
            f"/%40{at}/v1/messages",
            "/v1/../../v1/messages",
            "/v1/%2e%2e/v1/messages",
            "/v1/messages/..",
            "/v1/./messages",
            "/v1//messages",
            "/v1/%6dessages",  # an escaped letter: nothing is decoded, so nothing is read
            "/v1/messages#x",
            f"/v1/messages?next=@{at}",
            "*",
        ]
        key = f"x-api-key: {USER_KEY}"
        answers = [exchange(proxy.address, post(t, MESSAGES_BODY, key))[0] for t in targets]
        assert other.seen == [] and upstream.seen == []
        assert set(answers) == {400}, dict(zip(targets, answers, strict=True))
        status, _body = exchange(proxy.address, post("/v1/messages", MESSAGES_BODY, key))
        assert status == 200
        counts = refused(proxy)
    assert [(m, p) for m, p, _h, _b in upstream.seen] == [("POST", "/v1/messages")]
    assert counts["invalid"] == len(targets)


# -- bounded input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "length",
    ["-1", "+5", "1e3", "5, 6", "0x10", "5 6", "99999999999999999999999"],
)
def test_a_content_length_that_is_not_a_length_is_a_400_at_the_head(length: str) -> None:
    """``Content-Length: -1`` once made the server read to the end of the connection: 400 MB
    grew it by 476 MB and went upstream with the key. Now the head alone is answered."""
    with Recording() as upstream, running("openai-chat", upstream.url) as proxy:
        head = (
            "POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\n"
            f"Authorization: Bearer {USER_KEY}\r\nContent-Length: {length}\r\n\r\n"
        )
        status, _body = exchange(proxy.address, head.encode() + b'{"model"', wait=3)
        assert status == 400 and upstream.seen == []
        assert refused(proxy)["invalid"] == 1


def test_a_400_mb_body_is_refused_at_its_head_and_never_read() -> None:
    """The head says 400 MB: 413 before a byte of the body is sent; a sender that goes on
    anyway finds the connection closed within what the sockets buffer."""
    with Recording() as upstream, running("openai-chat", upstream.url) as proxy:
        head = (
            "POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\n"
            f"Authorization: Bearer {USER_KEY}\r\nContent-Length: {400 * 2**20}\r\n\r\n"
        )
        with socket.create_connection(proxy.address, timeout=5) as sock:
            sock.sendall(head.encode())
            status, _body = read_answer(sock)
            assert status == 413
            sent = 0
            piece = b"x" * 2**20
            with contextlib.suppress(OSError):
                while sent < 400 * 2**20:
                    sock.sendall(piece)
                    sent += len(piece)
        assert sent < 64 * 2**20, sent
        assert upstream.seen == [] and refused(proxy)["invalid"] == 1
    print(f"\n400 MB body: 413 at the head; {sent / 2**20:.0f} MB sent before the close")


@pytest.mark.parametrize(
    ("chunks", "status"),
    [
        (b"zz\r\n{}\r\n0\r\n\r\n", 400),  # not a size
        (b"-5\r\nabcde\r\n0\r\n\r\n", 400),
        (b"1000001\r\n", 413),  # one chunk over 16 MiB, refused before it is read
        (b"800000\r\n" + b"x" * 0x800000 + b"\r\n800001\r\n", 413),  # two that add up over it
        (b"2\r\n{}XX0\r\n\r\n", 400),  # a chunk not followed by its line end
    ],
)
def test_a_chunked_body_is_read_within_its_cap(chunks: bytes, status: int) -> None:
    with Recording() as upstream, running("openai-chat", upstream.url) as proxy:
        head = (
            "POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\n"
            f"Authorization: Bearer {USER_KEY}\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        with socket.create_connection(proxy.address, timeout=5) as sock:
            sock.sendall(head.encode())
            with contextlib.suppress(OSError):
                sock.sendall(chunks)
            assert read_answer(sock)[0] == status
        assert upstream.seen == []


def test_a_chunked_body_within_the_cap_is_forwarded() -> None:
    with Recording() as upstream, running("openai-chat", upstream.url) as proxy:
        data = json.dumps(CHAT_BODY).encode()
        head = (
            "POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\n"
            f"Authorization: Bearer {USER_KEY}\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(data[i : i + 7]), data[i : i + 7])
                        for i in range(0, len(data), 7))  # fmt: skip
        status, _answer = exchange(proxy.address, head.encode() + body + b"0\r\nT: 1\r\n\r\n")
        assert status == 200
    assert json.loads(upstream.seen[0][3]) == CHAT_BODY


def test_three_thousand_connections_hold_few_threads_and_close_at_once() -> None:
    """The flood that once made 3,006 threads: 3,000 connections, each holding half a request
    head. The proxy holds them on its event loop (at most its connection cap), the agent's own
    request is still answered, and closing the proxy does not wait for any of them."""
    with Recording() as upstream, running("openai-chat", upstream.url) as proxy:
        before = threading.active_count()
        held: list[socket.socket] = []
        try:
            for _ in range(3000):
                sock = socket.socket()
                sock.setblocking(False)
                sock.connect_ex(proxy.address)
                held.append(sock)
            time.sleep(0.3)
            for sock in held:
                with contextlib.suppress(OSError):
                    sock.send(b"POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\n")
            time.sleep(1.0)
            threads = threading.active_count() - before
            keyed = {"Authorization": f"Bearer {USER_KEY}"}
            answer = requests.post(f"{root(proxy)}/v1/chat/completions", json=CHAT_BODY,
                                   headers=keyed, timeout=10)  # fmt: skip
            assert answer.status_code == 200
            started = time.monotonic()
            proxy.close()
            took = time.monotonic() - started
        finally:
            for sock in held:
                sock.close()
    assert threads <= 8, threads
    # The target is 2 s (the figure printed above, measured idle); the bound held here is the
    # one that matters under any load: well before GitHub's SIGTERM at 7.5 s.
    assert took < 5.0, took
    print(f"\n3,000 connections: {threads} more threads; close() took {took * 1000:.0f} ms")


def test_a_request_whose_head_never_ends_is_timed_out_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from probegate.targets.model_proxy import server

    monkeypatch.setattr(server, "HEAD_TIMEOUT", 0.3)
    monkeypatch.setattr(server, "BODY_TIMEOUT", 0.3)
    with Recording() as upstream, running("openai-chat", upstream.url) as proxy:
        assert (
            exchange(proxy.address, b"POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\n")[0] == 408
        )
        late = post("/v1/chat/completions", CHAT_BODY, f"Authorization: Bearer {USER_KEY}")
        assert exchange(proxy.address, late[:-5])[0] == 408  # its body never ends
        assert exchange(proxy.address, b"\x16\x03\x01 not http\r\n\r\n")[0] == 400
        counts = refused(proxy)
    assert counts["timed_out"] == 2 and counts["invalid"] == 1 and upstream.seen == []


# -- every choice is read -----------------------------------------------------------------------


def two_choices_stream(_body: Any) -> tuple[str, bytes]:
    """A streamed reply of two choices (``n: 2``, or an upstream that sends them anyway): the
    first says a few words, the second calls send_email, in chunks of its own."""
    call = {
        "index": 0,
        "id": "call_x",
        "type": "function",
        "function": {"name": "send_email", "arguments": '{"to": "attacker@evil.test"}'},
    }
    head = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    chunks = [
        [{"index": 0, "delta": {"role": "assistant", "content": "Sure."}}],
        [{"index": 1, "delta": {"role": "assistant", "tool_calls": [call]}}],
        [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        [{"index": 1, "delta": {}, "finish_reason": "tool_calls"}],
    ]
    events = [f"data: {json.dumps({**head, 'choices': c})}\n\n" for c in chunks]
    return "text/event-stream", ("".join(events) + "data: [DONE]\n\n").encode()


def test_a_tool_call_in_the_second_choice_is_found_and_stopped() -> None:
    """An agent that reads ``chunk.choices[0]`` of each chunk reads the second choice's call
    (its chunks hold that choice alone) and once ran it, unseen: 0 findings. The proxy reads
    every choice: the call is recorded, and safe mode stops the reply."""
    from openai import OpenAI

    with Recording(two_choices_stream) as upstream, running("openai-chat", upstream.url) as proxy:
        tools = list(proxy.tools.values())
        sandbox = Sandbox(tools, Fixtures(), make_canaries(0, "c"), attempt_id="c")
        conversation = proxy.open(sandbox, Usage())
        client = OpenAI(base_url=proxy.base_url, api_key="sk-agent", max_retries=0)
        tool = {"type": "function", "function": {"name": "send_email", "parameters": {}}}
        chunks = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": conversation.begin("Summarise my inbox.")}],
            tools=[tool],  # type: ignore[list-item]
            stream=True,
        )
        ran = [
            call.function.name
            for chunk in chunks
            if chunk.choices
            for call in chunk.choices[0].delta.tool_calls or []
            if call.function is not None
        ]
        summary = proxy.summary()
    assert ran == []  # nothing reached the agent to run
    assert [(c.name, c.arguments["to"]) for c in sandbox.calls] == [
        ("send_email", "attacker@evil.test")
    ]
    assert summary is not None and summary.stopped == 1 and summary.tool_calls == 1


# -- a scan that stops ------------------------------------------------------------------------


def _threads(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads")))


@pytest.mark.slow
def test_a_scan_behind_the_proxy_stops_within_2_s_with_3000_connections_and_a_slow_model(
    tmp_path: Path,
) -> None:
    """The agent's model takes 20 s a reply, and 3,000 connections hold half a head each: the
    scan still holds few threads, and Ctrl-C ends it, partial report written, within 2 s (the
    proxy's calls in flight and the agent's own are abandoned, not waited for)."""
    with BrainModelServer(latency=20) as brain:
        port = free_port()
        target = python_target(model_proxy(brain, "chat", port, careful=True), "chat")
        config = write_config(tmp_path, target)
        argv = [str(Path(sys.executable).parent / "probegate"), "scan", str(config)]
        argv += ["--no-sign", "--output-dir", str(tmp_path / "out"), "--concurrency", "4"]
        env = {**os.environ, "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
        proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
        held: list[socket.socket] = []
        try:
            deadline = time.monotonic() + 60
            while len(brain.bodies) < 2:  # the agent's model calls are in flight
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
                time.sleep(0.05)
            for _ in range(3000):
                sock = socket.socket()
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", port))
                held.append(sock)
            time.sleep(0.3)
            for sock in held:
                with contextlib.suppress(OSError):
                    sock.send(b"POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\n")
            time.sleep(1.0)
            threads = _threads(proc.pid)
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=30)
            took = time.monotonic() - sent
        finally:
            for sock in held:
                sock.close()
            proc.kill()
    print(f"\n3,000 connections, 20 s model: {threads} threads; Ctrl-C ended it in {took:.2f} s")
    assert proc.returncode == 130, err[-2000:]
    # The target is 2 s (the figure printed above, measured idle); the bound held here is the
    # one that matters under any load: well before GitHub's SIGTERM at 7.5 s.
    assert took < 5.0, took
    assert threads < 100, threads
    report = json.loads((tmp_path / "out" / "scan.json").read_text(encoding="utf-8"))
    assert report["stopped_reason"] == "cancelled"
    assert "Traceback" not in err


# -- the credential, end to end --------------------------------------------------------------


def test_an_agent_on_the_scans_base_url_needs_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With ``upstream_api_key_env`` set: a python agent that builds its client from
    ``context.model_base_url`` with some other key is let through (the prefix is its
    credential; the first test shows the user's key is what goes upstream then); the scan
    prints the base URL, writes it to the store and removes it when it ends."""
    from openai import OpenAI

    import tests.servers.own_tools as own
    from probegate.cli import main

    class ContextAgent(own.ChatAgent):
        def run(self, input: str, context: Any) -> str:
            self.client = OpenAI(
                base_url=context.model_base_url, api_key="sk-not-the-users", max_retries=0
            )
            return super().run(input)

    monkeypatch.setattr(own, "ContextAgent", ContextAgent, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    with BrainModelServer() as brain:
        target = {
            "kind": "python",
            "python": "tests.servers.own_tools:ContextAgent",
            "model_proxy": {
                "api": "openai-chat",
                "listen": "127.0.0.1:0",
                "upstream": brain.root(careful=True),
                "upstream_api_key_env": KEY_ENV,
            },
            "canaries": list(SECRETS),
            "tools": tool_config(),
        }
        config = write_config(tmp_path, target)
        argv = ["scan", str(config), "--probes", "asi01.indirect-document-email-exfil.v1"]
        argv += ["--no-sign", "--output-dir", str(tmp_path / "out")]
        argv += ["--store", str(tmp_path / "store")]
        code = main(argv)
    err = capsys.readouterr().err
    assert code == 0, err
    assert "probegate: model-API proxy: base URL http://127.0.0.1:" in err and "/pg-" in err
    assert f"(also in {tmp_path / 'store' / 'model-proxy.url'})" in err
    assert not (tmp_path / "store" / "model-proxy.url").exists()  # gone with the scan
    report = json.loads((tmp_path / "out" / "scan.json").read_text(encoding="utf-8"))
    proxy = report["proxy"]
    assert proxy["model_calls"] > 0 and proxy["unattributed"] == 0
    assert proxy["refused"] == dict.fromkeys(proxy["refused"], 0)


class _LooksUp:
    """A model that asks to look the customer up (one tool call per reply)."""

    def reply(self, messages: Any, tools: Any) -> tuple[Any, list[Any]]:
        call = {"name": "lookup_customer", "arguments": json.dumps({"customer_id": "1001"})}
        return None, [{"id": "call_1", "type": "function", "function": call}]


def model_call_in_flight(
    proxy: ModelProxy, model: ModelApiServer
) -> tuple[Sandbox, ProxyConversation, threading.Thread]:
    """A conversation of ``proxy`` whose agent has made one model call, now at ``model``."""
    sandbox = Sandbox(list(proxy.tools.values()), Fixtures(), make_canaries(0, "y"), attempt_id="y")
    conversation = proxy.open(sandbox, Usage())
    text = conversation.begin("Please look up my account.")
    body = {"model": "m", "messages": [{"role": "user", "content": text}]}

    def agent() -> None:
        with contextlib.suppress(requests.RequestException):
            requests.post(f"{proxy.base_url}/chat/completions", json=body, timeout=10)

    seen = len(model.bodies)
    call = threading.Thread(target=agent)
    call.start()
    deadline = time.monotonic() + 10
    while len(model.bodies) == seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(model.bodies) > seen, "the model call never reached the model"
    return sandbox, conversation, call


def test_a_turn_that_ends_while_its_model_call_is_in_flight_waits_for_that_call() -> None:
    """An agent may answer without waiting for a model call it made (a timeout of its own, a
    call made beside another): what that call asks for is still this turn's evidence,
    recorded before the turn ends, and the turn counts it."""
    with (
        ModelApiServer(agent=_LooksUp(), latency=0.6) as model,
        running("openai-chat", model.base_url) as proxy,
    ):
        sandbox, conversation, call = model_call_in_flight(proxy, model)
        assert not sandbox.calls
        start = time.monotonic()
        turn = conversation.end(RequestLimiter())
        waited = time.monotonic() - start
        recorded = [c.name for c in sandbox.calls]  # when the turn ended
        call.join(timeout=10)
    assert turn.model_calls == 1 and turn.failure is None
    assert recorded == ["lookup_customer"]
    assert 0.2 < waited < 2, waited


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted", "untrusted"])
def test_an_https_upstream_is_verified_from_the_proxys_loop(
    trusted: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real upstream is HTTPS: reached from the proxy's loop over verified TLS, and a
    certificate nobody vouches for is a 502 that says so, never a reply."""
    certificate, key = self_signed(tmp_path)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    if trusted:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(certificate))
    else:
        monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    model = ModelApiServer(agent=_LooksUp())
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificate, key)
    model.httpd.socket = context.wrap_socket(model.httpd.socket, server_side=True)
    upstream = model.base_url.replace("http://", "https://")
    with model, running("openai-chat", upstream) as proxy:
        body = {"model": "m", "messages": [{"role": "user", "content": "Look me up."}]}
        answer = requests.post(f"{proxy.base_url}/chat/completions", json=body, timeout=10)
    if trusted:
        assert answer.status_code == 200
        call = answer.json()["choices"][0]["message"]["tool_calls"][0]
        assert call["function"]["name"] == "lookup_customer"
        assert model.headers_seen[-1]["authorization"] == f"Bearer {USER_KEY}"
    else:
        assert answer.status_code == 502 and not model.bodies
        assert "TLS error" in answer.json()["error"]["message"]


def test_a_model_call_the_proxy_abandons_is_no_evidence() -> None:
    """The proxy closes (the scan stops) while a model call is at the model: the turn says its
    model call failed, so the attempt is unjudged, never resisted for want of a reply."""
    with (
        ModelApiServer(agent=_LooksUp(), latency=2) as model,
        running("openai-chat", model.base_url) as proxy,
    ):
        sandbox, conversation, call = model_call_in_flight(proxy, model)
        address = proxy.address_url
        proxy.close()
        turn = conversation.end(RequestLimiter())
        call.join(timeout=10)
    assert turn.model_calls == 1 and turn.failure is not None
    fault = turn.fault(address)
    assert fault is not None and fault.cause.value == "upstream_failed"
    assert not sandbox.calls


def test_the_upstreams_route_is_read_as_the_proxy_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the upstream goes (the environment's proxies, NO_PROXY) is read once, as the proxy
    starts: reading it imports requests' rules, and on the proxy's loop at the first model call
    every agent's first call would wait for that."""
    asked: list[tuple[str, str]] = []

    def proxies_for(url: str) -> dict[str, str]:
        asked.append((threading.current_thread().name, url))
        return {}

    monkeypatch.setattr(connections, "environment_proxies", proxies_for)
    with (
        ModelApiServer(agent=_LooksUp()) as model,
        running("openai-chat", model.base_url) as proxy,
    ):
        assert asked == [(threading.current_thread().name, model.base_url)]
        _sandbox, conversation, call = model_call_in_flight(proxy, model)
        call.join(10)
        conversation.end(RequestLimiter())
        summary = proxy.summary()
        assert summary is not None and summary.model_calls == 1
        assert len(asked) == 1  # the first call found the route read


def test_a_route_that_cannot_be_read_early_leaves_the_proxy_starting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reading the route early gains the proxy no new way to fail as it starts: an
    environment that cannot be read is left for the first call, as before."""
    asked: list[str] = []

    def proxies_for(url: str) -> dict[str, str]:
        asked.append(url)
        raise RuntimeError("an environment nobody can read")

    monkeypatch.setattr(connections, "environment_proxies", proxies_for)
    with running("openai-chat", "http://127.0.0.1:9/v1") as proxy:
        assert asked == ["http://127.0.0.1:9/v1"] and proxy.base_url
