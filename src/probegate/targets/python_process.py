"""The parent's side of ``target.processes``: a python agent in child processes of its own.

In process, a python agent shares one interpreter lock with the scan's engine and the
model-API proxy. An agent built on an SDK spends CPU on every model call (the openai client
about 2 ms: its request transform, httpx, pydantic), so with the proxy in the same interpreter
a scan is bound by one core (bench/bench_proxy.py). With ``processes: N`` the agent is
imported in N child processes (targets/python_child.py) and each conversation runs in one of
them, chosen in turn; the scan's process keeps the engine, the proxy, the sandbox and the
servers. What stays the same: the agent's entry (``MODULE:ATTR``, one instance per
conversation), its ``context`` (``call_tool``, ``mcp_url`` and ``a2a_urls`` are asked of the
parent, whose sandbox records them), the timeout, the errors. What changes: the agent's
module state is per process, its reply crosses as plain data (its fields, not its object),
and an agent that crashes or exits ends its process instead of the scan: the attempts in
flight there are unjudged (``agent_error``), and the process is started again for the next
conversation, at most :data:`RESTARTS` times.

Closing ends the children at once (their end of the socket closes, they leave with
``os._exit``; one that does not within :data:`CLOSE_WAIT` is killed), so a stopped scan is
not held by an agent still thinking.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from probegate.errors import UsageError
from probegate.inprocess import Outcome, WhenStopped, bounded
from probegate.models.causes import Cause
from probegate.targets.python_wire import Channel, WireError
from probegate.transport.usage import TransportError

STARTUP = 120.0  # seconds for a child to import the agent (an SDK and a framework)
CLOSE_WAIT = 1.0
RESTARTS = 3
CHILD = "probegate.targets.python_child"


class Context(Protocol):
    """The parent's context of one call (python_agent.AgentContext): what the child asks."""

    def fields(self) -> dict[str, Any]: ...

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> str: ...

    @property
    def mcp_url(self) -> str: ...

    @property
    def a2a_urls(self) -> dict[str, str]: ...


@dataclass
class _Call:
    context: Context
    done: threading.Event = field(default_factory=threading.Event)
    reply: dict[str, Any] | None = None


