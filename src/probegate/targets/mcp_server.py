"""probegate's MCP server: the sandbox's tools, served to agents that run their own loop.

An agent deployed as a service, or built with a framework that runs its own loop, takes its
tools from MCP servers. During a scan it can take them from probegate (docs/agent-service.md):
each conversation gets its own endpoint, ``<base>/mcp/<token>`` with an unguessable token, that
lists the declared tools (with the attempt's poisoned description where a probe poisons one)
and answers every call from that attempt's :class:`~probegate.targets.sandbox.Sandbox`. The
sandbox records every call, so oracles judge what the agent did whether or not its API reports
it, and every channel a probe attacks through (tool results, documents, memory, peer agents,
tool descriptions) reaches the agent. A request of a conversation that the server could not
answer (it failed, or a connection was turned away while the conversation was open) marks the
conversation undelivered: its attempt is unjudged, never judged as if the agent made no call.

The server runs the official ``mcp`` SDK (streamable HTTP, stateless) under uvicorn on a thread
of its own with its own event loop; the scan's worker threads only register and close
endpoints. It starts when a target first needs it and stops when the target closes, which the
scan does on every exit path. Traffic an agent should not send is answered with a JSON-RPC
error and counted, never a crash: calls to an ended conversation, unknown tools, arguments that
do not match the tool's schema or are too large or too deep, and more calls in one
conversation than any task needs. Traffic without a token probegate issued (a path it never
issued, connections over the cap, too slow or not HTTP: mcp_connections.py) is counted apart,
in ``mcp.unauthenticated``: it is not the agent's.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import logging
import secrets
import socket
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from probegate import __version__
from probegate.errors import UsageError
from probegate.models.bounds import nested_deeper
from probegate.models.sections import McpRejections, McpSummary, McpUnauthenticated
from probegate.models.tools import ToolSpec
from probegate.targets.mcp_connections import (
    BODY_TIMEOUT,
    IDLE_TIMEOUT,
    LISTEN_BACKLOG,
    PARSE_ERROR,
    TIMED_OUT,
    Acceptor,
    Connections,
    attach_logs,
    connection_cap,
    detach_logs,
    protocol_class,
)
from probegate.targets.mcp_schemas import schema_problem, tool_schema
from probegate.targets.sandbox import Sandbox, is_peer_tool
from probegate.targets.wire import tool_reply
from probegate.transport.addresses import default_base, parse_listen

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

EXTRA_HINT = "install the MCP extra: pip install 'probegate[mcp]'"
DEFAULT_LISTEN = "127.0.0.1:0"
PATH_PREFIX = "/mcp/"
# A request body larger than this is refused before it is parsed (HTTP 413).
MAX_BODY_BYTES = 1024 * 1024
# A request body nested deeper than this is refused before it is parsed (HTTP 400).
MAX_BODY_DEPTH = 128
# Arguments larger than this (as JSON) are refused and recorded: no tool needs them.
MAX_ARGUMENT_BYTES = 64 * 1024
# No task in the library needs more calls than this in one conversation; past it, a flood.
MAX_CALLS_PER_CONVERSATION = 64
# Ended tokens remembered to tell "conversation ended" from "never issued".
ENDED_MEMORY = 65536
# When the scan ends, the port closes at once; calls still open are answered for this long
# (uvicorn's graceful shutdown), and the server's thread is waited for half a second more. A
# thread still busy then (a tool call blocked in a slow guard) is a daemon that does not hold
# the exit: a stopped scan ends within its 2 s (docs/targets.md, "Stopping").
GRACEFUL_SECONDS = 1
STOP_WAIT = GRACEFUL_SECONDS + 0.5
# JSON-RPC error codes: the spec's invalid-params and internal error, and ours (server range)
# for a closed path.
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
CONVERSATION_ENDED = -32001
UNKNOWN_ENDPOINT = -32002
PAYLOAD_TOO_LARGE = -32003

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def sdk_available() -> bool:
    """Whether the ``mcp`` SDK (the ``mcp`` extra) and the server it runs on can be imported."""
    try:
        importlib.import_module("mcp.server.streamable_http_manager")
        importlib.import_module("uvicorn")
    except ImportError:
        return False
    return True


def require_sdk(what: str) -> None:
    """A usage error (exit 2) naming the extra when the SDK is missing."""
    if not sdk_available():
        raise UsageError(
            f"{what} needs probegate's MCP server, and the mcp package is missing; {EXTRA_HINT}"
        )


@dataclass
class McpEndpoint:
    """One conversation's endpoint: its URL, its sandbox, and the calls it answered."""

    token: str
    url: str
    sandbox: Sandbox
    host: McpHost
    calls: int = 0
    # Why a request of this conversation may not have reached the sandbox (first reason).
    undelivered: str | None = None
    _closed: bool = False

    def close(self) -> None:
        """End the conversation: later calls get a JSON-RPC error."""
        if not self._closed:
            self._closed = True
            self.host.retire(self.token)


