"""The one loop over three model APIs reads a 200 it cannot parse as missing evidence.

A gateway's HTML page, the API's error object in a 200, a body or an event stream cut off
half-way: each is retried like a 5xx (docs/targets.md, "Transient faults"), for Chat
Completions, Responses and Messages, streamed or not, against the loopback server of all three
(tests/servers/model_apis.py); without retries the attempt's reason says what was wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from probegate.config import ScanConfig
from probegate.models.canaries import make_canaries
from probegate.models.probe import Fixtures
from probegate.models.transcript import Turn
from probegate.targets.anthropic_agent import AnthropicConfig, AnthropicTarget
from probegate.targets.model_loop import ModelTarget
from probegate.targets.openai_agent import OpenAIConfig, OpenAITarget
from probegate.targets.sandbox import Sandbox
from probegate.transport.http import HttpClient
from probegate.transport.limiter import RequestLimiter
from probegate.transport.usage import TransportError
from tests.servers.configs import TOOLS
from tests.servers.model_apis import ModelApiServer

# (the target section's kind and api, the server's name for the API)
APIS = {
    "chat": ({"kind": "openai"}, "chat"),
    "responses": ({"kind": "openai", "api": "responses"}, "responses"),
    "anthropic": ({"kind": "anthropic"}, "messages"),
}
FAULTS = ("html", "shape", "cut")


def _target(name: str, endpoint: str, stream: bool, retries: int) -> ModelTarget:
    section, _ = APIS[name]
    data: dict[str, Any] = {**section, "endpoint": endpoint, "model": "fake-1", "tools": TOOLS}
    if stream:
        data["params"] = {"stream": True}
    config = ScanConfig.model_validate({"target": data, "timeout": 5, "retries": retries})
    settings = config.target_settings()
    # A short backoff: what is tested is that the reply is retried, not how long it waits.
    client = HttpClient(timeout=5, retries=retries, backoff_base=0.01, peer="target")
    if isinstance(config.target, AnthropicConfig):
        return AnthropicTarget(config.target, settings, client=client)
    assert isinstance(config.target, OpenAIConfig)
    return OpenAITarget(config.target, settings, client=client)


def _send(target: ModelTarget, text: str) -> tuple[Turn, RequestLimiter]:
    sandbox = Sandbox(
        target.tools(), Fixtures(), make_canaries(0, "a#seed#0"), attempt_id="a#seed#0"
    )
    limiter = RequestLimiter()
    session = target.open_session(sandbox, limiter)
    try:
        return session.send(Turn(role="user", content=text)), limiter
    finally:
        session.close()
        target.close()


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("name", list(APIS))
def test_an_unreadable_200_is_retried_like_a_5xx(name: str, stream: bool) -> None:
    """Three unreadable replies, then the model's: the loop reads the fourth and goes on."""
    with ModelApiServer(faults=FAULTS) as server:
        target = _target(name, server.base_url, stream, retries=3)
        reply, limiter = _send(target, "[[multi]]")
        assert [c.name for c in reply.tool_calls] == ["lookup_customer", "send_email"]
        calls = server.of(APIS[name][1])
    # 3 faults + the model's first reply, then the one call that answers the tool results.
    assert len(calls) == 5 and limiter.state.requests == 5
    assert target.client.stats.unreadable == 3 and target.client.stats.retries == 3


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("name", list(APIS))
@pytest.mark.parametrize("fault", FAULTS)
def test_without_retries_the_reason_says_what_was_unreadable(
    name: str, stream: bool, fault: str
) -> None:
    with ModelApiServer(faults=(fault,)) as server:
        target = _target(name, server.base_url, stream, retries=0)
        with pytest.raises(TransportError) as caught:
            _send(target, "hello")
    reason = caught.value.reason
    assert reason.startswith("unreadable reply: HTTP 200 with "), reason
    said = {
        "html": "an HTML page, not JSON",
        "shape": "an error object: ",
        "cut": "that is not" if stream else "JSON cut off after",
    }[fault]
    assert said in reason, reason
    if fault == "cut" and stream:
        assert "an event stream that is not" in reason and "cut off" in reason, reason
    assert not caught.value.fatal


def test_a_fault_is_never_a_verdict_in_a_scan(tmp_path: Path) -> None:
    """Through the real CLI, over the Messages API streamed: three unreadable replies (no more
    than one call retries) and the finding is still found."""
    from probegate.cli import main
    from tests.servers.configs import scan_args, write_config

    probe = "asi01.direct-system-prompt-leak.v1"
    with ModelApiServer(faults=FAULTS) as server:
        (tmp_path / "prompt.txt").write_text("You are the Acme support agent.\n", "utf-8")
        section = {
            "kind": "anthropic",
            "endpoint": server.base_url,
            "model": "fake-1",
            "system_prompt": "prompt.txt",
            "tools": TOOLS,
            "params": {"stream": True},
        }
        config = write_config(tmp_path, section)
        code = main(scan_args(config, tmp_path, "--probes", probe, "--fail-on", "high"))
        served = len(server.bodies)
    assert code == 1
    assert served > len(FAULTS)  # every fault was served, and the model answered after
