"""What the model-API proxy costs: added latency per model call, and attempts/s of a scan.

1. Per model call. Sixteen agents send the same Chat Completions request (a system prompt,
   eleven tools, a tool call and its result) to a model that answers in 50 ms, directly and
   through the proxy, each call inside a conversation the proxy attributes (so it strips the
   mark, plants the canaries, rewrites descriptions and results, forwards, reads the reply and
   records its tool call). The model and the agents each run in a process of their own (this
   script again, ``--model`` and ``--load URL``), the proxy alone in this one, as in a scan:
   the upstream is another machine, and an agent is a process of its own (an ``http`` agent,
   or a ``python`` one with ``processes``). With all three in one interpreter the figure was
   the bench's own lock contention (the agents' HTTP client and the model's server against the
   proxy): +2.8 ms at p50 on a quiet machine, +1.2 to +1.9 ms with the model alone apart.
   The two alternate over several rounds, so a load that comes and goes falls on both.
   Printed: p50 and p99 of the latency each way, and the added p50 and p99.
2. Per attempt. The same careful model (tests/servers/brain_model.py, 50 ms per reply) and the
   same probes (every probe in the library, fast mode, ``--repeat 3``) at ``--concurrency 16``,
   scanned as ``openai`` (probegate runs the loop itself against the model: the direct loop)
   and as ``python + proxy``: an agent built with the openai SDK and its own tools, its base
   URL pointed at the proxy (tests/servers/own_tools.py), in ``processes`` of its own, one per
   core (docs/targets.md). Each scan is a child process whose attempts/s come from the
   report's own run time. Then the proxy's own share: the same agent in the same processes
   without the proxy (its base URL on the model; a third of the probes apply, so three times
   the repeats for a scan as long), whose model calls/s through the proxy and without it
   compare like for like, on a quiet machine and a loaded one. For the record, the same agent
   in probegate's process (``processes: 0``).

Why the agent runs apart: the openai SDK spends about 2.6 ms of CPU on each model call of this
agent (its request transform, httpx, pydantic). In probegate's process it shares one
interpreter lock with the engine and the proxy, and the scan is bound by one core: 0.56
(loaded) to 0.77 x (quiet) the direct loop (2026-12-05, 2 cores), whether or not the proxy is
there (the agent alone, no proxy, ran 66 to 74 attempts/s against the direct loop's 97 to 104).
Measured per process (``/proc/PID/stat``, ``processes: 1``): the agent's child 2.9 s of CPU in
a 4.8 s run, probegate's process (engine and proxy) 1.5 s, the model 1.3 s.

Measured (2026-12-06, 2 cores, four runs of this script, one of them in ``make bench``): +0.9
to +1.8 ms at p50 per model call (p99 -2.1 to +4.6 ms) and 0.86 to 0.91 x the direct loop with
``processes: 2`` as the machine was (quiet). Under load (3, below): with the busy processes in a
session of their own, -0.5 to +1.5 ms and 0.75 to 0.82 x; in the bench's session, +2.1 to +3.3
ms and 0.74 to 0.80 x, the p50 target missed in all four runs and the ratio in three. The
loaded figures move with the host's own load by as much as the target's margin: the same two
busy loops started from the shell gave 0.83 to 0.87 x in ten runs between 01:20 and 01:45 and
0.74 x at 02:35, when the quiet figure was unchanged (0.88 x). The proxy's own share (the same
agent without it, above): 0.96 x quiet, 0.93 to 0.98 x loaded. The agent without the proxy is
itself slower than the direct loop, as its SDK spends more CPU on a call than the whole direct
loop does, and a machine short of CPU slows it most.

The agent's own bound, printed in every pass since 2026-12-06: the same agent without the proxy,
in model calls/s against the direct loop's (a third of the probes apply without the proxy, so
attempts/s would not compare; a direct attempt makes as many model calls as a proxied one, 2.8
to 2.9). No proxy, however cheap, can take the ratio above it. On a slower machine of the same
class that day (2 cores, AMD EPYC at 2.0 GHz; bench/machine.py's workload 290 to 300 ms idle,
and the 10,000-finding report read in 2.3 s where the machine of the session before took 0.8 to
1.0 s) the bound was 0.57 to 0.65 x quiet, 0.58 x with another session busy and 0.45 x with the
bench's own session busy: the 0.8 x target was out of reach of any proxy there, as the agent's
openai SDK spent about 10 ms of CPU a model call (13.7 s of its two processes' CPU in a proxied
scan of 1,116 calls, their 1.5 s imports included). Four runs of this script there: the ratio
0.44 to 0.61 x quiet and 0.41 to 0.49 x loaded; the proxy's own share (through it against
without it) 0.74 to 0.91 x quiet, 0.72 and 0.97 x loaded; its CPU 1.3 to 1.9 ms a call; its p50
+1.6 to +4.1 ms quiet and +1.9 to +8.2 ms loaded. The figures moved with the machine, whose
workload took 475 ms at the start of one run and 295 ms after it.

3. Under load. Both figures again with one busy process per core, started and stopped by this
   script (``Busy``): first in a session of their own, as another terminal's or another job's
   work runs, then in the bench's own session, as work started beside the scan from the same
   shell. It matters because Linux (autogroup, on by default) shares the CPU between sessions
   first: busy work in another session leaves the scan's session half the machine, however
   many processes the scan has, while busy work in the same session competes with each of the
   scan's processes one for one, and a call through the proxy wakes one more of them twice.
   The proxy's thread waits 0.6 to 0.9 ms a call for a core there, against 0.4 ms quiet
   (``/proc/self/task/TID/schedstat``, its run delay), and spends 0.6 ms of CPU. A shorter
   scheduler slice for that thread (``sched_setattr``, EEVDF) did not shorten the wait. The
   script exits with 2 when any of its figures misses its target.

Until 2026-12-06 the p99 figure read +38 to +42 ms on a quiet machine. That was the model's
process, not the proxy: it keeps every request body it is sent, and its collector's full
collections paused it for 50, 90 and 160 ms at the same calls in every run, which fell in the
proxied rounds (``serve_model`` turns the collector off).

Until 2026-12-05 these figures were lower (0.82 to 0.91 x quiet, 0.74 to 0.78 x under two busy
loops) for two reasons in this bench, not in the proxy. The model listened with socketserver's
backlog of 5, so a scan's first 16 connections lost some SYNs (``TcpExtListenOverflows`` in
/proc/net/netstat rose by as many as the calls that took 1.15 s), each a 1 s retransmission: in
some runs five of the proxied scan's sixteen conversations started a second late, against one
of the direct loop's (tests/servers/base.py now listens with 128). And the model, answering in
this process, keeps every request body it gets: a full collection walked the bodies of the
scans before, pausing the model up to 0.1 s in the middle of the later scans, the proxied ones
(``scan`` now freezes them first).

A whole scan's CPU (``processes: 2``, /proc/PID/stat): the agent's two children 1.9 to 2.1 s
each (their import included), probegate's process 1.8 s (about 0.8 s of it starting and writing the
report), the model 1.3 s; the direct loop's scan 1.4 s and its model 1.2 s.

Printed too: the proxy's CPU a model call (this process's, where it runs alone): 0.52 to 0.70
ms (0.62 to 0.78 before the proxy parsed and wrote bodies with orjson, 2026-12-06: 0.61 to 0.69
against 0.68 in the same script, three runs each). It forwards on its own event loop
(transport/async_connections.py); on worker threads it
took 0.94 to 1.08 ms quiet and 0.83 to 0.97 ms under two busy loops, against 0.77 to 0.89 and
0.66 to 0.75 on the loop, measured side by side from two checkouts. Of what is left, the
proxy's own work on a call (parse, strip the mark, plant, rewrite, re-serialise, read the
reply, record) is about a third; the rest is the event loop and the kernel's sockets (py-spy).
In a whole scan it saves more: probegate's process spends 1.8 to 1.9 s on the loop against 2.2
to 2.3 s on threads (quiet; 1.9 to 2.0 against 2.4 to 2.5 under two busy loops). Yet the ratios
did not move (measured before the bench's two mends above; two busy loops, alternating: 0.74
to 0.78 x on the loop, 0.74 to 0.79 x on threads), and the loaded scan took as long (5.56 to
5.74 s against 5.53 to 5.85 s). On a loaded machine the agent's own processes are the critical
path: each child spends 2.4 to 2.7 ms of CPU a model call (its 0.67 s import aside) and gets
its fair share of a busy core, whatever probegate's process saves.

Targets (printed with each figure, quiet and under both loads): the proxy adds at most 2 ms at
p50 per model call, and the python agent through it reaches at least 0.8 x the direct loop's
attempts/s.

Run: ``.venv/bin/python bench/bench_proxy.py`` (or ``make bench``); ``--unloaded`` measures
the machine as it is and stops there (about 45 s, against 100 s with the loaded passes).
"""

