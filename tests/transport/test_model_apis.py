"""The model APIs' shapes, read back by the official SDKs and by a second reading.

What probegate writes in a model API's name (the harmless end of turn the proxy answers in
place of a stopped reply, streamed or not) is read by the ``openai`` and ``anthropic`` SDKs
themselves; what it reads (whole replies and streams) is checked against the loopback server
of tests/servers/model_apis.py, written from the APIs' documentation on its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from probegate.transport.model_apis import APIS, CHAT, MESSAGES, RESPONSES, ModelApi, ToolDecl
from probegate.transport.sse import SseEvent, encode_events, parse_events
from probegate.transport.usage import MalformedReply
from tests.servers.base import Handler, LoopbackServer
from tests.servers.model_apis import reply_json, reply_stream

SAID = "[stopped: safe mode]"
SERVER_API = {
    "openai-chat": "chat",
    "openai-responses": "responses",
    "anthropic-messages": "messages",
}


class _Canned(Handler):
    def do_POST(self) -> None:
        server: CannedServer = self.owner
        body = self.read_json()
        stream = isinstance(body, dict) and body.get("stream") is True
        kind = "text/event-stream" if stream else "application/json"
        self.send_raw(200, server.api.end_of_turn(SAID, "m", stream=stream), content_type=kind)


class CannedServer(LoopbackServer):
    """Answers every request with ``api``'s end of turn, in the form asked for."""

    handler = _Canned

    def __init__(self, api: ModelApi) -> None:
        super().__init__()
        self.api = api


@pytest.fixture
def canned(request: pytest.FixtureRequest) -> Iterator[CannedServer]:
    with CannedServer(request.param) as server:
        yield server


@pytest.mark.parametrize("canned", [CHAT], indirect=True)
def test_the_openai_sdk_reads_a_chat_end_of_turn(canned: CannedServer) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=canned.url + "/v1", api_key="k", max_retries=0)
    whole = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert whole.choices[0].message.content == SAID and not whole.choices[0].message.tool_calls
    chunks = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == SAID


@pytest.mark.parametrize("canned", [RESPONSES], indirect=True)
def test_the_openai_sdk_reads_a_responses_end_of_turn(canned: CannedServer) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=canned.url + "/v1", api_key="k", max_retries=0)
    assert client.responses.create(model="m", input="x").output_text == SAID
    with client.responses.stream(model="m", input="x") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == SAID and final.output_text == SAID


@pytest.mark.parametrize("canned", [MESSAGES], indirect=True)
def test_the_anthropic_sdk_reads_a_messages_end_of_turn(canned: CannedServer) -> None:
    from anthropic import Anthropic

    client = Anthropic(base_url=canned.url, api_key="k", max_retries=0)
    message = client.messages.create(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
    )
    assert [b.type for b in message.content] == ["text"] and message.content[0].text == SAID
    assert message.stop_reason == "end_turn"
    with client.messages.stream(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
    ) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == SAID and final.stop_reason == "end_turn"


CALLS = [
    {
        "id": "call_1",
        "type": "function",
        "function": {"name": "send_email", "arguments": '{"to": "a@b.test", "body": "hi"}'},
    },
    {"id": "call_2", "type": "function", "function": {"name": "recall", "arguments": "{}"}},
]


@pytest.mark.parametrize("name", list(APIS))
@pytest.mark.parametrize("stream", [False, True])
def test_replies_read_the_same_whole_and_streamed(name: str, stream: bool) -> None:
    """Text, both parallel calls with their ids and arguments, and the tokens, either way."""
    api = APIS[name]
    whole = reply_json(SERVER_API[name], "m", "Let me check.", CALLS)
    reply = (
        api.parse_events(parse_events(reply_stream(SERVER_API[name], whole)))
        if stream
        else (api.parse(whole))
    )
    assert reply.text == "Let me check."
    assert [c.name for c in reply.tool_calls] == ["send_email", "recall"]
    first = reply.tool_calls[0].arguments
    assert (first if isinstance(first, dict) else json.loads(first)) == {
        "to": "a@b.test",
        "body": "hi",
    }
    assert reply.tool_calls[0].id.endswith("call_1")
    assert (reply.prompt_tokens, reply.completion_tokens) == (100, 20)
    assert reply.calls_made == 2


