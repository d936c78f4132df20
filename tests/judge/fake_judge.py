"""A loopback fake of a judge's model API: answers well, badly, or not at all.

It binds 127.0.0.1 on port 0, serves from a daemon thread, records every request, and stops
itself when the ``with`` block ends (a hanging handler is released first, so shutdown is quick).
A reply may be a function of the request's body: :func:`calibrated` answers the bundled
calibration cases with their known verdicts (a judge that passes calibration) and every other
case as the test says.

Replies are written as chat completions; a request to ``/responses`` or ``/messages`` gets the
same answer as a Responses or Messages reply, so every test of the judge can run over all three
APIs (a body that is not a chat completion, such as an HTML page, goes out as it is).
:class:`CalibratedModel` is the same calibrated judge as a decision maker for the three-API
server of tests/servers/model_apis.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from probegate.judge.prompt import BEGIN_DATA, END_DATA

# A reply is (status, body bytes, extra headers), or None to hang until the test ends.
Reply = tuple[int, bytes, dict[str, str]] | None
# Or a function of the request body that returns one.
Responder = Callable[[dict[str, Any]], Reply]


RUBRIC_MARK = "\nRubric:\n"
# What each answer of :func:`verdict` says it used, as a model's reply does.
USAGE = {"prompt_tokens": 900, "completion_tokens": 40}


def completion(content: str, usage: dict[str, int] | None = None) -> Reply:
    """A well-formed chat completion whose message content is ``content``."""
    body: dict[str, Any] = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]
    }
    if usage is not None:
        body["usage"] = usage
    return 200, json.dumps(body).encode(), {"Content-Type": "application/json"}


def verdict(verdict: str, evidence: str = "", confidence: float = 0.9) -> Reply:
    return completion(
        json.dumps({"verdict": verdict, "evidence": evidence, "confidence": confidence}), USAGE
    )


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def user_texts(body: dict[str, Any]) -> list[str]:
    """The user messages of a judge request in any of the three APIs, in order."""
    items = body.get("messages") if "messages" in body else body.get("input")
    return [_text(m.get("content")) for m in items or [] if m.get("role") == "user"]


def system_of(body: dict[str, Any]) -> str:
    """The system prompt of a judge request in any of the three APIs."""
    if "instructions" in body:
        return str(body["instructions"])
    if "system" in body:
        return _text(body["system"])
    return next(_text(m["content"]) for m in body["messages"] if m.get("role") == "system")


def data_of(body: dict[str, Any]) -> dict[str, Any]:
    """The data of a judge request: the one line between BEGIN DATA and END DATA."""
    lines = user_texts(body)[0].split("\n")
    begin, end = lines.index(BEGIN_DATA), lines.index(END_DATA)
    assert end == begin + 2, "the data is one line"
    data: dict[str, Any] = json.loads(lines[begin + 1])
    return data


def rubric_of(body: dict[str, Any]) -> str:
    """The rubric of a judge request: the end of its system prompt."""
    return system_of(body).split(RUBRIC_MARK, 1)[1]


def case_of(body: dict[str, Any]) -> dict[str, Any]:
    """The case a judge request asks about: attack, spans and transcript (the data), and the
    rubric (judge/prompt.py)."""
    return {**data_of(body), "rubric": rubric_of(body)}


def calibration_answer(
    case: dict[str, Any], wrong: tuple[str, ...] = (), *, readings: bool = True
) -> dict[str, Any] | None:
    """The known verdict of a calibration case or (with ``readings``) of a reply of the reading
    set (the other one for a case or reply named in ``wrong``), or None for any other case."""
    from probegate.judge.calibration import calibration_set

    known = {f"calibration-{c.id}": c for c in calibration_set()}
    attack = str(case["attack"]["id"])
    name = attack.split(".")[1] if attack.count(".") == 2 else ""
    found = known.get(name)
    if found is None:
        return reading_answer(case, wrong) if readings else None
    answer = found.verdict
    if found.id in wrong:
        answer = "resisted" if answer == "vulnerable" else "vulnerable"
    quote = found.quote if answer == "vulnerable" else ""
    return {"verdict": answer, "evidence": quote, "confidence": 0.9}


@lru_cache(maxsize=1)
def reading_truths() -> dict[tuple[str, str], tuple[str, bool]]:
    """Each reply of the reading set (judge/data/readings.yaml) as the judge sees it (its probe
    and the reply, redacted as a request redacts it), with its id and whether it is careful."""
    from probegate.judge.readings import readings
    from probegate.models.redaction import Redactor

    out: dict[tuple[str, str], tuple[str, bool]] = {}
    for reading in readings():
        seen, _ = Redactor({}).transcript(reading.transcript)
        out[(reading.context.probe.id, seen.turns[-1].content)] = (reading.id, reading.careful)
    return out


@lru_cache(maxsize=1)
def calibration_requests() -> int:
    """The requests of a calibration a judge passes: one per case of the first stage, one per
    question the second stage's replies put (judged as a scan judges them)."""
    from probegate.judge.attempt import judge_attempt
    from probegate.judge.calibration import calibration_set
    from probegate.judge.readings import readings
    from probegate.library.oracles.base import OracleResult

    asked = 0

    def count(oracle: Any, transcript: Any, ctx: Any) -> OracleResult:
        nonlocal asked
        asked += 1
        return OracleResult(False, reason="counted")

    for reading in readings():
        judge_attempt(reading.transcript, reading.context, count)
    return len(calibration_set()) + asked


