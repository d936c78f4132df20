"""What the agent sent reaches the model with the same values, whichever parser read it.

The proxy parses every model call and writes it again (marks stripped, canaries planted):
orjson where it reads the body as json would, json where it would not (an integer past 64
bits, a NaN). A real upstream (tests/servers/model_apis.py, which reads with json) must get
the agent's numbers and text as the agent sent them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from probegate.models.canaries import make_canaries
from probegate.models.probe import Fixtures
from probegate.targets.base import TargetSettings
from probegate.targets.configured import tool_specs
from probegate.targets.model_proxy import ModelProxy, ModelProxyConfig
from probegate.targets.python_agent import PythonConfig
from probegate.targets.sandbox import Sandbox
from probegate.transport.usage import Usage
from tests.models.test_json_parse import same
from tests.servers.brain_model import tool_config
from tests.servers.model_apis import ModelApiServer


class _Hello:
    def reply(self, messages: list[dict[str, Any]], tools: Any) -> tuple[str, list[Any]]:
        return "Hello.", []


EXTRAS = {
    # Read by orjson and written by it: every value as sent.
    "plain": '{"temperature": 0.7, "top_p": 1e-07, "seed": 9223372036854775807, '
    '"frequency_penalty": -0.0, "user": "na\\u00efve \\u2603 \\u200b caf\\u00e9"}',
    # orjson would read these as floats: json reads them, exactly.
    "wide integers": '{"metadata": {"big": 18446744073709551617, "low": -9223372036854775809}}',
    # orjson refuses NaN; json reads it, and orjson would write it back as null.
    "nan": '{"logit_bias": {"50256": NaN}, "temperature": Infinity}',
}


@pytest.mark.parametrize("extra", list(EXTRAS))
def test_the_model_gets_the_agents_values_as_sent(extra: str) -> None:
    with ModelApiServer(agent=_Hello()) as model:
        config = ModelProxyConfig(api="openai-chat", listen="127.0.0.1:0", upstream=model.base_url)
        tools = tool_specs(PythonConfig.model_validate({"tools": tool_config()}))
        proxy = ModelProxy(config, TargetSettings(timeout=5, retries=0), tools, {})
        try:
            sandbox = Sandbox(tools, Fixtures(), make_canaries(0, "v"), attempt_id="v")
            conversation = proxy.open(sandbox, Usage())
            text = json.dumps(conversation.begin("Please look up my account."))
            raw = (
                f'{{"model": "m", "messages": [{{"role": "user", "content": {text}}}], '
                f"{EXTRAS[extra][1:]}"
            )
            answer = requests.post(
                f"{proxy.base_url}/chat/completions",
                data=raw.encode(),
                headers={"Content-Type": "application/json"},
                timeout=10,
            )
            summary = proxy.summary()
        finally:
            proxy.close()
    assert answer.status_code == 200, answer.text
    assert summary is not None and summary.attributed == 1
    ((_api, received),) = model.bodies
    sent = json.loads(raw)
    for key, value in sent.items():
        if key != "messages":
            assert same(received[key], value), (key, received[key], value)
    assert received["messages"][-1]["content"] == "Please look up my account."