@pytest.mark.parametrize("stream", [False, True])
def test_every_choices_tool_calls_are_read(stream: bool) -> None:
    """``n: 2``: the text is the first choice's, the calls every choice's, in choice order
    (the second choice listed first, as an upstream may)."""
    first = {"role": "assistant", "content": "Here you go.", "tool_calls": CALLS[1:]}
    second = {"role": "assistant", "content": None, "tool_calls": CALLS[:1]}
    choices = [
        {"index": 1, "message": second, "finish_reason": "tool_calls"},
        {"index": 0, "message": first, "finish_reason": "tool_calls"},
    ]
    if not stream:
        reply = CHAT.parse({"choices": choices})
    else:
        chunks = [{"choices": [{"index": c["index"], "delta": c["message"]}]} for c in choices]
        for chunk in chunks:
            for index, call in enumerate(chunk["choices"][0]["delta"]["tool_calls"]):
                call["index"] = index
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        reply = CHAT.parse_events([SseEvent("message", json.dumps(c)) for c in chunks])
    assert reply.text == "Here you go."
    assert [(c.id, c.name) for c in reply.tool_calls] == [
        ("call_2", "recall"),
        ("call_1", "send_email"),
    ]
    assert reply.calls_made == 2


@pytest.mark.parametrize("name", list(APIS))
def test_the_proxy_side_finds_what_a_request_carries(name: str) -> None:
    """System prompt, tool declarations, tool results and user texts, in each API's request."""
    api = APIS[name]
    history: list[Any] = api.user_items("hello")
    reply = api.parse(reply_json(SERVER_API[name], "m", None, CALLS[:1]))
    history += api.reply_items(reply, reply.tool_calls)
    history += api.result_items([(reply.tool_calls[0], "sent", False)])
    decl = ToolDecl("send_email", "Send mail.", {"type": "object", "properties": {}})
    body = api.request(model="m", system="Be kind.", history=history, tools=[decl], params={})
    api.plant(body, "PLANTED")
    assert api.user_texts(body) == ["hello"]
    (tool,) = api.declared_tools(body)
    assert tool["name"] == "send_email" and tool["description"] == "Send mail."
    (slot,) = api.tool_results(body)
    assert slot.call_id == reply.tool_calls[0].id and slot.text == "sent"
    slot.replace("the probe's document")
    assert api.tool_results(body)[0].text == "the probe's document"
    system = {
        "openai-chat": lambda: body["messages"][0]["content"],
        "openai-responses": lambda: body["instructions"],
        "anthropic-messages": lambda: body["system"],
    }[name]()
    assert system == "Be kind.\n\nPLANTED"


def test_events_round_trip_and_odd_streams_parse() -> None:
    raw = encode_events([("a", {"x": 1}), (None, "line one\nline two"), (None, "[DONE]")])
    events = parse_events(raw)
    assert [(e.event, e.data) for e in events] == [
        ("a", '{"x":1}'),
        ("message", "line one\nline two"),
        ("message", "[DONE]"),
    ]
    odd = b"\xef\xbb\xbf: comment\r\nid: 7\r\nevent: e\r\ndata:tight\r\n\r\ndata: \r\n\r\n"
    assert [(e.event, e.data) for e in parse_events(odd)] == [("e", "tight"), ("message", "")]


_KEYS = [
    "choices", "delta", "message", "tool_calls", "function", "index", "id", "name",
    "arguments", "content", "usage", "type", "finish_reason", "output", "item",
    "content_block", "text", "input", "stop_reason", "error", "response",
]  # fmt: skip
# Any JSON value at all, as a hostile or broken endpoint may send it in place of a reply or a
# stream's chunk; and the same, shaped like one (the keys each API reads, values of any type).
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4)
    ),
    max_leaves=12,
)


_REPLY = st.dictionaries(st.sampled_from(_KEYS), _JSON, max_size=4) | _JSON


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(APIS)), st.lists(_REPLY, min_size=1, max_size=3), st.booleans())
@example("openai-chat", [{"choices": 5}], True)
@example("openai-chat", [{"choices": [{"delta": {"tool_calls": 7}}]}], True)
def test_no_reply_however_shaped_breaks_the_reader(
    name: str, values: list[Any], streamed: bool
) -> None:
    """A reply is read or is an unreadable reply (a MalformedReply, which retries and leaves
    the attempt unjudged); never another exception, which would end the scan with a traceback."""
    api = APIS[name]
    try:
        if streamed:
            events = [SseEvent(_event_name(v), json.dumps(v)) for v in values]
            api.parse_events(events)
        else:
            api.parse(values[0])
    except MalformedReply:
        pass


def _event_name(value: Any) -> str:
    """An event's name as the Messages and Responses streams set it: the chunk's type."""
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else ""
