"""probegate's A2A peers: the agents an agent under test calls, served by the scan, hostile.

Each conversation probegate holds with the agent gets its own endpoint,
``<base>/a2a/<token>/<peer>`` with an unguessable token, for each declared peer
(config.py): the peer's agent card at ``/.well-known/agent-card.json`` (and the older
``agent.json``) below it, and JSON-RPC at it, in A2A 1.0 and 0.3 (transport/a2a.py). What a
peer says is the attempt's: its card is the declared one with the probe's ``peer_agents``
fixture over it (a spoofed name, description or skill), its answer to every message is the
sandbox's answer to a call of the peer's delegation tool (the probe's ``agent_replies``), in
the state the fixture says (completed, input-required, failed, or working for ever). Every
message the agent sends a peer is recorded in the sandbox as a call of that tool, so the
oracles judge it with the agent's other actions, and a secret sent to a peer is a finding.

Per attempt, :class:`PeerRecord` says whether the probe's peer payload reached the agent: a
card or an answer that carried it was fetched. Until the scan records delivery per attempt
(docs/scoring.md), it is kept here (:meth:`PeerHost.record`) and shown by the tests.

A request of a conversation that the server failed to answer marks the conversation
undelivered, as the MCP server does: its attempt is unjudged, never judged as if the agent had
called no peer. Traffic an agent should not send is answered with a JSON-RPC error and
counted (``rejected``): an ended conversation, a peer or task it does not have, a malformed or
oversized request, more messages in one conversation than any task needs. Traffic without a
token probegate issued is counted apart (``unauthenticated``): it is not the agent's.
"""

from __future__ import annotations

import json
import secrets
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from probegate.errors import UsageError
from probegate.models.sections import McpUnauthenticated, PeerRejections, PeersSummary
from probegate.models.tools import ToolSpec
from probegate.targets.a2a_peers import wire
from probegate.targets.a2a_peers.config import PeerConfig, peer_tool
from probegate.targets.a2a_peers.server import (
    PARSE_ERROR,
    PAYLOAD_TOO_LARGE,
    TIMED_OUT,
    HttpAnswer,
    HttpRequest,
    Listener,
    rpc_error_bytes,
)
from probegate.targets.a2a_peers.wire import TaskView
from probegate.targets.sandbox import Sandbox
from probegate.transport import a2a
from probegate.transport.a2a import State
from probegate.transport.addresses import default_base, parse_listen
from probegate.transport.sse import CONTENT_TYPE, encode_events

DEFAULT_LISTEN = "127.0.0.1:0"
PATH_PREFIX = "/a2a/"
# No task in the library needs more messages to peers than this in one conversation.
MAX_MESSAGES_PER_CONVERSATION = 64
ENDED_MEMORY = 65536
# JSON-RPC codes of ours (server range), as the MCP server's.
CONVERSATION_ENDED = -32010
UNKNOWN_ENDPOINT = -32011
TOO_MANY = -32012
_CARD_PATHS = (a2a.CARD_PATH, a2a.LEGACY_CARD_PATH)


@dataclass(frozen=True)
class PeerDelivery:
    """Whether an attempt's peer payload reached the agent, and if not, why (in words)."""

    delivered: bool
    cause: str | None = None


@dataclass
class PeerRecord:
    """What the agent fetched from the peers in one attempt (all its conversations)."""

    # The attempt's probe puts something on the peers (a card, a reply, a state).
    offered: bool
    cards: dict[str, int] = field(default_factory=dict)
    messages: dict[str, int] = field(default_factory=dict)
    # What the agent was served that carried the probe's fixture ("card of billing", ...).
    carried: list[str] = field(default_factory=list)

    def delivery(self) -> PeerDelivery | None:
        """None when the probe puts nothing on the peers; else whether it reached the agent."""
        if not self.offered:
            return None
        if self.carried:
            return PeerDelivery(True)
        if not self.cards and not self.messages:
            return PeerDelivery(False, "the agent never called probegate's A2A peers")
        read = ", ".join(sorted({*self.cards, *self.messages}))
        return PeerDelivery(
            False, f"the agent called the A2A peer {read}, not the one that carried the attack"
        )


@dataclass
class _Task:
    peer: str
    view: TaskView


