"""One conversation through the guard: every crossing asked about, every guard verdict enforced.

The session stands where a deployment's enforcement point stands. Five things cross it (the
user's or a peer's message, the tool definitions, each tool call, each tool result, the reply),
and each goes through the same sequence, :meth:`GuardSession._screen`: ask the guard, and on a
block render the refusal (the agent's turn ends, the call is dropped, or the result withheld),
otherwise apply the verdict's spans; then record what was done. The crossings differ only in
what they send and in how the rewritten text is put back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from probegate.clock import pinned
from probegate.models.causes import Cause
from probegate.models.tools import ToolSpec
from probegate.models.transcript import (
    GuardAction,
    GuardCheck,
    GuardStage,
    ToolCall,
    Turn,
    TurnGuard,
)
from probegate.targets.base import Session
from probegate.targets.guard.client import GuardClient
from probegate.targets.guard.events import (
    EMPTY_SCHEMA,
    MESSAGE_PATH,
    STEP_REQUEST_STAGES,
    TEXT_PATH,
    GuardIdentity,
    GuardVerdict,
    OptionalField,
    Rewrite,
    StepIds,
    apply_spans,
    drops_the_call,
    make_event,
    message_payload,
    new_id,
    optional_fields,
    rewritten_arguments,
    text_payload,
    tool_call_payload,
    tools_payload,
    withholds_the_result,
)
from probegate.targets.guard.stats import GuardStats
from probegate.targets.sandbox import Execute, Sandbox
from probegate.transport.limiter import BudgetExhausted, RequestLimiter
from probegate.transport.usage import TransportError, Usage

REFUSED_BY_GUARD = "refused by guard"
# Defaults when the verdict carries no notice. The agent reads them, so they state the refusal
# and nothing that reads as an instruction to act.
INPUT_REFUSAL = "This message was refused by a security policy and was not passed to the agent."
ANSWER_REFUSAL = "This request was refused by a security policy; the action was not carried out."
WITHHELD = "[withheld by a security policy: this content was not shown to the agent]"
NOT_RUN = "not executed: the agent's turn had already ended at a guard refusal"
_NOT_EXECUTED: frozenset[GuardAction] = frozenset({"dropped", "answered", "not_run"})

Payload = tuple[dict[str, Any], dict[str, str]]


def _answer(verdict: GuardVerdict) -> GuardAction:
    """The rendering of any block that names no narrower one: the refusal becomes the reply."""
    return "answered"


def _drop_or_answer(verdict: GuardVerdict) -> GuardAction:
    return "dropped" if drops_the_call(verdict) else "answered"


def _withhold_or_answer(verdict: GuardVerdict) -> GuardAction:
    return "withheld" if withholds_the_result(verdict) else "answered"


@dataclass(frozen=True)
class Screened:
    """The guard's verdict on one crossing and what was done with it."""

    verdict: GuardVerdict
    action: GuardAction
    # The registered texts after the verdict's spans; None when the content was blocked.
    rewrite: Rewrite | None

    @property
    def blocked(self) -> bool:
        return self.rewrite is None

    def text(self, path: str) -> str:
        assert self.rewrite is not None, "a blocked crossing has no text to pass on"
        return self.rewrite.texts[path]


@dataclass
class _TurnState:
    """What the guard did during one ``send``: turn-level checks and whether the turn ended."""

    checks: list[GuardCheck] = field(default_factory=list)
    ended: str | None = None  # the refusal that became the reply


