"""The wire protocol of a runtime guard (docs/guard.md): GuardEvents out, Verdicts in.

Pure functions and models, no I/O, so every rule here is testable without a server.

Events. probegate stands where a deployment's enforcement point stands, so it reports what a
model-call loop would: content *going into* the model (the user's or a peer agent's message, a
tool's result, the tool definitions) as a ``step/request`` and what the model *asked for* (a
tool call, the reply text) as a ``step/response``. Payloads use the ``canonical`` shape of the
1.0 GuardEvent schema (``{messages, tools?}`` for requests, ``{text?, tool_calls?}`` for
responses), so a runtime applies its input policies (prompt injection) to inputs and its
output policies (leaks, unsafe actions) to outputs. Each event carries only the content that
is new at that point, so a verdict is about that content alone and a block names it.

Paths. Every text in an event is *registered* under its payload path
(``payload.messages.0.content``, ``payload.tool_calls.0.arguments.body``): findings,
``unjudged`` entries, ``modifications.spans`` and ``continuation.paths`` name these paths, and
a span whose path was never registered is unresolvable and counted, never guessed at.

Verdicts are validated once, at the edge, against the reference Verdict schema
(``data/verdict.schema.v1.0.json``) before :class:`GuardVerdict` reads them: a verdict without
``event_id``, ``provider`` or a finding's ``category``, with an unknown severity or decision, a
negative offset, or a malformed span is a :class:`VerdictError`, and the attempt it concerned
is unjudged with that reason, never enforced as if it were a decision. The later revision's
fields (``continuation``, ``timing``, ``obligations``) are accepted on top of 1.0, and other
unknown top-level keys are ignored, because that revision says an older enforcement point
ignores a key it does not know (docs/guard.md).

Events carry exactly the schema's required fields unless the configuration asks for the
optional ``integration`` or ``session_hint``: the reference runtime refuses any key it was not
set up to expect with ``400 invalid_event``.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from probegate import __version__
from probegate.models.transcript import GuardFinding, GuardStage, walk_strings
from probegate.models.verdict import SUBJECT_MAX
from probegate.validation import describe, field_path

if TYPE_CHECKING:
    import jsonschema

MAX_FINDINGS_KEPT = 10
INTEGRATION = f"probegate/{__version__}"
STEP_REQUEST_STAGES: frozenset[GuardStage] = frozenset({"tools", "input", "tool_result"})
MESSAGE_PATH = "payload.messages.0.content"
TEXT_PATH = "payload.text"
# The parameters of a tool that declares none, as a tool definition must carry some.
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
# The GuardEvent's optional top-level fields probegate can fill in honestly, sent only when the
# configuration asks for them (``target.guard_optional_fields``). ``connection`` is left out:
# probegate's pooled HTTP client has no one connection an event could name.
OptionalField = Literal["integration", "session_hint"]
REASON_MAX = 200


class GuardIdentity(BaseModel):
    """The identity fields of every GuardEvent sent to the guard (``target.guard_identity``).

    A runtime resolves its policy by ``agent_id``; set these to what your deployed agent
    asserts so the scan meets the policy production traffic meets. Empty means "no assertion".
    """

    model_config = ConfigDict(extra="forbid")

    agent_id: str = ""
    agent_type: str = ""
    agent_workspace: str = ""
    agent_user: str = ""


class VerdictError(Exception):
    """The guard's 200 answer is not a Verdict."""


class _Lenient(BaseModel):
    # The schema has already judged the shape (closed where the reference closes it); what is
    # left is a newer revision's top-level key, which an older enforcement point ignores.
    model_config = ConfigDict(extra="ignore")


class VerdictFinding(_Lenient):
    category: str
    severity: str | None = None
    path: str | None = None
    start: int | None = Field(default=None, ge=0)
    end: int | None = Field(default=None, ge=0)
    score: float | None = None
    detector: str | None = None
    fp: str | None = None
    whitelisted: bool = False
    subject: str | None = None


class Span(_Lenient):
    path: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    replacement: str


class Modifications(_Lenient):
    spans: list[Span] = Field(default_factory=list)