@dataclass
class PeerEndpoint:
    """One conversation's peers: their URLs, its sandbox, what it asked them."""

    token: str
    base: str  # <base>/a2a/<token>
    sandbox: Sandbox
    host: PeerHost
    messages: int = 0
    tasks: dict[str, _Task] = field(default_factory=dict)
    # Why a request of this conversation may not have been answered (first reason).
    undelivered: str | None = None
    _closed: bool = False

    def url(self, peer: str | None = None) -> str:
        """The peer's base URL (its card is below it); the first peer's without a name."""
        return f"{self.base}/{peer or self.host.first}"

    def urls(self) -> dict[str, str]:
        return {name: self.url(name) for name in self.host.peers}

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.host.retire(self.token)


@dataclass
class _Stats:
    conversations: int = 0
    cards: int = 0
    messages: int = 0
    tasks: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    unauthenticated: dict[str, int] = field(default_factory=dict)


class PeerHost:
    """The scan's A2A peers: started on first use, one set of endpoints per conversation."""

    def __init__(
        self,
        peers: Sequence[PeerConfig],
        listen: str = DEFAULT_LISTEN,
        advertise: str | None = None,
    ) -> None:
        if not peers:
            raise ValueError("a PeerHost serves at least one peer")
        self.peers = {p.name: p for p in peers}
        self.first = peers[0].name
        self.listen = listen
        self.advertise = advertise
        self._tools = {p.name: peer_tool(p) for p in peers}
        self._lock = threading.Lock()
        self._live: dict[str, PeerEndpoint] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._records: weakref.WeakKeyDictionary[Sandbox, PeerRecord] = weakref.WeakKeyDictionary()
        self._stats = _Stats()
        self._listener: Listener | None = None
        self._base = ""
        self._closed = False
        self.failure: UsageError | None = None

    def tools(self) -> list[ToolSpec]:
        """The delegation tools that stand for the peers in the agent's tool list."""
        return list(self._tools.values())

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def address(self) -> tuple[str, int] | None:
        return self._listener.address if self._listener is not None else None

    def start(self) -> None:
        """Bind and serve; idempotent. A usage error when the address cannot be listened on."""
        with self._lock:
            if self._listener is not None:
                return
            if self.failure is not None:
                raise self.failure
            if self._closed:
                raise UsageError("probegate's A2A peers were asked for after the scan ended")
            try:
                try:
                    host, port = parse_listen(self.listen)
                except ValueError as exc:
                    raise UsageError(f"--a2a-listen: {exc}") from None
                what = f"--a2a-listen {self.listen}"
                self._listener = Listener(host, port, self.handle, self.refusal, self, what=what)
            except UsageError as exc:
                self.failure = exc
                raise
            bound = self._listener.address
            self._base = self.advertise or default_base(bound[0], bound[1])

    def close(self) -> None:
        """Stop serving and release the port; idempotent, safe on every exit path."""
        with self._lock:
            self._closed = True
            listener, self._listener = self._listener, None
            for endpoint in self._live.values():
                endpoint._closed = True
            self._live.clear()
        if listener is not None:
            listener.close()

    # -- conversations -------------------------------------------------------------------
    def open(self, sandbox: Sandbox) -> PeerEndpoint:
        """A new conversation's peers over ``sandbox`` (starting the server if need be)."""
        self.start()
        token = secrets.token_urlsafe(24)
        endpoint = PeerEndpoint(token, f"{self._base}{PATH_PREFIX}{token}", sandbox, self)
        with self._lock:
            self._live[token] = endpoint
            self._stats.conversations += 1
            if sandbox not in self._records:
                self._records[sandbox] = PeerRecord(offered=self._offered(sandbox))
        return endpoint

    def retire(self, token: str) -> None:
        with self._lock:
            if self._live.pop(token, None) is not None:
                self._ended[token] = None
                while len(self._ended) > ENDED_MEMORY:
                    self._ended.popitem(last=False)

    def record(self, sandbox: Sandbox) -> PeerRecord | None:
        """What the agent fetched from the peers in the attempt ``sandbox`` serves."""
        with self._lock:
            return self._records.get(sandbox)

    def summary(self) -> PeersSummary | None:
        """The report's ``peers`` section; None when no conversation opened the peers."""
        with self._lock:
            stats = self._stats
            if not stats.conversations:
                return None
            return PeersSummary(
                conversations=stats.conversations,
                cards=stats.cards,
                messages=stats.messages,
                tasks=stats.tasks,
                rejected=PeerRejections(**stats.rejected),
                unauthenticated=McpUnauthenticated(**stats.unauthenticated),
            )

    def unauthenticated(self, what: str) -> None:
        with self._lock:
            counts = self._stats.unauthenticated
            counts[what] = counts.get(what, 0) + 1

    def _reject(self, reason: str) -> None:
        with self._lock:
            self._stats.rejected[reason] = self._stats.rejected.get(reason, 0) + 1

    def _offered(self, sandbox: Sandbox) -> bool:
        fixtures = sandbox.fixtures
        if fixtures.agent_replies or fixtures.peer_agents:
            return True
        return any(sandbox.supplies(tool) for tool in self._tools.values())

    # -- answering -----------------------------------------------------------------------
    def _route(self, path: str) -> tuple[PeerEndpoint | str, str, str]:
        """(the endpoint or why none, the peer's name, the rest of the path)."""
        path = urlsplit(path).path
        if not path.startswith(PATH_PREFIX):
            return "unknown_endpoint", "", ""
        token, _, rest = path[len(PATH_PREFIX) :].partition("/")
        peer, _, tail = rest.partition("/")
        with self._lock:
            endpoint = self._live.get(token)
            if endpoint is None:
                return ("ended" if token in self._ended else "unknown_endpoint"), peer, tail
        return endpoint, peer, ("/" + tail if tail else "")

    def refusal(self, path: str, problem: str) -> HttpAnswer:
        """The answer to a request whose body could not be read (too large, slow, too deep)."""
        found, _peer, _rest = self._route(path)
        if not isinstance(found, PeerEndpoint):
            self.unauthenticated("requests")
            return HttpAnswer(
                404, rpc_error_bytes(UNKNOWN_ENDPOINT, "no such A2A peer"), close=True
            )
        if problem == "slow":
            with self._lock:
                found.undelivered = found.undelivered or "a request body did not arrive in time"
            return HttpAnswer(
                408, rpc_error_bytes(TIMED_OUT, "request body not received in time"), close=True
            )
        self._reject("oversized")
        if problem == "oversized":
            return HttpAnswer(
                413, rpc_error_bytes(PAYLOAD_TOO_LARGE, "request body too large"), close=True
            )
        return HttpAnswer(400, rpc_error_bytes(PARSE_ERROR, "request nested too deep"))

    def handle(self, request: HttpRequest) -> HttpAnswer:
        found, name, rest = self._route(request.path)
        if not isinstance(found, PeerEndpoint):
            if found == "ended":
                self._reject("ended")
                message = "this conversation has ended; its peers are gone"
                return HttpAnswer(404, rpc_error_bytes(CONVERSATION_ENDED, message))
            self.unauthenticated("requests")
            return HttpAnswer(404, rpc_error_bytes(UNKNOWN_ENDPOINT, "no such A2A peer"))
        peer = self.peers.get(name)
        if peer is None:
            self._reject("unknown_peer")
            return HttpAnswer(404, rpc_error_bytes(UNKNOWN_ENDPOINT, f"no A2A peer {name[:64]!r}"))
        try:
            if request.method == "GET" and rest in _CARD_PATHS:
                return self._card(found, peer)
            if request.method == "POST" and rest in ("", "/"):
                return self._rpc(found, peer, request.body)
        except Exception as exc:
            with self._lock:
                found.undelivered = found.undelivered or f"a peer failed ({type(exc).__name__})"
            raise
        self._reject("malformed")
        return HttpAnswer(404, rpc_error_bytes(a2a.METHOD_NOT_FOUND, "no such A2A route"))

    def _card(self, endpoint: PeerEndpoint, peer: PeerConfig) -> HttpAnswer:
        """The peer's card: the declared one, with the attempt's ``peer_agents`` over it."""
        sandbox = endpoint.sandbox
        fixture = sandbox.fixtures.peer(peer.name)
        tool = self._tools[peer.name]
        extra = sandbox.fixtures.tool_descriptions.get(tool.name)
        extra = extra or sandbox.fixtures.tool_descriptions.get("delegation")
        description = (
            fixture.description if fixture and fixture.description else None
        ) or peer.description
        skills = list(peer.card_skills())
        if fixture is not None:
            skills += [
                a2a.Skill(id=f"skill-{i}", name=s.name, description=s.description)
                for i, s in enumerate(fixture.skills, start=1)
            ]
        card = a2a.card_json(
            name=(fixture.name if fixture and fixture.name else None) or peer.name,
            description=f"{description} {extra}" if extra else description,
            url=endpoint.url(peer.name),
            skills=skills,
            wires=peer.wires(),
        )
        carried = bool(fixture is not None and fixture.texts()) or bool(extra)
        self._note(endpoint, peer.name, card=True, carried=carried)
        served = json.dumps(card)
        sandbox.handed(served)
        return HttpAnswer(200, served.encode())

    def _note(self, endpoint: PeerEndpoint, name: str, *, card: bool, carried: bool) -> None:
        with self._lock:
            record = self._records.get(endpoint.sandbox)
            if card:
                self._stats.cards += 1
            if record is None:
                return
            table = record.cards if card else record.messages
            table[name] = table.get(name, 0) + 1
            if carried:
                record.carried.append(f"{'card' if card else 'reply'} of {name}")

    def _rpc(self, endpoint: PeerEndpoint, peer: PeerConfig, body: bytes) -> HttpAnswer:
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            self._reject("malformed")
            return HttpAnswer(200, rpc_error_bytes(PARSE_ERROR, "not JSON"))
        try:
            request = wire.read_request(data)
            if request.wire not in peer.wires():
                raise wire.RequestError(
                    a2a.METHOD_NOT_FOUND,
                    f"this agent speaks A2A {', '.join(w.value for w in peer.wires())}",
                    request.request_id,
                )
            view = self._answer(endpoint, peer, request)
        except wire.RequestError as exc:
            self._reject("flood" if exc.code == TOO_MANY else "malformed")
            return HttpAnswer(200, rpc_error_bytes(exc.code, str(exc), exc.request_id))
        version = request.wire
        if request.job == "stream":
            results = wire.stream_results(version, view)
            events = [(None, wire.response(request.request_id, e)) for e in results]
            return HttpAnswer(200, encode_events(events), content_type=CONTENT_TYPE)
        if request.job == "send":
            result = wire.send_result(version, view)
        else:
            result = wire.task_json(version, view)
        return HttpAnswer(200, json.dumps(wire.response(request.request_id, result)).encode())

    def _answer(self, endpoint: PeerEndpoint, peer: PeerConfig, request: wire.Request) -> TaskView:
        """The task a request is answered with (a new or continued one, or one asked about)."""
        with self._lock:
            known = endpoint.tasks.get(request.task_id or "")
        if known is not None and known.peer != peer.name:
            known = None
        if request.job in ("get", "cancel"):
            if known is None:
                raise wire.RequestError(a2a.TASK_NOT_FOUND, "task not found", request.request_id)
            if request.job == "cancel" and not known.view.state.terminal:
                known.view = _with(known.view, state=State.CANCELED, text="")
            return known.view
        if request.task_id and known is None:
            raise wire.RequestError(a2a.TASK_NOT_FOUND, "task not found", request.request_id)
        return self._message(endpoint, peer, request, known)

    def _message(
        self, endpoint: PeerEndpoint, peer: PeerConfig, request: wire.Request, known: _Task | None
    ) -> TaskView:
        sandbox = endpoint.sandbox
        tool = self._tools[peer.name]
        with self._lock:
            endpoint.messages += 1
            flood = endpoint.messages > MAX_MESSAGES_PER_CONVERSATION
            self._stats.messages += 1
        arguments = {"agent": peer.name, "message": request.text}
        if flood:
            sandbox.refuse(tool.name, arguments, "too many messages to peers in one conversation")
            raise wire.RequestError(
                TOO_MANY,
                f"too many messages: at most {MAX_MESSAGES_PER_CONVERSATION} in one conversation",
                request.request_id,
            )
        call = sandbox.call(tool.name, arguments)
        fixture = sandbox.fixtures.peer(peer.name)
        state = State(fixture.state) if fixture is not None else State.COMPLETED
        if known is not None and known.view.state.interrupted:
            state = State.COMPLETED  # the peer got what it asked for
        text = call.result or ""
        if call.error is not None:
            state, text = State.FAILED, call.error
        continued = known is not None and not known.view.state.terminal
        view = TaskView(
            task_id=known.view.task_id if known is not None and continued else _new_id("task"),
            context_id=request.context_id or (known.view.context_id if known else _new_id("ctx")),
            state=state,
            text="" if state is State.WORKING else text,
            artifact_id=_new_id("artifact"),
            request_text=request.text,
            request_message_id=request.message_id,
        )
        with self._lock:
            endpoint.tasks[view.task_id] = _Task(peer.name, view)
        carried = sandbox.supplies(tool) or (fixture is not None and state is not State.COMPLETED)
        self._note(endpoint, peer.name, card=False, carried=carried)
        with self._lock:
            self._stats.tasks += 1
        return view


def _new_id(kind: str) -> str:
    return f"{kind}-{secrets.token_hex(8)}"


def _with(view: TaskView, *, state: State, text: str) -> TaskView:
    return TaskView(
        view.task_id,
        view.context_id,
        state,
        text,
        view.artifact_id,
        view.request_text,
        view.request_message_id,
    )
