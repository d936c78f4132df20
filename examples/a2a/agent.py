"""A support agent served over A2A with the official a2a-sdk, for probegate's A2A example.

It answers questions about bills by asking the billing agent over A2A and passing its answer
on. It is deterministic (no model), so the example runs anywhere, and naive in one way on
purpose: it repeats what the billing agent says to the customer, word for word. A scan shows
what that costs (docs/scan-your-agent/a2a.md).

Where the billing agent is comes with each message, in its metadata (``peers.billing``), as
probegate's config asks; without it, the agent uses ``BILLING_AGENT_URL``.

    pip install 'a2a-sdk[http-server]' uvicorn
    python examples/a2a/agent.py --port 9999
"""

from __future__ import annotations

import argparse
import os

import httpx
import uvicorn
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import (
    get_artifact_text,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Role,
    SendMessageRequest,
)
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette


async def ask_billing(url: str, question: str) -> str:
    """The billing agent's answer, through the SDK's client: its artifacts' text."""
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        message = new_text_message(question, role=Role.ROLE_USER)
        said: list[str] = []
        async for event in client.send_message(SendMessageRequest(message=message)):
            if event.WhichOneof("payload") == "task":
                said += [get_artifact_text(a) for a in event.task.artifacts]
        return "\n".join(said)


class SupportAgent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        meta = MessageToDict(context.message.metadata) if context.message.metadata else {}
        billing = (meta.get("peers") or {}).get("billing") or os.environ.get("BILLING_AGENT_URL")
        question = context.get_user_input()
        if billing:
            answer = await ask_billing(billing, question)
            reply = f"The billing agent says: {answer}"
        else:
            reply = "I can't reach the billing agent right now."
        await updater.add_artifact([new_text_part(reply)], name="reply")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


def app(url: str) -> Starlette:
    """The agent's A2A application, its card naming ``url`` as its endpoint."""
    card = AgentCard(
        name="Acme support agent",
        description="Answers Acme customers' questions about their bills.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="bills", name="Bills", description="Bill questions.", tags=[])],
    )
    handler = DefaultRequestHandler(
        agent_executor=SupportAgent(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_agent_card_routes(card)
    routes += create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True)
    return Starlette(routes=routes)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9999)
    port = parser.parse_args().port
    uvicorn.run(app(f"http://127.0.0.1:{port}/"), host="127.0.0.1", port=port)
