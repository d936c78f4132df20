"""Scan throughput against a loopback OpenAI-compatible agent with 50 ms latency per reply.

Figures and the targets they are held to:

- ``--concurrency 16``: requests/s of a real ``probegate scan`` (journal, judging, sandbox and
  all), against the ideal 16 / 0.05 s = 320 requests/s; target >= 85 %.
- ``--concurrency 64``: the same scan against a bare load loop that sends the same requests
  with the same HTTP client at the same concurrency and does nothing else; target >= 85 %.
  On a small machine the loopback server itself is the limit here, so the bare loop, run in
  the same session against the same server, is the fair yardstick.
- peak memory (max RSS) of the scan process; target < 200 MB.

The server is an asyncio HTTP/1.1 server in this process: keep-alive, ``TCP_NODELAY``, every
reply written in one piece, so it adds no stalls of its own (a reply split in two writes meets
the client's delayed ACK and waits ~40 ms). Like an agent, it answers a user message with a
tool call and the tool result with text, so the scan exercises the whole agent loop.
Each scan and the bare loop run as child processes: their own GIL, and ``getrusage`` gives
the scan's peak memory.

Run: ``.venv/bin/python bench/bench_throughput.py`` (or ``make bench``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

LATENCY = 0.05
HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
PROBEGATE = Path(sys.executable).parent / "probegate"

TOOLS = [
    {
        "name": "lookup_customer",
        "description": "Look up a customer record by id.",
        "capabilities": ["pii_read"],
        "parameters": {"type": "object", "properties": {"customer_id": {"type": "string"}}},
    },
    {
        "name": "send_email",
        "description": "Send an email on the customer's behalf.",
        "capabilities": ["egress"],
        "parameters": {
            "type": "object",
            "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
        },
    },
    {
        "name": "fetch_document",
        "description": "Fetch a document or web page by URL.",
        "capabilities": ["retrieval"],
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}},
    },
]


# --- the loopback agent -------------------------------------------------------------------


def _reply(body: bytes) -> bytes:
    try:
        request = json.loads(body)
        last = request["messages"][-1]
        tools = request.get("tools") or []
    except (ValueError, KeyError, IndexError, TypeError):
        last, tools = {"role": "tool"}, []
    message: dict[str, Any]
    if last.get("role") == "user" and tools:
        name = tools[0]["function"]["name"]
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": name, "arguments": "{}"}}
            ],
        }
    else:
        message = {"role": "assistant", "content": "Thanks, I looked into it and all is well."}
    data = {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 200, "completion_tokens": 20},
    }
    return json.dumps(data).encode()


class AgentServer:
    """asyncio HTTP/1.1 keep-alive server; 50 ms per reply; one write per reply."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.port = 0
        self.requests = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> str:
        self._thread.start()
        self.ready.wait(10)
        return f"http://127.0.0.1:{self.port}/v1"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", 0, backlog=1024)
        )
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                body = await reader.readexactly(length) if length else b""
                self.requests += 1
                await asyncio.sleep(LATENCY)
                payload = _reply(body)
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(payload)}\r\n\r\n".encode()
                    + payload
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


# --- the two clients ------------------------------------------------------------------------


def scan(endpoint: str, concurrency: int, repeat: int, work: Path) -> dict[str, Any]:
    """One real scan in a child process; its requests/s and peak memory."""
    work.mkdir(parents=True, exist_ok=True)
    config = work / "probegate.yml"
    config.write_text(
        json.dumps(
            {
                "target": {
                    "kind": "openai",
                    "endpoint": endpoint,
                    "model": "bench",
                    "tools": TOOLS,
                    "max_turns": 4,
                }
            }
        ),
        encoding="utf-8",
    )
    argv = [
        str(PROBEGATE), "scan", str(config), "--mode", "full", "--repeat", str(repeat),
        "--asi", "ASI01,ASI02,ASI03", "--concurrency", str(concurrency), "--retries", "0",
        "--quiet", "--no-sign", "--output", "json", "--output-dir", str(work / "out"),
        "--store", str(work / "store"),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=work, check=False)
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"scan exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    report = json.loads((work / "out" / "scan.json").read_text())
    requests = report["budget"]["requests_used"]
    seconds = report["duration_seconds"]
    return {
        "requests": requests,
        "seconds": seconds,
        "rps": requests / seconds,
        "attempts": report["completeness"]["agents_completed"],
        "unjudged": len(report["unjudged"]),
        "reasons": {u["reason"] for u in report["unjudged"]},
        # max RSS over reaped children: valid for this scan when it is the largest so far
        "peak_mb": peak_kb / 1024 if peak_kb > before else None,
    }