class Continuation(_Lenient):
    """How to say no to an agent loop: a rendering, never a decision (docs/guard.md)."""

    style: str = ""
    paths: list[str] = Field(default_factory=list)
    notice: str | None = None


class Timing(_Lenient):
    received_at: datetime | None = None
    responded_at: datetime | None = None

    def handler_ms(self) -> float | None:
        """responded_at - received_at: the runtime's whole handler, on its own clock."""
        if self.received_at is None or self.responded_at is None:
            return None
        if (self.received_at.tzinfo is None) != (self.responded_at.tzinfo is None):
            return None
        return (self.responded_at - self.received_at).total_seconds() * 1000.0


class GuardVerdict(_Lenient):
    """The runtime's one composed decision about one GuardEvent."""

    event_id: str
    provider: str
    decision: Literal["allow", "block"]
    latency_ms: float | None = Field(default=None, ge=0)
    findings: list[VerdictFinding] = Field(default_factory=list)
    modifications: Modifications | None = None
    unjudged: list[str] = Field(default_factory=list)
    continuation: Continuation | None = None
    timing: Timing | None = None
    obligations: list[Any] = Field(default_factory=list)

    @property
    def spans(self) -> list[Span]:
        return self.modifications.spans if self.modifications is not None else []

    @property
    def notice(self) -> str | None:
        notice = self.continuation.notice if self.continuation is not None else None
        if notice is None or not notice.strip():
            return None
        return notice.strip()

    def kept_findings(self) -> list[GuardFinding]:
        """The findings as stored in the transcript: bounded in number and subject length."""
        kept = []
        for f in self.findings[:MAX_FINDINGS_KEPT]:
            subject = f.subject[:SUBJECT_MAX] if f.subject is not None else None
            kept.append(GuardFinding(**{**f.model_dump(), "subject": subject}))
        return kept


# The later revision's fields, as docs/guard.md describes them, added to the 1.0 schema.
_NEWER_FIELDS: dict[str, Any] = {
    "continuation": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "style": {"type": "string"},
            "paths": {"type": "array", "items": {"type": "string"}},
            "notice": {"type": "string"},
        },
    },
    "timing": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "received_at": {"type": "string"},
            "responded_at": {"type": "string"},
        },
    },
    "obligations": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["type"],
            "properties": {"type": {"type": "string"}},
        },
    },
}


@cache
def _verdict_validator() -> jsonschema.Draft202012Validator:
    """The reference schema as shipped, plus the newer fields; other top-level keys pass."""
    text = resources.files("probegate.targets.guard").joinpath("data/verdict.schema.v1.0.json")
    schema = json.loads(text.read_text(encoding="utf-8"))
    schema["properties"] = {**schema["properties"], **_NEWER_FIELDS}
    schema["additionalProperties"] = True
    import jsonschema  # only a scan behind a guard reads its verdicts

    return jsonschema.Draft202012Validator(schema)


def _schema_reason(error: jsonschema.ValidationError) -> str:
    """``field.path[0].name: reason``, worded as every reader words it; never the guard's text."""
    loc = tuple(p for p in error.absolute_path)
    expected: Any = error.validator_value
    instance: Any = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        missing = next((str(k) for k in expected if k not in instance), "?")
        return f"{field_path((*loc, missing))}: required field missing"
    where = field_path(loc) or "verdict"
    if error.validator == "enum":
        return f"{where}: not one of {', '.join(str(v) for v in expected)}"
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        schema: Any = error.schema
        known = set(schema.get("properties", {})) if isinstance(schema, dict) else set()
        unknown = ", ".join(sorted(str(k) for k in instance if k not in known))
        return f"{where}: unknown field {unknown[:60]}"
    if error.validator in ("minimum", "maximum", "minLength", "pattern", "type"):
        return f"{where}: fails {error.validator} {expected!r}"[:REASON_MAX]
    return f"{where}: fails {error.validator}"