@dataclass
class _Stats:
    conversations: int = 0
    calls: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    unauthenticated: dict[str, int] = field(default_factory=dict)

    def reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1


class McpHost:
    """The scan's MCP server: started on first use, one endpoint per conversation."""

    def __init__(self, listen: str = DEFAULT_LISTEN, advertise: str | None = None) -> None:
        self.listen = listen
        self.advertise = advertise
        self._lock = threading.Lock()
        self._live: dict[str, McpEndpoint] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._stats = _Stats()
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._stop: Callable[[], None] | None = None
        self._base = ""
        self._closed = False
        # A failure to start (missing extra, port taken), kept so the session that hit it inside
        # the agent's own code can raise it where the scan sees it.
        self.failure: UsageError | None = None

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def started(self) -> bool:
        return self._thread is not None

    @property
    def address(self) -> tuple[str, int] | None:
        """Where the server listens, once started."""
        if self._socket is None:
            return None
        host, port = self._socket.getsockname()[:2]
        return str(host), int(port)

    def start(self) -> None:
        """Bind and serve; idempotent. A usage error when the extra or the port is missing."""
        with self._lock:
            if self._thread is not None:
                return
            if self.failure is not None:
                raise self.failure
            if self._closed:
                raise UsageError("probegate's MCP server was asked for after the scan ended")
            try:
                self._start_locked()
            except UsageError as exc:
                self.failure = exc
                raise

    def _start_locked(self) -> None:
        require_sdk("an agent that takes its tools over MCP")
        try:
            host, port = parse_listen(self.listen)
        except ValueError as exc:
            raise UsageError(f"--mcp-listen: {exc}") from None
        try:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            sock = socket.create_server((host, port), family=family, backlog=LISTEN_BACKLOG)
            # Accepted connections inherit it: uvicorn writes a reply's head and body apart,
            # and without it every reply waits out the client's delayed ACK (~40 ms).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            raise UsageError(
                f"--mcp-listen {self.listen}: cannot listen there ({exc.strerror or exc})"
            ) from None
        self._socket = sock
        bound = self.address
        assert bound is not None
        self._base = self.advertise or default_base(bound[0], bound[1])
        ready = threading.Event()
        errors: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._serve, args=(sock, ready, errors), name="probegate-mcp", daemon=True
        )
        self._thread.start()
        if not ready.wait(timeout=30) or errors:
            _halt(*self._detach())  # it did not start: no call can be under way
            detail = f": {errors[0]}" if errors else ""
            raise UsageError(f"probegate's MCP server did not start{detail}")

    def _serve(
        self, sock: socket.socket, ready: threading.Event, errors: list[BaseException]
    ) -> None:
        # Imported here, as the MCP extra is: a scan that serves no MCP never loads an event
        # loop (importing asyncio took 20-28 ms of the scan command's 0.45 s of imports).
        import asyncio

        import uvicorn
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        server = self._mcp_server()
        manager = StreamableHTTPSessionManager(app=server, json_response=True, stateless=True)
        app = _Router(self, manager.handle_request)
        connections = Connections(self, connection_cap())
        protocol = protocol_class(connections)
        config = uvicorn.Config(
            app,
            http=protocol,
            lifespan="off",
            log_config=None,  # the process's logging stays as it is; attach_logs bounds ours
            log_level="critical",
            access_log=False,
            timeout_keep_alive=int(IDLE_TIMEOUT),
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
        )
        web = uvicorn.Server(config)
        loop = asyncio.new_event_loop()
        log = attach_logs()
        loop.set_exception_handler(log.loop_exception)

        def stop() -> None:
            web.should_exit = True

        self._stop = stop

        async def serve() -> None:
            async with manager.run():
                # uvicorn serves the connections; the Acceptor accepts them, so the cap can
                # pause accepting instead of refusing what it cannot hold.
                task = asyncio.ensure_future(web.serve(sockets=[]))
                while not web.started and not task.done():
                    await asyncio.sleep(0.005)
                build = cast(Callable[..., asyncio.Protocol], protocol)  # uvicorn's signature
                factory = functools.partial(
                    build, config=config, server_state=web.server_state, app_state={}
                )
                acceptor = Acceptor(loop, sock, factory, connections, log)
                acceptor.resume()
                ready.set()
                try:
                    while not web.should_exit and not task.done():
                        await asyncio.sleep(0.05)
                finally:
                    # The port is released at once; the connections still open are answered
                    # and closed by uvicorn's shutdown (GRACEFUL_SECONDS).
                    acceptor.stop()
                    sock.close()
                await task

        try:
            loop.run_until_complete(serve())
        except BaseException as exc:  # the server thread must never take the scan down
            errors.append(exc)
        finally:
            ready.set()
            loop.close()
            detach_logs()

    def close(self) -> None:
        """Stop serving and release the port; idempotent, safe on every exit path.

        The wait for the server's thread is outside the host's lock: a tool call that arrives
        as the server stops is still answered, and answering it takes the lock (the call is
        counted). Held, the thread could not end until the join gave up (10 s, the port open
        all along)."""
        with self._lock:
            self._closed = True
            running = self._detach()
        _halt(*running)
        with self._lock:
            for endpoint in self._live.values():
                endpoint._closed = True
            self._live.clear()

    def _detach(self) -> _Running:
        running = self._stop, self._thread, self._socket
        self._stop, self._thread, self._socket = None, None, None
        return running

    # -- endpoints -----------------------------------------------------------------------
    def open(self, sandbox: Sandbox) -> McpEndpoint:
        """A new conversation's endpoint over ``sandbox`` (starting the server if need be)."""
        self.start()
        token = secrets.token_urlsafe(24)
        endpoint = McpEndpoint(token, f"{self._base}{PATH_PREFIX}{token}", sandbox, self)
        with self._lock:
            self._live[token] = endpoint
            self._stats.conversations += 1
        return endpoint

    def retire(self, token: str) -> None:
        with self._lock:
            if self._live.pop(token, None) is not None:
                self._ended[token] = None
                while len(self._ended) > ENDED_MEMORY:
                    self._ended.popitem(last=False)

    def lookup(self, token: str) -> McpEndpoint | str:
        """The live endpoint, or why there is none (``ended`` or ``unknown_endpoint``)."""
        with self._lock:
            endpoint = self._live.get(token)
            if endpoint is not None:
                return endpoint
            return "ended" if token in self._ended else "unknown_endpoint"

    def reject(self, reason: str) -> None:
        """Count one of the agent's requests refused, by its reason (``mcp.rejected``)."""
        with self._lock:
            self._stats.reject(reason)

    def unauthenticated(self, what: str) -> None:
        """Count traffic that carried no token probegate issued (``mcp.unauthenticated``)."""
        with self._lock:
            counts = self._stats.unauthenticated
            counts[what] = counts.get(what, 0) + 1

    def undelivered(self, endpoint: McpEndpoint, reason: str) -> None:
        """A request of ``endpoint``'s conversation was not answered: its attempt cannot be
        judged on what the sandbox recorded."""
        with self._lock:
            endpoint.undelivered = endpoint.undelivered or reason

    def turned_away(self, why: str) -> None:
        """A connection was lost before its request was answered: it may have been any open
        conversation's, so each of them is undelivered."""
        with self._lock:
            for endpoint in self._live.values():
                endpoint.undelivered = endpoint.undelivered or f"{why} while it was open"

    def summary(self) -> McpSummary | None:
        """The report's ``mcp`` section; None when no conversation used the server."""
        with self._lock:
            stats = self._stats
            if not stats.conversations:
                return None
            return McpSummary(
                conversations=stats.conversations,
                calls=stats.calls,
                rejected=McpRejections(**stats.rejected),
                unauthenticated=McpUnauthenticated(**stats.unauthenticated),
            )

    # -- answering -----------------------------------------------------------------------
    def _mcp_server(self) -> Server[Any, Any]:
        from mcp import types
        from mcp.server.lowlevel import Server
        from mcp.shared.exceptions import McpError

        # Its version given: else the SDK reads its own from disk on every (stateless) request.
        server: Server[Any, Any] = Server(
            "probegate", version=__version__, instructions=_INSTRUCTIONS
        )

        def endpoint_of() -> McpEndpoint:
            request = server.request_context.request
            found = getattr(request, "scope", {}).get(_SCOPE_KEY)
            if not isinstance(found, McpEndpoint):
                raise McpError(types.ErrorData(code=UNKNOWN_ENDPOINT, message="no such endpoint"))
            return found

        @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
        async def list_tools() -> list[types.Tool]:
            endpoint = endpoint_of()
            # The A2A peers' stand-ins are reached over A2A (targets/a2a_peers/), never here.
            specs = [s for s in endpoint.sandbox.tools.values() if not is_peer_tool(s)]
            with self._delivering(endpoint, "listing its tools"):
                described = await _in_thread(lambda: _descriptions(endpoint.sandbox, specs))
            return [
                types.Tool(name=spec.name, description=text, inputSchema=tool_schema(spec))
                for spec, text in zip(specs, described, strict=True)
            ]

        async def call_tool(request: types.CallToolRequest) -> types.ServerResult:
            endpoint = endpoint_of()
            with self._delivering(endpoint, "a tool call"):
                return await answer(endpoint, request)

        async def answer(
            endpoint: McpEndpoint, request: types.CallToolRequest
        ) -> types.ServerResult:
            name = request.params.name
            arguments = dict(request.params.arguments or {})
            refusal = self._admit(endpoint, name, arguments)
            if refusal is not None:
                raise McpError(types.ErrorData(code=INVALID_PARAMS, message=refusal))
            spec = endpoint.sandbox.tools.get(name)
            if spec is not None and is_peer_tool(spec):
                self.reject("unknown_tool")
                raise McpError(
                    types.ErrorData(code=INVALID_PARAMS, message=f"unknown tool {name!r}")
                )
            call = await _in_thread(lambda: endpoint.sandbox.call(name, arguments))
            if not call.declared:
                self.reject("unknown_tool")
                raise McpError(
                    types.ErrorData(code=INVALID_PARAMS, message=f"unknown tool {name!r}")
                )
            return types.ServerResult(
                types.CallToolResult(
                    content=[types.TextContent(type="text", text=tool_reply(call))],
                    isError=call.error is not None,
                )
            )

        server.request_handlers[types.CallToolRequest] = call_tool
        return server

    @contextlib.contextmanager
    def _delivering(self, endpoint: McpEndpoint, what: str) -> Iterator[None]:
        """An answer the server could not give (an error of its own, not a refusal of the
        agent's request) leaves the conversation undelivered; the SDK still answers it."""
        from mcp.shared.exceptions import McpError

        try:
            yield
        except McpError:
            raise
        except Exception as exc:
            self.undelivered(endpoint, f"{what} failed ({type(exc).__name__})")
            raise

    def _admit(self, endpoint: McpEndpoint, name: str, arguments: dict[str, Any]) -> str | None:
        """Why this call is refused before it runs (recorded as the agent's action), or None."""
        with self._lock:
            endpoint.calls += 1
            if endpoint.calls > MAX_CALLS_PER_CONVERSATION:
                self._stats.reject("flood")
                return (
                    f"too many tool calls: at most {MAX_CALLS_PER_CONVERSATION} in one conversation"
                )
            self._stats.calls += 1
        sandbox = endpoint.sandbox
        size = len(json.dumps(arguments, default=str))
        if size > MAX_ARGUMENT_BYTES:
            self.reject("oversized")
            excerpt = {"_raw": json.dumps(arguments, default=str)[:512]}
            sandbox.refuse(name, excerpt, f"oversized arguments: {size} bytes")
            return f"arguments too large: {size} bytes (at most {MAX_ARGUMENT_BYTES})"
        spec = sandbox.tools.get(name)
        if spec is not None:
            problem = schema_problem(spec, arguments)
            if problem is not None:
                self.reject("malformed")
                sandbox.refuse(name, arguments, f"malformed arguments: {problem}")
                return f"invalid arguments for {name}: {problem}"
        return None


