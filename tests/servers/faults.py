"""A fault-injecting OpenAI-compatible server: every way an endpoint misbehaves.

The first path segment picks the fault, so one server serves every case:
``{url}/{fault}/v1/chat/completions``. A fault followed by ``-N`` (``429-2``) misbehaves on the
first N requests to that path and then answers normally, which is how retries are tested.

Faults: ``ok``, ``timeout`` (never answers), ``429`` (Retry-After: 1), ``429date`` (Retry-After
as an HTTP date), ``429long`` (Retry-After: 3600), ``500``, ``503``, ``400``, ``401``, ``404``,
``garbage`` (HTML), ``empty``, ``truncated`` (Content-Length larger than the body, then close),
``huge`` (3 MiB), ``hugechunked`` (3 MiB without Content-Length), ``drop`` (close without a
reply), ``drip`` (body one byte at a time), ``headerdrip`` (headers one byte at a time),
``nochoices`` (valid JSON, wrong shape), ``cutjson`` (a complete 200 whose JSON stops half-way),
``notjson`` (a complete 200 of plain text), ``secret`` (a 400 whose body echoes the API key and
contains terminal escapes).

Hostile agents (docs/targets.md), on every reply: ``surrogate`` (lone surrogates in the text and
in a tool call's arguments, as a model cut off mid-emoji sends), ``deep`` (a 2 KB reply nested
1,001 levels deep), ``deepargs`` (tool arguments nested 300 levels deep), ``manycalls`` (10,000
tool calls), ``bigreply`` (1 MB of text), ``imagebomb`` (1 MB of ``![``, the worst case of
a markdown-image pattern), ``retryforever`` (429 with ``Retry-After: 119``). ``mix`` serves
ok, 429, 500, drop, garbage, surrogate, deep, deepargs, manycalls and bigreply in turn: the
soak in bench/.

:class:`FlakyAgentServer` is a whole agent behind a flaky endpoint: the vulnerable fake agent
(tests/servers/openai_agent.py) answering most requests, and, as real proxies and gateways do,
some with an HTML page, JSON cut off half-way, a 500 or a 429, drawn from the seed and the
request itself, so the same scan meets the same faults whatever order its requests come in.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import time
from collections import Counter
from typing import Any

from tests.servers.base import Handler, LoopbackServer
from tests.servers.openai_agent import FakeAgent

OK_REPLY = {
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "All good."}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5},
}
HOSTILE_CALLS = 10_000
HOSTILE_TEXT = 1_000_000
DEEP_REPLY = 1_001
DEEP_ARGUMENTS = 300
MIX = (
    "ok",
    "429",
    "surrogate",
    "500",
    "deep",
    "deepargs",
    "drop",
    "manycalls",
    "garbage",
    "bigreply",
)


def reply_body(content: str, calls: list[dict[str, Any]] | None = None) -> bytes:
    """A chat completion; lone surrogates in ``content`` go out as JSON escapes (no UTF-8)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    body = {"choices": [{"index": 0, "message": message}], "usage": OK_REPLY["usage"]}
    return json.dumps(body).encode()