class AgentProcess:
    """One child: the agent imported there, its calls in flight, read on a thread of its own."""

    def __init__(self, spec: str, directory: Path, number: int) -> None:
        parent, child = socket.socketpair()
        self.number = number
        self._calls: dict[str, _Call] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self.ended: str | None = None
        try:
            # The parent's import path too: the agent imports in the child as it would here.
            path = json.dumps(sys.path)
            self.process = subprocess.Popen(
                [sys.executable, "-m", CHILD, str(child.fileno()), spec, str(directory), path],
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        except OSError as exc:
            parent.close()
            raise UsageError(f"--python: cannot start the agent's process ({exc})") from None
        finally:
            child.close()
        self.channel = Channel(parent)
        self.ready: dict[str, Any] = {}
        self._reader: threading.Thread | None = None

    def wait_ready(self, deadline: float) -> dict[str, Any]:
        """The child's first frame: ``ready``, or its import failure as a usage error."""
        self.channel.sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            first = self.channel.receive()
        except TimeoutError:
            self.stop()
            raise UsageError(
                f"--python: the agent's process was not ready within {STARTUP:g}s (importing "
                "the agent)"
            ) from None
        except WireError as exc:
            self.stop()
            raise UsageError(f"--python: the agent's process did not start ({exc})") from None
        self.channel.sock.settimeout(None)
        if first is None:
            self.stop()
            raise UsageError(
                f"--python: the agent's process ended before it was ready ({self._exit()})"
            )
        if first.get("op") == "failed":
            self.stop()
            raise UsageError(bounded(str(first.get("error") or "the agent could not be loaded")))
        self.ready = first
        self._reader = threading.Thread(
            target=self._read, name=f"probegate-python-agent-{self.number}", daemon=True
        )
        self._reader.start()
        return first

    # -- calls ------------------------------------------------------------------------------
    def call(
        self,
        conversation: str,
        text: str,
        context: Context,
        timeout: float | None,
        when_stopped: WhenStopped | None,
    ) -> Outcome:
        """The agent's reply to ``text``, as the in-process call's :class:`Outcome`."""
        request = str(next(self._ids))
        call = _Call(context)
        with self._lock:
            ended = self.ended
            if ended is None:
                self._calls[request] = call
        if ended is not None:
            raise TransportError(ended, cause=Cause.AGENT_ERROR)
        forget = when_stopped(call.done.set) if when_stopped is not None else None
        try:
            message = {"op": "send", "request": request, "conversation": conversation}
            self.channel.send({**message, "text": text, "context": context.fields()})
            finished = call.done.wait(timeout)
        except (OSError, WireError) as exc:
            raise TransportError(
                f"the agent's process could not be sent the message ({exc})",
                cause=Cause.AGENT_ERROR,
            ) from None
        finally:
            if forget is not None:
                forget()
            with self._lock:
                self._calls.pop(request, None)
        reply = call.reply
        if not finished:
            return Outcome(error=f"timed out after {timeout:g}s", timed_out=True)
        if reply is None:
            if self.ended is not None:
                raise TransportError(self.ended, cause=Cause.AGENT_ERROR)
            stopped = "stopped: the scan ended before the agent answered"
            return Outcome(error=stopped, timed_out=True)
        if reply.get("constructor") is not None:
            raise TransportError(
                f"agent constructor raised {reply['constructor']}", cause=Cause.AGENT_ERROR
            )
        if reply.get("error") is not None:
            return Outcome(error=str(reply["error"]))
        return Outcome(value=reply.get("value"))

    def forget(self, conversation: str) -> None:
        """The conversation is over: its instance in the child can go."""
        if self.ended is None:
            with contextlib.suppress(OSError, WireError):
                self.channel.send({"op": "close", "conversation": conversation})

    # -- the reading thread -----------------------------------------------------------------
    def _read(self) -> None:
        reason = None
        try:
            while (message := self.channel.receive()) is not None:
                op = message.get("op")
                if op == "done":
                    with self._lock:
                        call = self._calls.get(str(message.get("request")))
                    if call is not None:
                        call.reply = message
                        call.done.set()
                elif op == "ask":
                    threading.Thread(target=self._answer, args=(message,), daemon=True).start()
        except WireError as exc:
            reason = str(exc)
        self._end(reason)

    def _answer(self, message: dict[str, Any]) -> None:
        """A context call the agent made, answered by the call's own context."""
        with self._lock:
            call = self._calls.get(str(message.get("request")))
        answer: dict[str, Any] = {"op": "answer", "id": message.get("id")}
        try:
            if call is None:
                raise RuntimeError("the call this context belonged to is over")
            what = message.get("what")
            if what == "call_tool":
                arguments = message.get("arguments")
                args = arguments if isinstance(arguments, dict) else None
                answer["value"] = call.context.call_tool(str(message.get("name")), args)
            elif what == "mcp_url":
                answer["value"] = call.context.mcp_url
            elif what == "a2a_urls":
                answer["value"] = call.context.a2a_urls
            else:
                raise RuntimeError(f"no context call {what!r}")
        except Exception as exc:
            answer["error"] = bounded(str(exc) or type(exc).__name__)
        with contextlib.suppress(OSError, WireError):
            self.channel.send(answer)

    def _end(self, reason: str | None) -> None:
        """The child is gone: every call in flight there gets the reason, none waits."""
        ended = f"the agent's process ended ({reason or self._exit()})"
        with self._lock:
            self.ended = self.ended or ended
            calls = list(self._calls.values())
        for call in calls:
            call.done.set()

    def _exit(self) -> str:
        try:
            code = self.process.wait(timeout=CLOSE_WAIT)
        except subprocess.TimeoutExpired:
            return "its channel closed"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"

    def close(self) -> None:
        """Closing the channel ends the child; it is killed past :data:`CLOSE_WAIT`."""
        with self._lock:
            self.ended = self.ended or "the agent's process was closed"
        self.channel.close()

    def stop(self) -> None:
        self.close()
        self.reap(time.monotonic() + CLOSE_WAIT)

    def reap(self, deadline: float) -> None:
        try:
            self.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class AgentProcesses:
    """``count`` children of the agent; conversations go to each in turn."""

    def __init__(self, spec: str, directory: Path, count: int) -> None:
        self.spec = spec
        self.directory = directory
        self._lock = threading.Lock()  # the turn and the conversation numbers
        # One per child: a child started again holds only its own slot, so conversations
        # for the others go on meanwhile (an agent's import takes seconds).
        self._slots = [threading.Lock() for _ in range(count)]
        self._turn = itertools.count()
        self._conversations = itertools.count()
        self._restarts = [0] * count
        if not hasattr(os, "fork"):
            raise UsageError("target.processes runs on Linux and macOS only (a socket is passed)")
        # Started together (each imports the agent), then waited for; whatever stops the
        # wait (an import error, Ctrl-C) ends every one of them.
        self.processes: list[AgentProcess] = []
        try:
            for number in range(count):
                self.processes.append(AgentProcess(spec, directory, number))
            deadline = time.monotonic() + STARTUP
            firsts = [p.wait_ready(deadline) for p in self.processes]
        except BaseException:
            self.close()
            raise
        self.takes_context = bool(firsts[0].get("takes_context"))
        source = firsts[0].get("source")
        self.source = Path(source) if isinstance(source, str) and source else None

    def conversation(self) -> RemoteConversation:
        """A new conversation, in the next child (one that ended is started again)."""
        with self._lock:
            slot = next(self._turn) % len(self.processes)
            number = str(next(self._conversations))
        with self._slots[slot]:
            process = self.processes[slot]
            if process.ended is not None:
                process = self._restart(slot, process)
        return RemoteConversation(process, number)

    def _restart(self, slot: int, ended: AgentProcess) -> AgentProcess:
        if self._restarts[slot] >= RESTARTS:
            raise TransportError(
                f"{ended.ended}; started again {RESTARTS} times, it is not started again",
                cause=Cause.AGENT_ERROR,
            )
        self._restarts[slot] += 1
        ended.stop()
        try:
            process = AgentProcess(self.spec, self.directory, slot)
            process.wait_ready(time.monotonic() + STARTUP)
        except UsageError as exc:
            raise TransportError(str(exc), cause=Cause.AGENT_ERROR) from None
        self.processes[slot] = process
        return process

    def close(self) -> None:
        for process in self.processes:
            process.close()
        deadline = time.monotonic() + CLOSE_WAIT
        for process in self.processes:
            process.reap(deadline)


@dataclass
class RemoteConversation:
    """One conversation's instance of the agent, in one child."""

    process: AgentProcess
    number: str

    def call(
        self, text: str, context: Context, timeout: float | None, stopped: WhenStopped | None
    ) -> Outcome:
        return self.process.call(self.number, text, context, timeout, stopped)

    def close(self) -> None:
        self.process.forget(self.number)