def reading_answer(case: dict[str, Any], wrong: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """The truth about a reply of the reading set: resisted for a careful one, vulnerable with
    its first line quoted for a twin (the other way for a reply named in ``wrong``)."""
    said = [t["content"] for t in case["transcript"] if t["role"] == "assistant"]
    known = reading_truths().get((str(case["attack"]["id"]), said[-1])) if said else None
    if known is None:
        return None
    reading, careful = known
    if careful != (reading in wrong):
        return {"verdict": "resisted", "evidence": "", "confidence": 0.9}
    quote = next(line for line in said[-1].splitlines() if line.strip())[:200]
    return {"verdict": "vulnerable", "evidence": quote, "confidence": 0.9}


def calibrated(then: Responder, *, wrong: tuple[str, ...] = (), readings: bool = True) -> Responder:
    """Answer calibration cases with their known verdicts (except those named in ``wrong``,
    answered the other way), and any other case with ``then``. Without ``readings`` only the
    first stage is known: the replies of the second go to ``then`` too."""

    def respond(body: dict[str, Any]) -> Reply:
        answer = calibration_answer(case_of(body), wrong, readings=readings)
        if answer is None:
            return then(body)
        return verdict(answer["verdict"], answer["evidence"])

    return respond


class CalibratedModel:
    """The calibrated judge as the ``agent`` of tests/servers/model_apis.py's server: it passes
    calibration and answers any other case ``then`` (a verdict object)."""

    def __init__(self, then: dict[str, Any]) -> None:
        self.then = then

    def reply(self, messages: list[dict[str, Any]], tools: dict[str, str]) -> tuple[str, list[Any]]:
        body = {"messages": messages}
        return json.dumps(calibration_answer(case_of(body)) or self.then), []


def in_api(
    path: str, reply: tuple[int, bytes, dict[str, str]]
) -> tuple[int, bytes, dict[str, str]]:
    """A chat completion's answer as the API of ``path`` writes it; any other body as it is."""
    status, raw, headers = reply
    api = "responses" if path.endswith("/responses") else "messages"
    if path.endswith("/chat/completions"):
        return reply
    try:
        data = json.loads(raw)
        content = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return reply
    usage = data.get("usage") or {}
    tokens = {
        "input_tokens": usage.get("prompt_tokens", 0),
        "output_tokens": usage.get("completion_tokens", 0),
    }
    if api == "responses":
        part = {"type": "output_text", "text": content, "annotations": []}
        item = {"type": "message", "id": "msg_1", "role": "assistant", "content": [part]}
        body: dict[str, Any] = {"object": "response", "status": "completed", "output": [item]}
    else:
        body = {"type": "message", "role": "assistant", "stop_reason": "end_turn"}
        body["content"] = [{"type": "text", "text": content}]
    body["usage"] = tokens
    return status, json.dumps(body).encode(), headers


@dataclass
class FakeJudge:
    """The running fake: its base URL, the requests it saw, and the replies it will give."""

    base_url: str
    replies: list[Reply | Responder]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


class _JudgeServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # as tests/servers/base.py's: no SYN dropped when a scan judges


@contextmanager
def fake_judge(*replies: Reply | Responder) -> Iterator[FakeJudge]:
    """Serve ``replies`` in order (the last one repeats) until the block exits."""
    release = threading.Event()
    state = FakeJudge(base_url="", replies=list(replies))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output clean
            return None

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            body = json.loads(raw or b"{}")
            with lock:
                state.requests.append(
                    {"path": self.path, "body": body, "raw": raw.decode("utf-8", "replace")}
                )
                state.headers.append({k.lower(): v for k, v in self.headers.items()})
                index = min(len(state.requests), len(state.replies)) - 1
                chosen = state.replies[index]
            reply = chosen(body) if callable(chosen) else chosen
            if reply is None:
                release.wait(timeout=10)
                return
            status, body, extra = in_api(self.path, reply)
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = _JudgeServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-judge", daemon=True
    )
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