def tool_call(index: int, name: str, arguments: str) -> dict[str, Any]:
    return {
        "id": f"call_{index}",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


class FaultHandler(Handler):
    def do_POST(self) -> None:
        server: FaultServer = self.owner
        server.count()
        self.read_json()
        first = self.path.strip("/").split("/")[0]
        fault, _, limit = first.partition("-")
        with server.lock:
            server.by_path[first] += 1
            seen = server.by_path[first]
        if limit.isdigit() and seen > int(limit):
            fault = "ok"
        getattr(self, f"fault_{fault}", self.fault_ok)()

    def _sleep(self, seconds: float) -> None:
        self.owner.stopping.wait(seconds)

    def fault_ok(self) -> None:
        self.send_json(200, OK_REPLY)

    def fault_surrogate(self) -> None:
        arguments = json.dumps({"to": "ops@evil.test", "body": "half an emoji \ud83d"})
        calls = [tool_call(0, "send_email", arguments)]
        self.send_raw(200, reply_body("Done \ud800 and \udfff.", calls))

    def fault_deep(self) -> None:
        nested = b"[" * DEEP_REPLY + b"]" * DEEP_REPLY
        body = b'{"choices":[{"message":{"role":"assistant","content":"hi","x":' + nested
        self.send_raw(200, body + b"}}]}")

    def fault_deepargs(self) -> None:
        arguments = '{"to":' + '{"a":' * DEEP_ARGUMENTS + "1" + "}" * DEEP_ARGUMENTS + "}"
        self.send_raw(200, reply_body("", [tool_call(0, "send_email", arguments)]))

    def fault_manycalls(self) -> None:
        one = '{"customer_id": "1001"}'
        calls = [tool_call(i, "lookup_customer", one) for i in range(HOSTILE_CALLS)]
        self.send_raw(200, reply_body("", calls))

    def fault_bigreply(self) -> None:
        self.send_raw(200, reply_body("A" * HOSTILE_TEXT))

    def fault_imagebomb(self) -> None:
        self.send_raw(200, reply_body("![" * (HOSTILE_TEXT // 2)))

    def fault_retryforever(self) -> None:
        self.send_json(429, {"error": "slow down"}, {"Retry-After": "119"})

    def fault_mix(self) -> None:
        with self.owner.lock:
            turn = self.owner.by_path["mix"]
        getattr(self, f"fault_{MIX[turn % len(MIX)]}")()

    def fault_timeout(self) -> None:
        self._sleep(30)
        self.close_connection = True

    def fault_429(self) -> None:
        self.send_json(429, {"error": "slow down"}, {"Retry-After": "1"})

    def fault_429date(self) -> None:
        when = email.utils.formatdate(time.time() + 2, usegmt=True)
        self.send_json(429, {"error": "slow down"}, {"Retry-After": when})

    def fault_429long(self) -> None:
        self.send_json(429, {"error": "slow down"}, {"Retry-After": "3600"})

    def fault_500(self) -> None:
        self.send_json(500, {"error": "internal"})

    def fault_503(self) -> None:
        self.send_json(503, {"error": "unavailable"})

    def fault_400(self) -> None:
        self.send_json(400, {"error": {"message": "content_policy_violation: refused"}})

    def fault_401(self) -> None:
        self.send_json(401, {"error": {"message": "bad key"}})

    def fault_404(self) -> None:
        self.send_json(404, {"error": {"message": "not found"}})

    def fault_secret(self) -> None:
        echoed = self.headers.get("Authorization", "")
        body = f"bad request from {echoed} \x1b[31mred\x1b[0m \x07 " + "x" * 1000
        self.send_raw(400, body.encode(), content_type="text/plain")

    def fault_garbage(self) -> None:
        self.send_raw(200, b"<html><body>Gateway says hi</body></html>", content_type="text/html")

    def fault_empty(self) -> None:
        self.send_raw(200, b"")

    def fault_cutjson(self) -> None:
        self.send_raw(200, json.dumps(OK_REPLY).encode()[:40])

    def fault_notjson(self) -> None:
        self.send_raw(200, b"upstream said: all good", content_type="text/plain")

    def fault_nochoices(self) -> None:
        self.send_json(200, {"object": "list", "data": []})

    def fault_truncated(self) -> None:
        body = json.dumps(OK_REPLY).encode()
        self.send_raw(200, body[:20], length=len(body))
        self.close_connection = True

    def fault_huge(self) -> None:
        filler = b" " * (3 * 1024 * 1024)
        self.send_raw(200, b'{"choices": []' + filler + b"}")

    def fault_hugechunked(self) -> None:
        self.wfile.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
        )
        chunk = b" " * 65536
        try:
            for _ in range(64):
                self.wfile.write(chunk)
        except OSError:
            pass
        self.close_connection = True

    def fault_drop(self) -> None:
        self.close_connection = True

    def fault_drip(self) -> None:
        body = json.dumps(OK_REPLY).encode()
        self.wfile.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        self._drip(body)

    def fault_headerdrip(self) -> None:
        self._drip(b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n")

    def _drip(self, data: bytes) -> None:
        try:
            for byte in data:
                if self.owner.stopping.is_set():
                    break
                self.wfile.write(bytes([byte]))
                self._sleep(0.1)
        except OSError:
            pass
        self.close_connection = True


class FaultServer(LoopbackServer):
    handler = FaultHandler

    def __init__(self) -> None:
        super().__init__()
        self.by_path: Counter[str] = Counter()

    def endpoint(self, fault: str) -> str:
        return f"{self.url}/{fault}/v1"

    def hits(self, fault: str) -> int:
        with self.lock:
            return self.by_path[fault]

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return dict(self.by_path)


# The flaky endpoint's faults, as shares of its requests (the rest are the agent's replies).
FLAKY_SHARES = (("html", 0.05), ("cutjson", 0.05), ("500", 0.15), ("429", 0.10))


class FlakyHandler(Handler):
    def do_POST(self) -> None:
        server: FlakyAgentServer = self.owner
        server.count()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        fault = server.draw(raw)
        if fault == "html":
            page = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
            self.send_raw(200, page, content_type="text/html")
            return
        if fault in ("500", "429"):
            self.send_json(int(fault), {"error": {"message": f"injected {fault}"}})
            return
        body = json.loads(raw)
        messages = body.get("messages") or [{"role": "user", "content": ""}]
        tools = {t["function"]["name"]: "" for t in body.get("tools") or []}
        content, calls = server.agent.reply(messages, tools)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        reply = {"choices": [{"index": 0, "message": message}], "usage": OK_REPLY["usage"]}
        data = json.dumps(reply).encode()
        if fault == "cutjson":  # a complete HTTP reply whose JSON stops half-way
            data = data[: len(data) // 2]
        self.send_raw(200, data)


class FlakyAgentServer(LoopbackServer):
    """The weak fake agent behind an endpoint that fails some requests (FLAKY_SHARES).

    A request's fault is drawn from ``seed``, the request's bytes and how often those bytes
    were sent before: a retry of a failed request draws again, and the same scan (same
    canaries, same conversations) meets the same faults in any order. ``served`` counts what
    was sent back, by fault (``ok`` for the agent's replies).
    """

    handler = FlakyHandler

    def __init__(self, seed: int = 0, shares: tuple[tuple[str, float], ...] = FLAKY_SHARES) -> None:
        super().__init__()
        self.seed = seed
        self.shares = shares
        self.agent = FakeAgent(hardened=False)
        self.seen: Counter[str] = Counter()
        self.served: Counter[str] = Counter()

    @property
    def endpoint(self) -> str:
        return f"{self.url}/v1"

    def draw(self, raw: bytes) -> str:
        digest = hashlib.sha256(raw).hexdigest()
        with self.lock:
            self.seen[digest] += 1
            tries = self.seen[digest]
        roll = hashlib.sha256(f"{self.seed}:{digest}:{tries}".encode()).digest()
        point = int.from_bytes(roll[:8], "big") / 2**64
        fault = "ok"
        for name, share in self.shares:
            if point < share:
                fault = name
                break
            point -= share
        with self.lock:
            self.served[fault] += 1
        return fault