from __future__ import annotations

import gc
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

import machine  # noqa: E402
import requests  # noqa: E402
import yaml  # noqa: E402
from tests.servers.brain_model import SECRETS, BrainModelServer, tool_config  # noqa: E402
from tests.servers.model_apis import ModelApiServer  # noqa: E402
from tests.servers.own_tools import (  # noqa: E402
    FUNCTIONS,
    describe,
    model_proxy,
    python_target,
    schema,
)

from probegate.models.canaries import make_canaries  # noqa: E402
from probegate.models.probe import Fixtures  # noqa: E402
from probegate.targets.base import TargetSettings  # noqa: E402
from probegate.targets.configured import tool_specs  # noqa: E402
from probegate.targets.model_proxy import ModelProxy, ModelProxyConfig  # noqa: E402
from probegate.targets.python_agent import PythonConfig  # noqa: E402
from probegate.targets.sandbox import Sandbox  # noqa: E402
from probegate.transport.usage import Usage  # noqa: E402

PROBEGATE = Path(sys.executable).parent / "probegate"
LATENCY = 0.05
CONCURRENCY = 16
TARGET_ADDED_P50_MS = 2.0
TARGET_RATIO = 0.8
CALLS_PER_THREAD = 25
ROUNDS = 3
REPEAT = 3
# Without the proxy a third of the probes apply (no tool results, descriptions or system prompt
# to plant in): three times the repeats make a scan about as long as the proxied one.
REPEAT_ALONE = 3 * REPEAT
# The agent's processes (``target.processes``): one per core, as a web server's workers.
PROCESSES = max(1, min(4, os.cpu_count() or 1))


