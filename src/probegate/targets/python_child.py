"""The child's side of ``target.processes``: the python agent, run in a process of its own.

``python -m probegate.targets.python_child FD MODULE:ATTR DIRECTORY`` imports the agent as the
in-process target does (the config's directory and the working directory on ``sys.path``),
says ``ready`` (or ``failed``, with the one line the parent shows as a usage error), then
answers the parent's frames (targets/python_wire.py) until the parent closes its end:

- ``send``: run the conversation's agent on a message, on a thread of its own (the parent
  gives up on it at its timeout; a thread cannot be killed, so it is left to finish), and
  answer ``done`` with the reply as plain data, or with the agent's error;
- ``close``: forget a conversation's instance;
- ``answer``: what the parent says to a context call the agent made (``call_tool``,
  ``mcp_url``, ``a2a_urls``), which the sandbox, the MCP server and the peers answer there.

The child ignores SIGINT and SIGTERM: the parent ends it (a Ctrl-C reaches the whole process
group, and the scan must publish its partial report first). When the parent's end closes,
the child leaves at once with ``os._exit``, whatever its agent threads are doing.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from probegate.errors import UsageError
from probegate.inprocess import (
    agent_entry,
    describe_exception,
    field_of,
    load_attribute,
    source_file,
)
from probegate.models.bounds import text_of
from probegate.targets.python_wire import Channel, WireError

_USAGE_FIELDS = ("prompt_tokens", "completion_tokens")
_CALL_FIELDS = ("name", "arguments", "result")


def portable(result: Any) -> Any:
    """The agent's reply as the python target reads it (python_agent._to_turn), in plain data:
    a string as it is, an AgentResult object or dict as a dict of the fields it reads."""
    if result is None or isinstance(result, str):
        return result
    output = field_of(result, "output")
    if output is not None and not isinstance(output, str):
        output = text_of(output)
    items = field_of(result, "tool_calls")
    if isinstance(items, list):
        items = [
            item if isinstance(item, dict) else {n: getattr(item, n, None) for n in _CALL_FIELDS}
            for item in items
        ]
    usage = field_of(result, "token_usage")
    tokens = {n: field_of(usage, n) for n in _USAGE_FIELDS} if usage is not None else None
    return {"output": output, "tool_calls": items, "token_usage": tokens}


class RemoteContext:
    """What the agent's ``run(input, context)`` is given: the in-process context's fields,
    and its calls asked of the parent, whose sandbox records them."""

    def __init__(self, child: Child, fields: dict[str, Any]) -> None:
        self._child = child
        self.tools: list[dict[str, Any]] = fields.get("tools") or []
        self.history: list[dict[str, str]] = fields.get("history") or []
        self.session: int = int(fields.get("session") or 0)
        self.sender: str = str(fields.get("sender") or "user")
        self.agent_name: str | None = fields.get("agent_name")
        self.model_base_url: str | None = fields.get("model_base_url")
        self.request = str(fields.get("request") or "")

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """Run a tool in probegate's sandbox; returns its result, or ``ERROR: ...``."""
        value = self._child.ask(self.request, "call_tool", name=str(name), arguments=arguments)
        return str(value)

    @property
    def mcp_url(self) -> str:
        return str(self._child.ask(self.request, "mcp_url"))

    @property
    def a2a_urls(self) -> dict[str, str]:
        value = self._child.ask(self.request, "a2a_urls")
        return {str(k): str(v) for k, v in (value or {}).items()}

    @property
    def a2a_url(self) -> str:
        return next(iter(self.a2a_urls.values()))


class Child:
    """The agent and the conversations it holds; frames read on the main thread."""

    def __init__(self, channel: Channel, spec: str, directory: Path) -> None:
        self.channel = channel
        obj = load_attribute(spec, flag="--python", search=[directory, Path.cwd()])
        self.entry = agent_entry(obj, what=spec)
        source = source_file(obj)
        self.source = str(source) if source else None
        self.runs: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._asked: dict[str, tuple[threading.Event, list[dict[str, Any]]]] = {}
        self._ids = itertools.count()

    def serve(self) -> None:
        while True:
            message = self.channel.receive()
            if message is None:
                return
            op = message.get("op")
            if op == "send":
                threading.Thread(target=self._send, args=(message,), daemon=True).start()
            elif op == "close":
                with self._lock:
                    self.runs.pop(str(message.get("conversation")), None)
            elif op == "answer":
                with self._lock:
                    waiting = self._asked.pop(str(message.get("id")), None)
                if waiting is not None:
                    waiting[1].append(message)
                    waiting[0].set()

    def ask(self, request: str, what: str, **fields: Any) -> Any:
        """A context call, answered by the parent; its error is raised in the agent's code."""
        key = str(next(self._ids))
        done, box = threading.Event(), list[dict[str, Any]]()
        with self._lock:
            self._asked[key] = (done, box)
        self.channel.send({"op": "ask", "id": key, "request": request, "what": what, **fields})
        done.wait()
        answer = box[0]
        if answer.get("error") is not None:
            raise RuntimeError(str(answer["error"]))
        return answer.get("value")

    def _send(self, message: dict[str, Any]) -> None:
        request = str(message.get("request"))
        conversation = str(message.get("conversation"))
        reply: dict[str, Any] = {"op": "done", "request": request}
        try:
            run = self._run_of(conversation)
        except BaseException as exc:  # the constructor's failure, as in process
            reply["constructor"] = describe_exception(exc)
            self._reply(reply)
            return
        fields = dict(message.get("context") or {}, request=request)
        try:
            text = str(message.get("text") or "")
            context = RemoteContext(self, fields)
            value = run(text, context) if self.entry.takes_context else run(text)
            reply["value"] = portable(value)
        except BaseException as exc:  # the agent's error, never the child's end
            reply["error"] = describe_exception(exc)
        self._reply(reply)

    def _run_of(self, conversation: str) -> Any:
        with self._lock:
            run = self.runs.get(conversation)
        if run is None:
            run = self.entry.new_call()  # a class agent: one instance per conversation
            with self._lock:
                self.runs[conversation] = run
        return run

    def _reply(self, reply: dict[str, Any]) -> None:
        try:
            self.channel.send(reply)
        except WireError as exc:
            self.channel.send({**reply, "value": None, "error": describe_exception(exc)})
        except OSError:
            pass  # the parent is gone; the read loop ends the process


def main(argv: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    fd, spec, directory = int(argv[0]), argv[1], Path(argv[2])
    # The parent's import path after the child's own: where the parent would have found it.
    sys.path.extend(p for p in json.loads(argv[3]) if p not in sys.path)
    channel = Channel(socket.socket(fileno=fd))
    try:
        child = Child(channel, spec, directory)
    except UsageError as exc:
        channel.send({"op": "failed", "error": str(exc)})
        os._exit(0)
    channel.send(
        {
            "op": "ready",
            "takes_context": child.entry.takes_context,
            "source": child.source,
            "pid": os.getpid(),
        }
    )
    with contextlib.suppress(WireError):
        child.serve()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # agent threads still running are abandoned, as the parent abandoned them


if __name__ == "__main__":
    main(sys.argv[1:])