def parse_verdict(data: Any) -> GuardVerdict:
    """Validate a 200 body as a Verdict; :class:`VerdictError` with a short reason otherwise."""
    if not isinstance(data, dict):
        raise VerdictError(f"the guard's answer is not a Verdict (JSON {type(data).__name__})")
    errors = sorted(
        _verdict_validator().iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]
    )
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise VerdictError(
            f"the guard's answer is not a valid Verdict: {_schema_reason(errors[0])}{more}"
        )
    try:
        return GuardVerdict.model_validate(data)
    except ValidationError as exc:
        problem = describe(exc, top="verdict")
        raise VerdictError(f"the guard's answer is not a valid Verdict: {problem}") from None


# --- events ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GuardEvent:
    """One event ready to send, and the texts it registered by payload path."""

    body: dict[str, Any]
    registered: dict[str, str]

    @property
    def kind(self) -> str:
        return str(self.body["kind"])


def new_id() -> str:
    """A fresh opaque id (step ids, session hints): never reused, as the schema requires."""
    return uuid.uuid4().hex


def optional_fields(wanted: frozenset[OptionalField], *, session_hint: str) -> dict[str, str]:
    """The optional top-level fields the configuration asked for, with their values."""
    values: dict[OptionalField, str] = {"integration": INTEGRATION, "session_hint": session_hint}
    return {name: values[name] for name in sorted(wanted)}


def make_event(
    stage: GuardStage,
    payload: dict[str, Any],
    registered: dict[str, str],
    *,
    identity: GuardIdentity,
    step_id: str,
    optional: Mapping[str, str] | None = None,
) -> GuardEvent:
    """A GuardEvent with the 1.0 schema's required keys, plus only the optional ones asked for.

    The object is closed, and the reference runtime refuses even the schema's optional keys
    unless it expects them, so nothing is sent that the configuration did not ask for.
    """
    body: dict[str, Any] = {
        "kind": "step/request" if stage in STEP_REQUEST_STAGES else "step/response",
        "step_id": step_id,
        "agent_id": identity.agent_id,
        "agent_type": identity.agent_type,
        "agent_workspace": identity.agent_workspace,
        "agent_user": identity.agent_user,
        "llm_protocol": "canonical",
        "payload": payload,
        **(optional or {}),
    }
    return GuardEvent(body, registered)


class StepIds:
    """One ``step_id`` per model call, as the protocol pairs a call's two halves by it.

    The guard sees crossings, not model calls, so the call is inferred from their order: what
    goes *into* the model (the tool definitions, the message, tool results) opens a step, and
    what comes *out* (tool calls, the reply) belongs to the step whose input came last. An
    agent loop that knows where a model reply starts says so (:meth:`model_reply`), so the
    several calls of one reply keep that reply's step even though each call's result, sent in
    between, already opens the next one. A new user turn always starts a new step.
    """

    def __init__(self) -> None:
        self._id: str | None = None
        self._side: Literal["request", "response"] | None = None
        self._reply: str | None = None
        self._turned = False

    def request(self) -> str:
        """The step of content going into the model: the next call's, opened if need be."""
        if self._id is None or self._side != "request":
            self._id = new_id()
            self._side = "request"
        return self._id

    def response(self) -> str:
        """The step of what the model asked for: the reply's, or the last opened call's."""
        if self._reply is not None:
            return self._reply
        if self._id is None or self._side is None:
            self._id = new_id()
        self._side = "response"
        return self._id

    def model_reply(self) -> None:
        """A model call has just answered; what it asks for belongs to its step."""
        if self._id is None or self._side != "request":
            self._id = new_id()  # a call whose input never crossed the guard
        self._side = "response"
        self._reply = self._id

    def new_turn(self) -> None:
        """A new message from the user or a peer: whatever follows is a new model call.

        Only the first turn joins a step already open: the tool definitions an agent read
        when its session opened go to the model with the first message.
        """
        self._reply = None
        if self._turned:
            self._side = None
        self._turned = True


