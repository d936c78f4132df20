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

Verdicts are parsed once, at the edge, into :class:`GuardVerdict` (the guard's answer, not an
attempt's verdict): both the 1.0 schema's shape and the newer fields (``continuation``,
``timing``, ``obligations``) are accepted,
unknown keys are ignored (a newer runtime may add more), and anything that is not a verdict
(no ``decision``, a finding with a negative offset) is a :class:`VerdictError`.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from probegate import __version__
from probegate.models.transcript import GuardFinding, GuardStage, walk_strings
from probegate.models.verdict import SUBJECT_MAX
from probegate.validation import describe

MAX_FINDINGS_KEPT = 10
INTEGRATION = f"probegate/{__version__}"
STEP_REQUEST_STAGES: frozenset[GuardStage] = frozenset({"tools", "input", "tool_result"})
MESSAGE_PATH = "payload.messages.0.content"
TEXT_PATH = "payload.text"
# The parameters of a tool that declares none, as a tool definition must carry some.
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


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
    # Unknown keys are ignored: "the runtime adapts to the body it receives" cuts both ways,
    # and a newer runtime's extra fields must not make a good verdict unreadable.
    model_config = ConfigDict(extra="ignore")


class VerdictFinding(_Lenient):
    category: str = ""
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

    event_id: str = ""
    provider: str = ""
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


def parse_verdict(data: Any) -> GuardVerdict:
    """Validate a 200 body as a Verdict; :class:`VerdictError` with a short reason otherwise."""
    if not isinstance(data, dict):
        raise VerdictError(f"the guard's answer is not a Verdict (JSON {type(data).__name__})")
    try:
        return GuardVerdict.model_validate(data)
    except ValidationError as exc:
        problem = describe(exc, top="verdict")
        raise VerdictError(f"the guard's answer is not a Verdict: {problem}") from None


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


def make_event(
    stage: GuardStage,
    payload: dict[str, Any],
    registered: dict[str, str],
    *,
    identity: GuardIdentity,
    step_id: str,
    session_hint: str,
) -> GuardEvent:
    """A GuardEvent with exactly the 1.0 schema's top-level keys (the object is closed)."""
    body: dict[str, Any] = {
        "kind": "step/request" if stage in STEP_REQUEST_STAGES else "step/response",
        "step_id": step_id,
        "agent_id": identity.agent_id,
        "agent_type": identity.agent_type,
        "agent_workspace": identity.agent_workspace,
        "agent_user": identity.agent_user,
        "llm_protocol": "canonical",
        "payload": payload,
        "integration": INTEGRATION,
        "session_hint": session_hint,
    }
    return GuardEvent(body, registered)


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
