"""The Agent2Agent (A2A) protocol's JSON-RPC binding, both wire versions, both sides.

probegate speaks A2A twice: as a client of an agent under test that serves it (the ``a2a``
target kind, targets/a2a_agent.py) and as the hostile peers it serves to an agent under test
(targets/a2a_peers/). Both read and write the shapes defined here, as the model-API loops and
the proxy share ``transport/model_apis/``.

Two versions are in use, and an agent may speak either (docs/targets.md, "A2A agents"):

- **1.0**: methods ``SendMessage``, ``SendStreamingMessage``, ``GetTask``, ``CancelTask``,
  which a 1.0 server answers only with the header ``A2A-Version: 1.0`` (without it, JSON-RPC
  error -32009); roles and states are enum names (``ROLE_USER``, ``TASK_STATE_COMPLETED``); a
  send is answered ``{"task": ...}`` or ``{"message": ...}``; stream events are
  ``{"task"|"message"|"statusUpdate"|"artifactUpdate": ...}``; a part is ``{"text": ...}``,
  ``{"data": ...}``, ``{"url": ...}`` or ``{"raw": ...}``; the card lists its endpoints in
  ``supportedInterfaces``.
- **0.3**: methods ``message/send``, ``message/stream``, ``tasks/get``, ``tasks/cancel``; roles
  and states are lower-case words (``user``, ``input-required``); every object says what it is
  in ``kind`` (``task``, ``message``, ``status-update`` with its ``final`` flag,
  ``artifact-update``); a part is ``{"kind": "text"|"data"|"file", ...}``; the card names its
  one endpoint in ``url`` and its version in ``protocolVersion``.

The card is at ``/.well-known/agent-card.json`` (an older ``/.well-known/agent.json`` too) and
JSON-RPC is ``POST`` to the endpoint the card names. A conversation goes on by ``contextId``;
a task waiting for input (``input-required``) goes on by its ``taskId`` as well.

Everything an agent sends is outside data: it is read here once into small typed values, and
what cannot be read raises :class:`~probegate.transport.usage.MalformedReply` (a reply) or
:class:`CardError` (a card) with words a user can act on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from probegate.models.causes import Cause
from probegate.transport.usage import UNREADABLE, MalformedReply, TransportError

CARD_PATH = "/.well-known/agent-card.json"
LEGACY_CARD_PATH = "/.well-known/agent.json"
VERSION_HEADER = "A2A-Version"
JSONRPC = "JSONRPC"
# Artifacts and parts read of one reply: no answer a probe reads needs more.
MAX_ARTIFACTS = 64
MAX_PARTS = 64

# JSON-RPC error codes: the spec's, and A2A's own.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
TASK_NOT_FOUND = -32001
VERSION_NOT_SUPPORTED = -32009


class Wire(StrEnum):
    """The protocol version a message is written in."""

    V1 = "1.0"
    V03 = "0.3"


class State(StrEnum):
    """A task's state, the same word whichever version named it."""

    SUBMITTED = "submitted"
    WORKING = "working"
    INPUT_REQUIRED = "input-required"
    AUTH_REQUIRED = "auth-required"
    COMPLETED = "completed"
    CANCELED = "canceled"
    FAILED = "failed"
    REJECTED = "rejected"
    UNKNOWN = "unknown"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL

    @property
    def interrupted(self) -> bool:
        """The task waits for the caller: it is over for this message."""
        return self in (State.INPUT_REQUIRED, State.AUTH_REQUIRED)

    @property
    def settled(self) -> bool:
        """Nothing more will come for this message without another one."""
        return self.terminal or self.interrupted

    def on(self, wire: Wire) -> str:
        """The state as ``wire`` writes it."""
        if wire is Wire.V03:
            return self.value
        return "TASK_STATE_" + ("UNSPECIFIED" if self is State.UNKNOWN else self.name)


_TERMINAL = frozenset({State.COMPLETED, State.CANCELED, State.FAILED, State.REJECTED})
_STATES = {
    **{s.value: s for s in State},
    **{f"TASK_STATE_{s.name}": s for s in State},
    "TASK_STATE_UNSPECIFIED": State.UNKNOWN,
}