class GuardSession:
    """One conversation with the agent behind the guard; also the sandbox's tool screen."""

    def __init__(
        self,
        client: GuardClient,
        stats: GuardStats,
        identity: GuardIdentity,
        sandbox: Sandbox,
        limiter: RequestLimiter,
        optional: frozenset[OptionalField] = frozenset(),
    ) -> None:
        self.client = client
        self.stats = stats
        self.identity = identity
        self.optional = optional_fields(optional, session_hint=new_id())
        self.sandbox = sandbox
        self.limiter = limiter
        self.inner: Session | None = None
        self.own = Usage()
        self._steps = StepIds()
        self._turn = _TurnState()
        self._failure: TransportError | BudgetExhausted | None = None
        self._descriptions: dict[str, str] | None = None
        self._session_refusal: str | None = None
        self._calls = 0

    @property
    def usage(self) -> Usage:
        """The agent's usage plus the guard's requests, so budgets see both."""
        inner = self.inner.usage if self.inner is not None else Usage()
        return Usage(
            requests=inner.requests + self.own.requests,
            prompt_tokens=inner.prompt_tokens,
            completion_tokens=inner.completion_tokens,
            cost_usd=inner.cost_usd,
        )

    @usage.setter
    def usage(self, value: Usage) -> None:
        # The Session protocol's attribute is settable; what can be set is the guard's part.
        self.own = value

    def close(self) -> None:
        if self.sandbox.screen is self:
            self.sandbox.screen = None
        if self.inner is not None:
            self.inner.close()

    # -- messages ------------------------------------------------------------------------
    def send(self, message: Turn) -> Turn:
        if self.inner is None:
            raise TransportError("guard session used before it was opened", cause=Cause.GUARD)
        # Checks made while the session was opened (tool definitions) belong to this turn.
        self._turn = _TurnState(checks=self._turn.checks)
        self._steps.new_turn()
        if self._failure is not None:
            raise self._failure
        if self._session_refusal is not None:
            return self._finish(Turn(role="assistant"), ended=self._session_refusal)
        forwarded = message
        if message.content.strip():
            name = message.name if message.role == "agent" else None
            screened = self._screen(
                "input",
                message_payload(message.content, name=name),
                self._turn.checks,
                refusal=INPUT_REFUSAL,
            )
            if screened.blocked:
                return self._finish(Turn(role="assistant"), ended=self._turn.ended)
            if screened.action == "modified":
                forwarded = message.model_copy(update={"content": screened.text(MESSAGE_PATH)})
        try:
            reply = self.inner.send(forwarded)
        except (TransportError, BudgetExhausted):
            # An agent that wraps errors (python targets) must not disguise why it stopped.
            if self._failure is not None:
                raise self._failure from None
            raise
        if self._failure is not None:
            # Raised inside the agent's own code and swallowed there: still could not look.
            raise self._failure
        return self._finish(reply, ended=self._turn.ended)

    def _finish(self, reply: Turn, *, ended: str | None) -> Turn:
        """Refused calls out of the actions, the reply screened, the verdicts attached."""
        refused = [c for c in reply.tool_calls if _not_executed(c)]
        kept = [c for c in reply.tool_calls if not _not_executed(c)]
        content = reply.content
        if ended is not None:
            content = ended
        elif content.strip():
            screened = self._screen("output", text_payload(content), self._turn.checks)
            if screened.blocked:
                content = self._turn.ended or ANSWER_REFUSAL
            else:
                content = screened.text(TEXT_PATH)
        checks, self._turn.checks = self._turn.checks, []
        return reply.model_copy(
            update={
                "content": content,
                "tool_calls": kept,
                "guard": TurnGuard(checks=checks, refused_calls=refused),
            }
        )

    # -- the tool screen (sandbox hook) --------------------------------------------------
    def model_reply(self) -> None:
        self._steps.model_reply()

    def screen_description(self, tool: ToolSpec, description: str) -> str:
        if self._failure is not None:
            raise self._failure
        if self._descriptions is None:
            self._descriptions = self._screen_tools()
        return self._descriptions.get(tool.name, description)

    def _screen_tools(self) -> dict[str, str]:
        """All tool definitions in one ``step/request`` event, as a model call carries them."""
        tools = list(self.sandbox.tools.values())
        texts = [self.sandbox.unscreened_description(t) for t in tools]
        definitions = [
            (t.name, text, t.parameters or EMPTY_SCHEMA)
            for t, text in zip(tools, texts, strict=True)
        ]
        screened = self._screen("tools", tools_payload(definitions), self._turn.checks)
        if screened.blocked:
            # Every model call of this conversation carries these definitions: all are refused.
            self._session_refusal = self._turn.ended
            return {t.name: text for t, text in zip(tools, texts, strict=True)}
        return {
            t.name: screened.text(f"payload.tools.{i}.function.description")
            for i, t in enumerate(tools)
        }

    def screen_call(self, name: str, arguments: dict[str, Any], execute: Execute) -> ToolCall:
        if self._failure is not None:
            raise self._failure
        call_id = f"call_guarded_{self._calls}"
        self._calls += 1
        declared = name in self.sandbox.tools
        if self._turn.ended is not None:
            check = GuardCheck(stage="tool_call", decision=None, action="not_run")
            self.stats.enforced("tool_call", "not_run", None)
            return ToolCall(
                id=call_id,
                name=name,
                arguments=arguments,
                error=NOT_RUN,
                declared=declared,
                guard=[check],
            )
        checks: list[GuardCheck] = []
        screened = self._screen(
            "tool_call",
            tool_call_payload(call_id, name, arguments),
            checks,
            on_block=_drop_or_answer,
        )
        if screened.blocked:
            notice = screened.verdict.notice
            dropped = screened.action == "dropped" and notice
            return ToolCall(
                id=call_id,
                name=name,
                arguments=arguments,
                error=f"{REFUSED_BY_GUARD}: {notice}" if dropped else REFUSED_BY_GUARD,
                declared=declared,
                guard=checks,
            )
        if screened.action == "modified" and screened.rewrite is not None:
            arguments = rewritten_arguments(arguments, screened.rewrite.texts)
        call = self._screen_result(execute(name, arguments), checks)
        return call.model_copy(update={"guard": checks})

    def _screen_result(self, call: ToolCall, checks: list[GuardCheck]) -> ToolCall:
        """What the agent reads back: a result or an error text, both carry indirect attacks."""
        text = call.result if call.error is None else call.error
        if not text or not text.strip():
            return call
        screened = self._screen(
            "tool_result",
            message_payload(text, role="tool", name=call.name, tool_call_id=call.id),
            checks,
            on_block=_withhold_or_answer,
        )
        if screened.blocked:
            return call.model_copy(
                update={"result": screened.verdict.notice or WITHHELD, "error": None}
            )
        if screened.action != "modified":
            return call
        new = screened.text(MESSAGE_PATH)
        return call.model_copy(update={"result": new} if call.error is None else {"error": new})

    # -- asking the guard ----------------------------------------------------------------
    def _screen(
        self,
        stage: GuardStage,
        content: Payload,
        into: list[GuardCheck],
        *,
        on_block: Callable[[GuardVerdict], GuardAction] = _answer,
        refusal: str = ANSWER_REFUSAL,
    ) -> Screened:
        """Ask about one crossing, enforce the verdict, record the check into ``into``.

        A block rendered as an answer ends the agent's turn: its refusal (the verdict's notice,
        else ``refusal``) becomes the reply, and later calls in the turn are not run.
        """
        payload, registered = content
        verdict = self._evaluate(stage, payload, registered)
        if verdict.decision == "block":
            action = on_block(verdict)
            if action == "answered":
                self._turn.ended = verdict.notice or refusal
            self._record(stage, verdict, action, None, into)
            return Screened(verdict, action, None)
        rewrite = apply_spans(registered, verdict.spans)
        action = "modified" if rewrite.changed else "passed"
        self._record(stage, verdict, action, rewrite, into)
        return Screened(verdict, action, rewrite)

    def _evaluate(
        self, stage: GuardStage, payload: dict[str, Any], registered: dict[str, str]
    ) -> GuardVerdict:
        """One verdict, or the attempt's end: a guard that could not look did not protect."""
        steps = self._steps
        step_id = steps.request() if stage in STEP_REQUEST_STAGES else steps.response()
        event = make_event(
            stage,
            payload,
            registered,
            identity=self.identity,
            step_id=step_id,
            optional=self.optional,
        )
        try:
            verdict, round_trip = self.client.evaluate(event, self.limiter, self.own)
        except TransportError as exc:
            self.stats.failure(stage, exc.reason)
            self._failure = exc
            raise
        except BudgetExhausted as exc:
            self._failure = exc
            raise
        self.stats.verdict(stage, verdict, round_trip)
        if verdict.decision == "allow" and verdict.unjudged:
            shown = ", ".join(verdict.unjudged[:3])
            failure = TransportError(
                f"guard: the verdict allows {stage} content it could not judge ({shown}); "
                "a guard that could not look did not protect",
                cause=Cause.GUARD,
            )
            self.stats.failure(stage, failure.reason, verdict_less=False)
            self._failure = failure
            raise failure
        return verdict

    def _record(
        self,
        stage: GuardStage,
        verdict: GuardVerdict,
        action: GuardAction,
        rewrite: Rewrite | None,
        into: list[GuardCheck],
    ) -> None:
        self.stats.enforced(stage, action, rewrite)
        into.append(
            GuardCheck(
                stage=stage,
                decision=verdict.decision,
                action=action,
                event_id=verdict.event_id,
                findings=verdict.kept_findings(),
                spans_applied=rewrite.applied if rewrite is not None else 0,
                spans_unresolved=rewrite.unresolved if rewrite is not None else 0,
                unjudged=list(verdict.unjudged),
                notice=verdict.notice,
                # A pinned clock (SOURCE_DATE_EPOCH) promises identical bytes: no timings.
                latency_ms=None if pinned() else verdict.latency_ms,
            )
        )


def _not_executed(call: ToolCall) -> bool:
    """A call the guard refused (or never let run): not an action the agent took."""
    return any(c.stage == "tool_call" and c.action in _NOT_EXECUTED for c in call.guard or ())