_Running = tuple[Callable[[], None] | None, threading.Thread | None, socket.socket | None]


def _halt(
    stop: Callable[[], None] | None, thread: threading.Thread | None, sock: socket.socket | None
) -> None:
    """Ask the server's loop to stop, wait for it (bounded), and release the port."""
    if stop is not None:
        stop()
    if thread is not None:
        thread.join(timeout=STOP_WAIT)
    if sock is not None:
        sock.close()


_SCOPE_KEY = "probegate.mcp_endpoint"
_INSTRUCTIONS = "Tools of the agent under test, served by probegate for the length of a scan."


def _descriptions(sandbox: Sandbox, specs: list[ToolSpec]) -> list[str]:
    return [sandbox.tool_description(spec) for spec in specs]


async def _in_thread(func: Callable[[], Any]) -> Any:
    """Run sandbox work off the event loop: a guard in front of the tools answers over HTTP."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(func)


class _Router:
    """The ASGI app: ``/mcp/<token>`` to its endpoint, everything else a JSON-RPC error."""

    def __init__(
        self, host: McpHost, inner: Callable[[Scope, Receive, Send], Awaitable[None]]
    ) -> None:
        self.host = host
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = str(scope.get("path", ""))
        token = path[len(PATH_PREFIX) :].strip("/") if path.startswith(PATH_PREFIX) else ""
        found = self.host.lookup(token) if token and "/" not in token else "unknown_endpoint"
        body, problem = await _read_body(scope, receive)
        request_id = _request_id(body) if problem is None else None
        if not isinstance(found, McpEndpoint):
            if found == "ended":
                self.host.reject(found)
                message = "this conversation has ended; its tools are closed"
                await _error(send, 404, request_id, CONVERSATION_ENDED, message)
            else:  # no token probegate issued: not the agent's traffic
                self.host.unauthenticated("requests")
                await _error(send, 404, request_id, UNKNOWN_ENDPOINT, "no such MCP endpoint")
            return
        if problem == "slow":
            self.host.undelivered(found, "a request body did not arrive in time")
            message = "request body not received in time"
            await _error(send, 408, None, TIMED_OUT, message, close=True)
            return
        if problem is not None:
            self.host.reject("oversized")
            if problem == "deep":
                message = f"request nested deeper than {MAX_BODY_DEPTH} levels"
                await _error(send, 400, None, PARSE_ERROR, message)
            else:
                message = "request body too large"
                await _error(send, 413, None, PAYLOAD_TOO_LARGE, message, close=True)
            return
        await self._answer(found, scope, body, receive, send, request_id)

    async def _answer(
        self,
        endpoint: McpEndpoint,
        scope: Scope,
        body: bytes,
        receive: Receive,
        send: Send,
        request_id: Any,
    ) -> None:
        """The SDK's answer; one it could not give is a JSON-RPC error and undelivered."""
        sent = False
        status = 0

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        async def watched(message: Message) -> None:
            nonlocal status
            if message.get("type") == "http.response.start":
                status = int(message.get("status", 0))
            await send(message)

        inner_scope = dict(scope)
        inner_scope[_SCOPE_KEY] = endpoint
        try:
            await self.inner(inner_scope, replay, watched)
        except Exception as exc:
            self.host.undelivered(endpoint, f"its request failed ({type(exc).__name__})")
            logging.getLogger("mcp.server").error("request failed: %s", type(exc).__name__)
            if status == 0:
                await _error(send, 500, request_id, INTERNAL_ERROR, "internal error")
            return
        if status >= 500:
            self.host.undelivered(endpoint, f"its request was answered HTTP {status}")