# What each request is called on each wire.
METHODS: dict[Wire, dict[str, str]] = {
    Wire.V1: {
        "send": "SendMessage",
        "stream": "SendStreamingMessage",
        "get": "GetTask",
        "cancel": "CancelTask",
    },
    Wire.V03: {
        "send": "message/send",
        "stream": "message/stream",
        "get": "tasks/get",
        "cancel": "tasks/cancel",
    },
}


def headers(wire: Wire) -> dict[str, str]:
    """The headers a request on ``wire`` carries (1.0 names its version; 0.3 never did)."""
    return {VERSION_HEADER: Wire.V1.value} if wire is Wire.V1 else {}


def state_of(value: Any) -> State:
    return _STATES.get(value, State.UNKNOWN) if isinstance(value, str) else State.UNKNOWN


# --------------------------------------------------------------------------- errors


class CardError(ValueError):
    """An agent card probegate cannot use: not JSON, no JSON-RPC endpoint, an unknown version."""


class RpcError(TransportError):
    """The agent answered with a JSON-RPC error: an error of its own (internal error: the
    agent failed), a request it refused (a method, version or params it does not take), or
    another server error."""

    def __init__(self, code: Any, message: str, *, fatal: bool = False) -> None:
        if code == INTERNAL_ERROR:
            cause = Cause.AGENT_ERROR
        elif code in (
            PARSE_ERROR,
            INVALID_REQUEST,
            METHOD_NOT_FOUND,
            INVALID_PARAMS,
            VERSION_NOT_SUPPORTED,
        ):
            cause = Cause.CLIENT_ERROR
        else:
            cause = Cause.SERVER_ERROR
        super().__init__(message, cause=cause, fatal=fatal)
        self.code = code


def rpc_result(data: Any, what: str) -> Any:
    """The ``result`` of a JSON-RPC response; its ``error`` as :class:`RpcError`.

    An error that will come back for every message (the method or the version is not one the
    agent speaks) is fatal: the scan stops at once instead of after every attempt.
    """
    if not isinstance(data, dict):
        raise MalformedReply(f"{UNREADABLE}: {what} answered with a JSON {_kind(data)}")
    error = data.get("error")
    if error is not None:
        code = error.get("code") if isinstance(error, dict) else None
        said = error.get("message") if isinstance(error, dict) else error
        text = " ".join(str(said or "").split())[:300]
        fatal = code in (METHOD_NOT_FOUND, VERSION_NOT_SUPPORTED)
        hint = (
            " (the agent speaks another A2A version: set target.a2a.version)"
            if code == VERSION_NOT_SUPPORTED
            else ""
        )
        raise RpcError(code, f"JSON-RPC error {code} from {what}: {text}{hint}", fatal=fatal)
    if "result" not in data:
        raise MalformedReply(f"{UNREADABLE}: {what} answered JSON-RPC with no result or error")
    return data["result"]


def _kind(value: Any) -> str:
    return {list: "array", str: "string", type(None): "null"}.get(type(value), "value")


# --------------------------------------------------------------------------- cards


@dataclass(frozen=True)
class Skill:
    """One skill an agent card advertises."""

    id: str
    name: str
    description: str = ""
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Card:
    """What probegate needs of an agent card: where to send, in which version, and how."""

    name: str
    description: str
    url: str  # the JSON-RPC endpoint
    wire: Wire
    streaming: bool
    skills: tuple[Skill, ...] = ()


def _version(value: Any) -> Wire | None:
    """The wire of a protocol version string (``1.0``, ``1.0.0``, ``0.3.0``)."""
    if not isinstance(value, str):
        return None
    parts = value.strip().split(".")
    if parts[:2] == ["1", "0"]:
        return Wire.V1
    if parts[:2] == ["0", "3"]:
        return Wire.V03
    return None


def read_card(data: Any) -> Card:
    """An agent card as either version writes it; :class:`CardError` when it cannot be used.

    A card may list several endpoints: the JSON-RPC one of version 1.0 is preferred, then 0.3
    (a 0.3 card's ``url`` and ``protocolVersion``, or an interface of that version).
    """
    if not isinstance(data, dict):
        raise CardError(f"the agent card is a JSON {_kind(data)}, not an object")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise CardError("the agent card has no name")
    endpoints = _endpoints(data)
    if not endpoints:
        raise CardError(
            "the agent card names no JSON-RPC endpoint of A2A version 1.0 or 0.3 "
            "(supportedInterfaces, or url with protocolVersion)"
        )
    wire, url = min(endpoints, key=lambda e: 0 if e[0] is Wire.V1 else 1)
    if not url.startswith(("http://", "https://")):
        raise CardError(f"the agent card's endpoint is not an http(s) URL: {url[:200]!r}")
    capabilities = data.get("capabilities")
    streaming = isinstance(capabilities, dict) and capabilities.get("streaming") is True
    return Card(
        name=name.strip()[:200],
        description=str(data.get("description") or "")[:4000],
        url=url,
        wire=wire,
        streaming=streaming,
        skills=tuple(_skills(data.get("skills"))),
    )


