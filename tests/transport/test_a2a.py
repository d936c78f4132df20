"""The A2A wire, both versions: cards, replies and requests read once, at the edge.

The shapes are the ones the official a2a-sdk 1.3 writes (its own server, 1.0 and 0.3 on one
endpoint); the end-to-end tests (tests/targets/test_a2a_*.py) speak to the SDK itself.
"""

from __future__ import annotations

from typing import Any

import pytest

from probegate.targets.a2a_peers import wire
from probegate.targets.a2a_peers.wire import RequestError, TaskView
from probegate.transport import a2a
from probegate.transport.a2a import CardError, Reply, RpcError, State, Wire
from probegate.transport.usage import MalformedReply

V1_CARD = {
    "name": "echo",
    "description": "echo agent",
    "supportedInterfaces": [
        {"url": "http://127.0.0.1:1/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ],
    "capabilities": {"streaming": True},
    "skills": [{"id": "echo", "name": "Echo", "description": "echoes", "tags": ["echo"]}],
}
V03_CARD = {
    "name": "old",
    "description": "",
    "url": "http://127.0.0.1:2/",
    "protocolVersion": "0.3.0",
    "preferredTransport": "JSONRPC",
    "capabilities": {},
}


def test_cards_of_either_version() -> None:
    card = a2a.read_card(V1_CARD)
    assert (card.wire, card.url, card.streaming) == (Wire.V1, "http://127.0.0.1:1/", True)
    assert [s.name for s in card.skills] == ["Echo"]
    old = a2a.read_card(V03_CARD)
    assert (old.wire, old.url, old.streaming) == (Wire.V03, "http://127.0.0.1:2/", False)
    # Both offered (as the SDK serves a 1.0 card with 0.3 fields): 1.0 is chosen.
    both = a2a.read_card({**V1_CARD, "url": "http://127.0.0.1:2/", "protocolVersion": "0.3"})
    assert both.wire is Wire.V1


@pytest.mark.parametrize(
    ("card", "said"),
    [
        ([], "not an object"),
        ({"description": "x"}, "no name"),
        ({"name": "x"}, "no JSON-RPC endpoint"),
        ({"name": "x", "supportedInterfaces": "all"}, "not a list"),
        ({"name": "x", "url": "http://h/", "protocolVersion": "2.0"}, "no JSON-RPC endpoint"),
        ({"name": "x", "url": "ftp://h/"}, r"not an http\(s\) URL"),
        (
            {"name": "x", "supportedInterfaces": [{"url": "http://h/", "protocolBinding": "GRPC"}]},
            "no JSON-RPC endpoint",
        ),
    ],
)
def test_a_card_that_cannot_be_used_says_why(card: Any, said: str) -> None:
    with pytest.raises(CardError, match=said):
        a2a.read_card(card)


def test_a_served_card_reads_back_and_lists_only_its_versions() -> None:
    skills = [a2a.Skill("s", "Skill", "does")]
    both = a2a.card_json(name="p", description="d", url="http://h/p", skills=skills)
    assert a2a.read_card(both).wire is Wire.V1 and both["protocolVersion"] == "0.3.0"
    old = a2a.card_json(name="p", description="d", url="http://h/p", skills=[], wires=[Wire.V03])
    assert a2a.read_card(old).wire is Wire.V03
    new = a2a.card_json(name="p", description="d", url="http://h/p", skills=[], wires=[Wire.V1])
    assert "url" not in new and a2a.read_card(new).wire is Wire.V1


def read(wire: Wire, *results: Any) -> Reply:
    reply = Reply()
    for result in results:
        a2a.read_into(reply, wire, result, "the agent")
    return reply


def test_replies_of_either_version() -> None:
    # What a1a-sdk 1.3 answered SendMessage with, trimmed.
    v1 = read(
        Wire.V1,
        {
            "task": {
                "id": "t1",
                "contextId": "c1",
                "status": {
                    "state": "TASK_STATE_COMPLETED",
                    "message": {"role": "ROLE_AGENT", "parts": [{"text": "done"}]},
                },
                "artifacts": [{"artifactId": "a", "parts": [{"text": "art"}, {"data": {"k": 1}}]}],
            }
        },
    )
    assert (v1.task_id, v1.context_id, v1.state) == ("t1", "c1", State.COMPLETED)
    assert v1.text() == 'done\n\nart\n{"k": 1}'
    v03 = read(
        Wire.V03,
        {
            "kind": "task",
            "id": "t2",
            "contextId": "c2",
            "status": {
                "state": "input-required",
                "message": {"kind": "message", "parts": [{"kind": "text", "text": "which order?"}]},
            },
        },
    )
    assert v03.state is State.INPUT_REQUIRED and v03.settled and v03.text() == "which order?"
    message = read(
        Wire.V03,
        {
            "kind": "message",
            "contextId": "c3",
            "parts": [{"kind": "file", "file": {"name": "r.pdf", "uri": "http://x.test/r.pdf"}}],
        },
    )
    assert message.state is None and message.settled
    assert message.text() == "[file r.pdf: http://x.test/r.pdf]" and message.task_id is None


def test_streamed_events_of_either_version_add_up() -> None:
    # The SDK's 1.0 stream: task submitted, working, an artifact, then completed.
    v1 = read(
        Wire.V1,
        {"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}},
        {
            "statusUpdate": {
                "taskId": "t",
                "contextId": "c",
                "status": {"state": "TASK_STATE_WORKING"},
            }
        },
        {
            "artifactUpdate": {
                "taskId": "t",
                "artifact": {"artifactId": "a", "parts": [{"text": "x"}]},
            }
        },
        {
            "artifactUpdate": {
                "taskId": "t",
                "append": True,
                "artifact": {"artifactId": "a", "parts": [{"text": "y"}]},
            }
        },
        {"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED"}}},
    )
    assert v1.state is State.COMPLETED and v1.text() == "x\ny"
    v03 = read(
        Wire.V03,
        {
            "kind": "status-update",
            "taskId": "t",
            "contextId": "c",
            "final": False,
            "status": {"state": "working"},
        },
        {"kind": "status-update", "taskId": "t", "final": True, "status": {"state": "failed"}},
    )
    assert v03.state is State.FAILED and v03.ended


@pytest.mark.parametrize("item", [[], "x", {"kind": "nothing"}, {"unexpected": {}}])
def test_a_result_that_is_no_task_or_message_is_malformed(item: Any) -> None:
    with pytest.raises(MalformedReply):
        read(Wire.V03 if isinstance(item, dict) and "kind" in item else Wire.V1, item)


def test_json_rpc_errors_are_transport_errors_and_some_are_fatal() -> None:
    with pytest.raises(RpcError, match=r"-32001 from the agent: Task not found") as found:
        a2a.rpc_result({"error": {"code": -32001, "message": "Task not found"}}, "the agent")
    assert not found.value.fatal
    with pytest.raises(RpcError, match="another A2A version") as version:
        a2a.rpc_result({"error": {"code": -32009, "message": "v"}}, "the agent")
    assert version.value.fatal
    with pytest.raises(MalformedReply):
        a2a.rpc_result({"jsonrpc": "2.0", "id": 1}, "the agent")


def test_requests_are_read_in_either_version() -> None:
    body = a2a.send_request(
        Wire.V1, 3, a2a.message_json(Wire.V1, "hi", message_id="m", context_id="c"), stream=True
    )
    request = wire.read_request(body)
    assert (request.wire, request.job, request.text, request.context_id) == (
        Wire.V1,
        "stream",
        "hi",
        "c",
    )
    old = wire.read_request(a2a.task_request(Wire.V03, 4, "get", "t9"))
    assert (old.wire, old.job, old.task_id, old.request_id) == (Wire.V03, "get", "t9", 4)
    for bad, code in (
        ([], a2a.INVALID_REQUEST),
        ({"jsonrpc": "1.0", "method": "SendMessage"}, a2a.INVALID_REQUEST),
        ({"jsonrpc": "2.0", "method": "Nope", "params": {}}, a2a.METHOD_NOT_FOUND),
        ({"jsonrpc": "2.0", "method": "SendMessage", "params": []}, a2a.INVALID_PARAMS),
        ({"jsonrpc": "2.0", "method": "GetTask", "params": {"id": 3}}, a2a.INVALID_PARAMS),
    ):
        with pytest.raises(RequestError) as refused:
            wire.read_request(bad)
        assert refused.value.code == code


@pytest.mark.parametrize("version", list(Wire))
@pytest.mark.parametrize(
    "state", [State.COMPLETED, State.INPUT_REQUIRED, State.FAILED, State.WORKING]
)
def test_what_a_peer_sends_reads_back_the_same(version: Wire, state: State) -> None:
    view = TaskView("t", "c", state, "" if state is State.WORKING else "the reply", "a", "q", "m")
    whole = read(version, wire.send_result(version, view))
    streamed = read(version, *wire.stream_results(version, view))
    for reply in (whole, streamed):
        assert (reply.task_id, reply.context_id, reply.state) == ("t", "c", state)
        assert reply.text() == ("" if state is State.WORKING else "the reply")
    assert streamed.settled == (state is not State.WORKING)