class _Echo:
    """A model that always asks to look the customer up again (one tool call per reply)."""

    def reply(self, messages: list[dict[str, Any]], tools: Any) -> tuple[Any, list[Any]]:
        call = {"name": "lookup_customer", "arguments": json.dumps({"customer_id": "1001"})}
        return None, [{"id": "call_1", "type": "function", "function": call}]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def request_body(text: str) -> dict[str, Any]:
    tools = [
        {
            "type": "function",
            "function": {"name": n, "description": describe(n), "parameters": schema(n)},
        }
        for n in FUNCTIONS
    ]
    call = {"name": "lookup_customer", "arguments": '{"customer_id": "1001"}'}
    return {
        "model": "bench",
        "tools": tools,
        "messages": [
            {"role": "system", "content": "You are the Acme support agent."},
            {"role": "user", "content": text},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_1", "type": "function", "function": call}],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"plan": "premium"}'},
        ],
    }


def timed_calls(url: str, bodies: list[dict[str, Any]]) -> list[float]:
    """Every thread sends its body CALLS_PER_THREAD times; the latency of each call, in ms."""
    out: list[float] = []
    lock = threading.Lock()

    def worker(body: dict[str, Any]) -> None:
        http = requests.Session()
        http.post(url, json=body, timeout=30).raise_for_status()  # warm the connection
        mine = []
        for _ in range(CALLS_PER_THREAD):
            start = time.perf_counter()
            http.post(url, json=body, timeout=30).raise_for_status()
            mine.append((time.perf_counter() - start) * 1000)
        with lock:
            out.extend(mine)

    threads = [threading.Thread(target=worker, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


def child(*args: str) -> subprocess.Popen[str]:
    """This script again, as the model (``--model``) or as the agents' load (``--load URL``)."""
    return subprocess.Popen(
        [sys.executable, str(HERE), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def serve_model() -> None:
    """The upstream model, in a process of its own: its base URL on stdout, until stdin ends.

    Its collector is off: the server keeps every request body it is sent (2,500 of them, a
    quarter of a million objects), and the full collections that walked them paused this
    process for 50, 90 and 160 ms, at the same calls in every run, all of them in the proxied
    rounds; sixteen calls waited out each pause, which made the p99 figure. A real upstream
    keeps nothing here.
    """
    gc.disable()
    with ModelApiServer(agent=_Echo(), latency=LATENCY) as model:
        print(model.base_url, flush=True)
        sys.stdin.read()


def load(url: str, bodies: list[dict[str, Any]]) -> list[float]:
    """The latencies of CONCURRENCY agents' calls to ``url``, sent from a process of its own."""
    process = child("--load", url)
    out, _ = process.communicate(json.dumps(bodies))
    if process.returncode:
        sys.exit(f"the load process failed ({process.returncode})")
    latencies: list[float] = json.loads(out)
    return latencies


def per_call(where: str) -> bool:
    """Latency per model call, direct and through the proxy; whether the p50 target held."""
    model = child("--model")
    assert model.stdout is not None
    base_url = model.stdout.readline().strip()
    direct: list[float] = []
    through: list[float] = []
    cpu = 0.0  # this process's CPU (the proxy's, alone in it) while the proxied calls ran
    port = free_port()
    config = ModelProxyConfig(api="openai-chat", listen=f"127.0.0.1:{port}", upstream=base_url)
    tools = tool_specs(PythonConfig.model_validate({"tools": tool_config()}))
    proxy = ModelProxy(config, TargetSettings(concurrency=CONCURRENCY), tools, {})
    try:
        bodies = []
        for i in range(CONCURRENCY):
            sandbox = Sandbox(tools, Fixtures(), make_canaries(0, f"a#{i}"), attempt_id=str(i))
            conversation = proxy.open(sandbox, Usage())
            bodies.append(request_body(conversation.begin("Please look up my account.")))
        for _ in range(ROUNDS):
            plain = [request_body("Please look up my account.")] * CONCURRENCY
            direct += load(f"{base_url}/chat/completions", plain)
            start = time.process_time()
            through += load(f"{proxy.base_url}/chat/completions", bodies)
            cpu += time.process_time() - start
        summary = proxy.summary()
    finally:
        proxy.close()
        model.communicate("")
    assert summary is not None and summary.unattributed == 0
    for name, values in (("direct", direct), ("through proxy", through)):
        print(
            f"{where}{name:14} {len(values)} calls at concurrency {CONCURRENCY}, "
            f"{LATENCY * 1000:.0f} ms model: p50 {percentile(values, 0.5):.1f} ms, "
            f"p99 {percentile(values, 0.99):.1f} ms, mean {statistics.fmean(values):.1f} ms"
        )
    added = [percentile(through, q) - percentile(direct, q) for q in (0.5, 0.99)]
    verdict = "OK" if added[0] <= TARGET_ADDED_P50_MS else "OVER TARGET"
    print(
        # Two decimals: at the target's edge, +2.04 printed as +2.0 read as met.
        f"{where}proxy overhead per model call: p50 {added[0]:+.2f} ms, p99 {added[1]:+.1f} ms "
        f"({summary.attributed} attributed, {summary.unattributed} unattributed; target p50 "
        f"<= +{TARGET_ADDED_P50_MS:g} ms) {verdict}"
    )
    # Each load process warms its connections with one call per agent, counted by the proxy.
    print(
        f"{where}the proxy's CPU (its process, user and system): "
        f"{cpu / summary.model_calls * 1000:.2f} ms a model call"
    )
    return added[0] <= TARGET_ADDED_P50_MS


def scan(
    directory: Path, target: dict[str, Any], env: dict[str, str], repeat: int = REPEAT
) -> dict[str, Any]:
    config = directory / "probegate.yml"
    config.write_text(yaml.safe_dump({"target": target}), encoding="utf-8")
    # The model answers from this process and keeps every request body it was sent (the calls
    # are counted there): out of its collector's sight, so that a full collection of the
    # scans before does not pause the model in the middle of this one (a scan later in the
    # list paid up to 0.1 s for it). A real upstream keeps nothing.
    gc.freeze()
    args = [str(PROBEGATE), "scan", str(config), "--quiet", "--no-sign"]
    args += ["--store", str(directory / "store"), "--output-dir", str(directory / "out")]
    args += ["--concurrency", str(CONCURRENCY), "--repeat", str(repeat), "--timeout", "60"]
    subprocess.run(args, check=False, env={**os.environ, **env})
    report: dict[str, Any] = json.loads((directory / "out" / "scan.json").read_text("utf-8"))
    return report


def figures(name: str, report: dict[str, Any], calls: int) -> tuple[float, float]:
    """Attempts/s and model calls/s of a scan (``calls``: what the model answered it)."""
    attempts = report["coverage"]["attempts_completed"]
    seconds = report["duration_seconds"]
    rate = attempts / seconds
    print(
        f"{name:16} {attempts} attempts in {seconds:.1f} s = {rate:.1f} attempts/s "
        f"({calls / seconds:.0f} model calls/s); {report['coverage']['attempts_unjudged']} "
        f"unjudged; {len(report['findings'])} findings"
    )
    return rate, calls / seconds


def proxied(root: Path, brain: BrainModelServer, processes: int) -> tuple[dict[str, Any], int]:
    """The python agent behind the proxy, in probegate's process (0) or in ``processes`` of
    its own; its report and the model calls it made."""
    directory = root / f"proxy-{processes}"
    directory.mkdir()
    port = free_port()
    before = len(brain.bodies)
    report = scan(
        directory,
        python_target(model_proxy(brain, "chat", port, careful=True), "chat")
        | {"processes": processes},
        {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "PYTHONPATH": str(ROOT)},
    )
    proxy = report.get("proxy") or {}
    if proxy.get("unattributed", 1) or not proxy.get("model_calls"):
        sys.exit(f"the proxied scan ({processes} processes) attributed no call or missed some")
    return report, len(brain.bodies) - before


def per_attempt(where: str, *, whole: bool) -> bool:
    """Attempts/s of the direct loop and of the python agent behind the proxy, and the same
    agent without the proxy, the most any proxy could let it reach; ``whole`` adds the agent
    in probegate's process. Whether the ratio held."""
    with tempfile.TemporaryDirectory() as tmp, BrainModelServer(latency=LATENCY) as brain:
        root = Path(tmp)
        (root / "openai").mkdir()
        prompt = root / "openai" / "prompt.txt"
        prompt.write_text("You are the Acme support agent.\n", encoding="utf-8")
        before = len(brain.bodies)
        direct = scan(
            root / "openai",
            {
                "kind": "openai",
                "endpoint": brain.endpoint(careful=True),
                "model": "brain",
                "system_prompt": str(prompt),
                "max_turns": 32,
                "tools": tool_config(),
            },
            {"OPENAI_API_KEY": "bench"},
        )
        base_rate, base_calls = figures(
            f"{where}openai (direct)", direct, len(brain.bodies) - before
        )
        apart, calls = proxied(root, brain, PROCESSES)
        apart_rate, apart_calls = figures(f"{where}python + proxy", apart, calls)
        if whole:
            inside, calls = proxied(root, brain, 0)
            inside_rate, _ = figures(f"{where}  in process", inside, calls)
        before = len(brain.bodies)
        (root / "agent").mkdir()
        alone = scan(
            root / "agent",
            {
                "kind": "python",
                "python": "tests.servers.own_tools:ChatAgent",
                "processes": PROCESSES,
                "canaries": list(SECRETS),
                "tools": tool_config(),
            },
            {"OPENAI_BASE_URL": brain.endpoint(careful=True), "PYTHONPATH": str(ROOT)},
            repeat=REPEAT_ALONE,
        )
        _, alone_calls = figures(f"{where}  no proxy", alone, len(brain.bodies) - before)
    proxy = apart["proxy"]
    ratio = apart_rate / base_rate
    print(
        f"{where}proxy: {proxy['model_calls']} model calls, {proxy['unattributed']} "
        f"unattributed, {proxy['stopped']} stopped; python + proxy (processes: {PROCESSES}) / "
        f"openai: {ratio:.3f} x "  # 0.797 printed as 0.80 read as met
        f"the direct loop's attempts/s (target >= {TARGET_RATIO:g} x) "
        f"{'OK' if ratio >= TARGET_RATIO else 'UNDER TARGET'}"
    )
    # Model calls/s compare scans of different probes (the agent alone has a third of them);
    # a direct attempt makes as many calls as a proxied one (2.8 to 2.9), so the ratio of
    # calls/s reads as the ratio of attempts/s.
    print(
        f"{where}the agent's own bound: the same agent in the same {PROCESSES} processes makes "
        f"{alone_calls:.0f} model calls/s without the proxy, {alone_calls / base_calls:.2f} x "
        f"the direct loop's {base_calls:.0f} (no proxy could give more); through the proxy "
        f"{apart_calls:.0f} ({apart_calls / alone_calls:.2f} x without it: the proxy's own share)"
    )
    if whole:
        print(
            f"{where}in probegate's process (processes: 0) the agent reaches "
            f"{inside_rate / base_rate:.2f} x the direct loop"
        )
    return ratio >= TARGET_RATIO


class Busy:
    """Other work on the machine: one busy process per core, started and stopped by this
    bench. ``own_session``: in a session of their own, as another terminal's or another job's
    work runs (Linux's scheduler shares the CPU between sessions first, then between the
    processes of each: autogroup), or in the bench's own session, as work started beside the
    scan from the same shell, which competes with each of the scan's processes one for one.
    Each ends by itself if the bench does (it watches its parent), so none is left spinning."""

    def __init__(self, *, own_session: bool) -> None:
        self.own_session = own_session
        self.processes: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Busy:
        spin = (
            "import os, sys\nparent = int(sys.argv[1])\nwhile os.getppid() == parent:\n"
            "    for _ in range(100_000): pass"
        )
        for _ in range(os.cpu_count() or 1):
            self.processes.append(
                subprocess.Popen(
                    [sys.executable, "-c", spin, str(os.getpid())],
                    start_new_session=self.own_session,
                )
            )
        time.sleep(0.5)  # all of them spinning before the first figure
        return self

    def __exit__(self, *_exc: object) -> None:
        for process in self.processes:
            process.kill()
        for process in self.processes:
            process.wait()


def main() -> None:
    if sys.argv[1:2] == ["--model"]:
        serve_model()
        return
    if sys.argv[1:2] == ["--load"]:
        print(json.dumps(timed_calls(sys.argv[2], json.loads(sys.stdin.read()))))
        return
    print(machine.describe(), flush=True)
    held = [per_call(""), per_attempt("", whole=True)]
    loads = [] if "--unloaded" in sys.argv[1:] else [True, False]
    for own_session in loads:
        where = "another session busy" if own_session else "this session busy"
        print(f"\n-- {where}: {os.cpu_count() or 1} busy processes, one per core --")
        with Busy(own_session=own_session):
            held += [per_call(f"[{where}] "), per_attempt(f"[{where}] ", whole=False)]
    print(f"\n{sum(held)} of {len(held)} figures within their targets")
    if not all(held):
        sys.exit(2)


if __name__ == "__main__":
    main()