def _endpoints(data: dict[str, Any]) -> list[tuple[Wire, str]]:
    """The card's JSON-RPC endpoints of a version probegate speaks: 1.0's interfaces, then
    0.3's ``url``."""
    endpoints: list[tuple[Wire, str]] = []
    interfaces = data.get("supportedInterfaces")
    if interfaces is not None and not isinstance(interfaces, list):
        raise CardError("the agent card's supportedInterfaces is not a list")
    for item in interfaces or []:
        if not isinstance(item, dict) or item.get("protocolBinding", JSONRPC) != JSONRPC:
            continue
        wire = _version(item.get("protocolVersion") or "1.0")
        if wire is not None and isinstance(item.get("url"), str):
            endpoints.append((wire, item["url"]))
    legacy_url = data.get("url")
    if isinstance(legacy_url, str) and data.get("preferredTransport", JSONRPC) == JSONRPC:
        wire = _version(data.get("protocolVersion") or "0.3")
        if wire is not None:
            endpoints.append((wire, legacy_url))
    return endpoints


def _skills(items: Any) -> Iterable[Skill]:
    for item in items[:MAX_ARTIFACTS] if isinstance(items, list) else []:
        if isinstance(item, dict):
            tags = item.get("tags")
            yield Skill(
                id=str(item.get("id") or ""),
                name=str(item.get("name") or ""),
                description=str(item.get("description") or ""),
                tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
            )


def card_json(
    *,
    name: str,
    description: str,
    url: str,
    skills: Iterable[Skill],
    wires: Iterable[Wire] = (Wire.V1, Wire.V03),
    version: str = "1.0.0",
) -> dict[str, Any]:
    """An agent card both versions read: 1.0's ``supportedInterfaces`` and 0.3's ``url`` and
    ``protocolVersion`` side by side (as the reference SDK serves one), for ``wires``."""
    served = list(dict.fromkeys(wires))
    card: dict[str, Any] = {
        "name": name,
        "description": description,
        "version": version,
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [
            {"id": s.id, "name": s.name, "description": s.description, "tags": list(s.tags)}
            for s in skills
        ],
        "supportedInterfaces": [
            {"url": url, "protocolBinding": JSONRPC, "protocolVersion": w.value} for w in served
        ],
    }
    if Wire.V03 in served:
        card.update({"url": url, "preferredTransport": JSONRPC, "protocolVersion": "0.3.0"})
    return card


# --------------------------------------------------------------------------- requests


def message_json(
    wire: Wire,
    text: str,
    *,
    message_id: str,
    context_id: str | None = None,
    task_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One user message with one text part."""
    message: dict[str, Any] = {"messageId": message_id}
    if wire is Wire.V1:
        message.update(role="ROLE_USER", parts=[{"text": text}])
    else:
        message.update(kind="message", role="user", parts=[{"kind": "text", "text": text}])
    if context_id:
        message["contextId"] = context_id
    if task_id:
        message["taskId"] = task_id
    if metadata:
        message["metadata"] = dict(metadata)
    return message


def send_request(
    wire: Wire, request_id: int | str, message: dict[str, Any], *, stream: bool
) -> dict[str, Any]:
    method = METHODS[wire]["stream" if stream else "send"]
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"message": message}}


def task_request(wire: Wire, request_id: int | str, job: str, task_id: str) -> dict[str, Any]:
    """``GetTask``/``CancelTask`` (``tasks/get``/``tasks/cancel``) of one task."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": METHODS[wire][job],
        "params": {"id": task_id},
    }


# --------------------------------------------------------------------------- reading replies