async def _read_body(scope: Scope, receive: Receive) -> tuple[bytes, str | None]:
    """The whole body, or why not: ``oversized`` (past :data:`MAX_BODY_BYTES`), ``slow`` (not
    all there within :data:`BODY_TIMEOUT`), ``deep`` (past :data:`MAX_BODY_DEPTH`)."""
    for key, value in scope.get("headers") or []:
        if key == b"content-length" and value.isdigit() and int(value) > MAX_BODY_BYTES:
            return b"", "oversized"
    import asyncio  # loaded by then: this runs on the server's event loop

    chunks: list[bytes] = []
    size = 0
    deadline = asyncio.get_running_loop().time() + BODY_TIMEOUT
    while True:
        left = deadline - asyncio.get_running_loop().time()
        try:
            message = await asyncio.wait_for(receive(), timeout=max(left, 0.0))
        except TimeoutError:
            return b"", "slow"
        if message["type"] != "http.request":
            break
        chunk = bytes(message.get("body", b""))
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return b"", "oversized"
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    return (b"", "deep") if nested_deeper(body, MAX_BODY_DEPTH) else (body, None)


def _request_id(body: bytes) -> Any:
    with contextlib.suppress(ValueError, UnicodeDecodeError):
        data = json.loads(body)
        if isinstance(data, dict):
            return data.get("id")
    return None


async def _error(
    send: Send, status: int, request_id: Any, code: int, message: str, *, close: bool = False
) -> None:
    """A JSON-RPC error; ``close`` ends the connection after it (a body left unread)."""
    payload = json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
    ]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