def message_payload(
    text: str, *, role: str = "user", name: str | None = None, tool_call_id: str | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """A message about to reach the model: the user's, a peer agent's, or a tool's result."""
    message: dict[str, Any] = {"role": role, "content": text}
    if name:
        message["name"] = name
    if tool_call_id is not None:
        message["tool_call_id"] = tool_call_id
    return {"messages": [message]}, {MESSAGE_PATH: text}


def tools_payload(
    tools: list[tuple[str, str, dict[str, Any]]],
) -> tuple[dict[str, Any], dict[str, str]]:
    """The tool definitions the model is given (name, description, JSON schema)."""
    defs = []
    registered = {}
    for i, (name, description, parameters) in enumerate(tools):
        defs.append(
            {
                "type": "function",
                "function": {"name": name, "description": description, "parameters": parameters},
            }
        )
        registered[f"payload.tools.{i}.function.description"] = description
    return {"messages": [], "tools": defs}, registered


def tool_call_payload(
    call_id: str, name: str, arguments: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """One tool call the model asked for; each string argument is registered by its path."""
    base = "payload.tool_calls.0.arguments"
    registered = dict(walk_strings(arguments, base, scalars=False))
    payload = {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}
    return payload, registered


def text_payload(text: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The model's reply text, before it reaches the user."""
    return {"text": text}, {TEXT_PATH: text}


# --- enforcement -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rewrite:
    """The registered texts after applying a verdict's spans, and how many did not resolve."""

    texts: dict[str, str]
    applied: int
    unresolved: int

    @property
    def changed(self) -> bool:
        return self.applied > 0


def apply_spans(registered: dict[str, str], spans: list[Span]) -> Rewrite:
    """Apply ``modifications.spans`` to the registered texts, right to left per text.

    Offsets are code points into the text as sent. A span is unresolvable when its path was
    not registered, its range falls outside the text or is reversed, or it overlaps another
    span on the same text; it is counted and skipped, never guessed at, because a misplaced
    replacement would corrupt the content rather than redact it.
    """
    texts = dict(registered)
    unresolved = 0
    by_path: dict[str, list[Span]] = {}
    for span in spans:
        text = registered.get(span.path)
        if text is None or span.start > span.end or span.end > len(text):
            unresolved += 1
            continue
        by_path.setdefault(span.path, []).append(span)
    applied = 0
    for path, items in by_path.items():
        items.sort(key=lambda s: (s.start, s.end))
        accepted: list[Span] = []
        for span in items:
            if accepted and span.start < accepted[-1].end:
                unresolved += 1
                continue
            accepted.append(span)
        text = texts[path]
        for span in reversed(accepted):
            text = text[: span.start] + span.replacement + text[span.end :]
            applied += 1
        texts[path] = text
    return Rewrite(texts, applied, unresolved)


def rewritten_arguments(arguments: dict[str, Any], texts: dict[str, str]) -> dict[str, Any]:
    """The call's arguments with each registered string replaced by its rewritten text."""
    out = copy.deepcopy(arguments)
    base = "payload.tool_calls.0.arguments."
    for path, text in texts.items():
        if not path.startswith(base):
            continue
        parts = path[len(base) :].split(".")
        node: Any = out
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        last = parts[-1]
        if isinstance(node, list):
            node[int(last)] = text
        else:
            node[last] = text
    return out


def names_position(paths: list[str], position: str) -> bool:
    """Whether ``continuation.paths`` name ``position`` (itself or a path inside it)."""
    return any(p == position or p.startswith(position + ".") for p in paths)


# The protocol's own example names a dropped call by its provider path (openai.chat response).
_PROVIDER_CALL = "payload.choices.0.message.tool_calls.0"


def drops_the_call(verdict: GuardVerdict) -> bool:
    """A block rendered as ``drop_calls`` that names the one call this event carried."""
    c = verdict.continuation
    if c is None or c.style != "drop_calls":
        return False
    return names_position(c.paths, "payload.tool_calls.0") or names_position(
        c.paths, _PROVIDER_CALL
    )


def withholds_the_result(verdict: GuardVerdict) -> bool:
    """A block rendered as ``withhold`` that names the one tool result this event carried."""
    c = verdict.continuation
    if c is None or c.style != "withhold":
        return False
    return names_position(c.paths, "payload.messages.0")