@dataclass
class Reply:
    """What an agent has said about one message so far: the task it made (if any), its
    state, and its words (a direct message, the task's status message and artifacts)."""

    task_id: str | None = None
    context_id: str | None = None
    state: State | None = None  # None: the agent answered with a message, not a task
    status: str = ""
    message: str = ""
    # artifact id -> its texts, in the order they came (an update may append to one)
    artifacts: dict[str, list[str]] = field(default_factory=dict)
    ended: bool = False  # a stream's event said nothing more follows (0.3 ``final``)

    @property
    def settled(self) -> bool:
        return self.state is None or self.state.settled

    def text(self) -> str:
        """The reply as the user would read it: the message, the status, then each artifact."""
        pieces = [self.message, self.status]
        pieces += ["\n".join(texts) for texts in self.artifacts.values()]
        seen: list[str] = []
        for piece in pieces:
            if piece and piece not in seen:
                seen.append(piece)
        return "\n\n".join(seen)


def part_text(part: Any) -> str:
    """One part as text: its text, its data as JSON, a file as its name and address."""
    if not isinstance(part, dict):
        return ""
    text = part.get("text")
    if isinstance(text, str):
        return text
    if "data" in part:
        return json.dumps(part["data"], sort_keys=True, ensure_ascii=False, default=str)
    nested = part.get("file")
    file: dict[str, Any] = nested if isinstance(nested, dict) else part
    name = str(file.get("name") or file.get("filename") or "file")
    where = file.get("uri") or file.get("url")
    if isinstance(where, str):
        return f"[file {name}: {where}]"
    if file.get("bytes") is not None or file.get("raw") is not None:
        return f"[file {name}]"
    return ""


def parts_text(parts: Any) -> str:
    if not isinstance(parts, list):
        return ""
    return "\n".join(t for t in (part_text(p) for p in parts[:MAX_PARTS]) if t)


def _event_kind(wire: Wire, item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(task|message|status|artifact, the object) of a send result or stream event."""
    if wire is Wire.V1:
        for key, kind in (
            ("task", "task"),
            ("message", "message"),
            ("statusUpdate", "status"),
            ("artifactUpdate", "artifact"),
        ):
            value = item.get(key)
            if isinstance(value, dict):
                return kind, value
        if "status" in item and "id" in item:  # GetTask answers the task itself
            return "task", item
        return "", item
    kinds = {"task": "task", "message": "message", "status-update": "status"}
    kinds["artifact-update"] = "artifact"
    return kinds.get(str(item.get("kind")), ""), item


def read_into(reply: Reply, wire: Wire, item: Any, what: str) -> None:
    """Fold one result (a send's, a GetTask's, or a stream event's) into ``reply``."""
    if not isinstance(item, dict):
        raise MalformedReply(f"{UNREADABLE}: {what} sent a JSON {_kind(item)} as a result")
    kind, value = _event_kind(wire, item)
    if not kind:
        raise MalformedReply(
            f"{UNREADABLE}: {what} sent a result that is no task, message or update "
            f"(A2A {wire.value}): {sorted(item)[:8]}"
        )
    _ids(reply, value, kind)
    if kind == "message":
        reply.message = parts_text(value.get("parts"))
        return
    if kind == "artifact":
        _artifact(reply, value.get("artifact"), append=value.get("append") is True)
        return
    status = value.get("status")
    if isinstance(status, dict):
        reply.state = state_of(status.get("state"))
        said = status.get("message")
        if isinstance(said, dict):
            reply.status = parts_text(said.get("parts"))
    if kind == "status" and value.get("final") is True:
        reply.ended = True
    if kind == "task":
        artifacts = value.get("artifacts")
        for artifact in artifacts[:MAX_ARTIFACTS] if isinstance(artifacts, list) else []:
            _artifact(reply, artifact, append=False)


def _ids(reply: Reply, value: dict[str, Any], kind: str) -> None:
    context = value.get("contextId")
    if isinstance(context, str) and context:
        reply.context_id = context
    task = value.get("id") if kind == "task" else value.get("taskId")
    if isinstance(task, str) and task and kind != "message":
        reply.task_id = task


def _artifact(reply: Reply, artifact: Any, *, append: bool) -> None:
    if not isinstance(artifact, dict):
        return
    key = str(artifact.get("artifactId") or f"#{len(reply.artifacts)}")
    if key not in reply.artifacts and len(reply.artifacts) >= MAX_ARTIFACTS:
        return
    text = parts_text(artifact.get("parts"))
    if append and key in reply.artifacts:
        reply.artifacts[key].append(text)
    else:
        reply.artifacts[key] = [text]