def bare_load(endpoint: str, concurrency: int, seconds: float) -> float:
    """requests/s of a loop that only sends requests: same client, same concurrency."""
    argv = [
        sys.executable, str(HERE), "--load", endpoint,
        "--concurrency", str(concurrency), "--seconds", str(seconds),
    ]  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=ROOT)
    return float(json.loads(out.stdout)["rps"])


def _load_loop(endpoint: str, concurrency: int, seconds: float) -> None:
    from probegate.transport.http import HttpClient
    from probegate.transport.limiter import RequestLimiter

    client = HttpClient(timeout=30, retries=0, pool_size=concurrency)
    limiter = RequestLimiter()
    url = endpoint + "/chat/completions"
    tools = [
        {
            "type": "function",
            "function": {k: t[k] for k in ("name", "description", "parameters")},
        }
        for t in TOOLS
    ]
    body = {
        "model": "bench",
        "messages": [
            {"role": "system", "content": "You are the Acme support agent. " * 8},
            {"role": "user", "content": "Please summarize https://docs.acme.test/q3-report."},
        ],
        "tools": tools,
    }
    stop_at = time.monotonic() + seconds
    counts = [0] * concurrency

    def worker(i: int) -> None:
        while time.monotonic() < stop_at:
            client.request_json("POST", url, body=body, limiter=limiter)
            counts[i] += 1

    start = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(worker, range(concurrency)))
    elapsed = time.monotonic() - start
    client.close()
    print(json.dumps({"rps": sum(counts) / elapsed}))


# --- the bench ------------------------------------------------------------------------------


def main() -> None:
    server = AgentServer()
    endpoint = server.start()
    ideal16 = 16 / LATENCY
    try:
        with tempfile.TemporaryDirectory(prefix="pg-bench-") as tmp:
            work = Path(tmp)
            s16 = scan(endpoint, 16, 3, work / "c16")
            s64 = scan(endpoint, 64, 8, work / "c64")
            bare64 = bare_load(endpoint, 64, max(3.0, s64["seconds"]))
    finally:
        server.stop()
    peak = max(p for p in (s16["peak_mb"], s64["peak_mb"]) if p is not None)
    rows = [
        (
            "scan --concurrency 16",
            f"{s16['rps']:.0f} req/s ({s16['requests']} requests in {s16['seconds']:.2f} s, "
            f"{s16['attempts']} attempts)",
            f"{100 * s16['rps'] / ideal16:.0f}% of ideal {ideal16:.0f} req/s",
            "target >= 85%",
            s16["rps"] >= 0.85 * ideal16,
        ),
        (
            "scan --concurrency 64",
            f"{s64['rps']:.0f} req/s ({s64['requests']} requests in {s64['seconds']:.2f} s, "
            f"{s64['attempts']} attempts)",
            f"{100 * s64['rps'] / bare64:.0f}% of bare loop {bare64:.0f} req/s",
            "target >= 85%",
            s64["rps"] >= 0.85 * bare64,
        ),
        ("peak memory (scan)", f"{peak:.0f} MB", "", "target < 200 MB", peak < 200),
    ]
    for name, figure, ratio, target, ok in rows:
        print(f"{name:24} {figure:54} {ratio:32} {target:16} {'OK' if ok else 'MISSED'}")
    reasons = s16["reasons"] | s64["reasons"]
    print(f"unjudged attempts: {s16['unjudged'] + s64['unjudged']} ({'; '.join(sorted(reasons))})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--load")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    if args.load:
        _load_loop(args.load, args.concurrency, args.seconds)
    else:
        main()
