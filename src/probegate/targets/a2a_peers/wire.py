"""What probegate's A2A peers read and write: requests in either version, and their answers.

The shapes are transport/a2a.py's (cards, states, parts); this is the server's side of them: a
request read once into a :class:`Request` (or refused with the JSON-RPC error it deserves),
and a peer's task written as a send, a stream of events or a GetTask answers it, in the
version the request was written in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from probegate.transport.a2a import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    METHODS,
    State,
    Wire,
    message_json,
    parts_text,
)

_METHOD_OF = {name: (wire, job) for wire, jobs in METHODS.items() for job, name in jobs.items()}


@dataclass(frozen=True)
class Request:
    """One JSON-RPC request a peer probegate serves was sent, read."""

    wire: Wire
    job: str  # send | stream | get | cancel
    request_id: Any
    text: str = ""
    message_id: str = ""
    context_id: str | None = None
    task_id: str | None = None


class RequestError(ValueError):
    """A request that cannot be answered but with a JSON-RPC error (its code and words)."""

    def __init__(self, code: int, message: str, request_id: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.request_id = request_id


def read_request(data: Any) -> Request:
    """A JSON-RPC request to a peer, in either version; :class:`RequestError` otherwise."""
    if not isinstance(data, dict):
        raise RequestError(INVALID_REQUEST, "a request is one JSON-RPC object (no batches)")
    request_id = data.get("id")
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        request_id = None
    method = data.get("method")
    if data.get("jsonrpc") != "2.0" or not isinstance(method, str):
        raise RequestError(INVALID_REQUEST, "not a JSON-RPC 2.0 request", request_id)
    found = _METHOD_OF.get(method)
    if found is None:
        raise RequestError(METHOD_NOT_FOUND, f"method not found: {method[:100]}", request_id)
    wire, job = found
    params = data.get("params")
    if not isinstance(params, dict):
        raise RequestError(INVALID_PARAMS, "params must be an object", request_id)
    if job in ("get", "cancel"):
        task = params.get("id")
        if not isinstance(task, str):
            raise RequestError(INVALID_PARAMS, "params.id must be a task id", request_id)
        return Request(wire, job, request_id, task_id=task)
    message = params.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
        raise RequestError(INVALID_PARAMS, "params.message with parts is required", request_id)
    return Request(
        wire,
        job,
        request_id,
        text=parts_text(message["parts"]),
        message_id=str(message.get("messageId") or ""),
        context_id=_text_or_none(message.get("contextId")),
        task_id=_text_or_none(message.get("taskId")),
    )


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class TaskView:
    """A peer's task as it is sent: its ids, its state, what it says and its one artifact."""

    task_id: str
    context_id: str
    state: State
    text: str
    artifact_id: str
    request_text: str = ""
    request_message_id: str = ""


def _parts(wire: Wire, text: str) -> list[dict[str, Any]]:
    return [{"text": text}] if wire is Wire.V1 else [{"kind": "text", "text": text}]


def _agent_message(wire: Wire, task: TaskView) -> dict[str, Any]:
    message: dict[str, Any] = {
        "messageId": f"{task.task_id}-status",
        "role": "ROLE_AGENT" if wire is Wire.V1 else "agent",
        "parts": _parts(wire, task.text),
        "contextId": task.context_id,
        "taskId": task.task_id,
    }
    if wire is Wire.V03:
        message["kind"] = "message"
    return message


def _artifact_json(wire: Wire, task: TaskView) -> dict[str, Any]:
    return {"artifactId": task.artifact_id, "name": "result", "parts": _parts(wire, task.text)}


def _status(wire: Wire, task: TaskView) -> dict[str, Any]:
    status: dict[str, Any] = {"state": task.state.on(wire)}
    if task.state.settled and task.text:
        status["message"] = _agent_message(wire, task)
    return status


def task_json(wire: Wire, task: TaskView) -> dict[str, Any]:
    """The task as GetTask (``tasks/get``) answers it: its status, its artifact when done."""
    out: dict[str, Any] = {
        "id": task.task_id,
        "contextId": task.context_id,
        "status": _status(wire, task),
    }
    if task.state is State.COMPLETED and task.text:
        out["artifacts"] = [_artifact_json(wire, task)]
    if task.request_text:
        asked = message_json(
            wire,
            task.request_text,
            message_id=task.request_message_id or f"{task.task_id}-request",
            context_id=task.context_id,
            task_id=task.task_id,
        )
        out["history"] = [asked]
    if wire is Wire.V03:
        out["kind"] = "task"
    return out


def send_result(wire: Wire, task: TaskView) -> dict[str, Any]:
    """What a send (``SendMessage``/``message/send``) answers: the task."""
    body = task_json(wire, task)
    return {"task": body} if wire is Wire.V1 else body


def stream_results(wire: Wire, task: TaskView) -> list[dict[str, Any]]:
    """The events of a streamed send, as a reference server sends them: the task submitted,
    working, its artifact, its last status (the end of the stream). A task that stays working
    ends its stream with no final event: the caller asks for it again (GetTask)."""
    submitted = TaskView(
        task.task_id,
        task.context_id,
        State.SUBMITTED,
        "",
        task.artifact_id,
        task.request_text,
        task.request_message_id,
    )
    working = TaskView(task.task_id, task.context_id, State.WORKING, "", task.artifact_id)
    events = [send_result(wire, submitted), _update(wire, working, final=False)]
    if task.state is State.COMPLETED and task.text:
        events.append(_artifact_update(wire, task))
    if task.state is not State.WORKING:
        events.append(_update(wire, task, final=True))
    return events


def _update(wire: Wire, task: TaskView, *, final: bool) -> dict[str, Any]:
    update: dict[str, Any] = {
        "taskId": task.task_id,
        "contextId": task.context_id,
        "status": _status(wire, task),
    }
    if wire is Wire.V1:
        return {"statusUpdate": update}
    return {**update, "kind": "status-update", "final": final}


def _artifact_update(wire: Wire, task: TaskView) -> dict[str, Any]:
    update: dict[str, Any] = {
        "taskId": task.task_id,
        "contextId": task.context_id,
        "artifact": _artifact_json(wire, task),
    }
    if wire is Wire.V1:
        return {"artifactUpdate": update}
    return {**update, "kind": "artifact-update", "append": False, "lastChunk": True}


def response(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}
