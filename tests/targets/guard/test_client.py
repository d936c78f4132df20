"""The guard's client: a 200 that is not a Verdict is a transient fault, retried like a 5xx."""

from __future__ import annotations

import pytest

from probegate.targets.guard.client import GuardClient
from probegate.targets.guard.events import GuardIdentity, make_event, text_payload
from probegate.transport.http import HttpClient
from probegate.transport.limiter import RequestLimiter
from probegate.transport.usage import TransportError, Usage
from tests.targets.guard.fake_guard import FakeGuard


def evaluate(guard: FakeGuard, retries: int) -> None:
    payload, registered = text_payload("Your order shipped today.")
    event = make_event("output", payload, registered, identity=GuardIdentity(), step_id="s-1")
    http = HttpClient(timeout=2.0, retries=retries, backoff_base=0.01, peer="the guard")
    try:
        GuardClient(guard.url + "/v1/evaluate", http, {}).evaluate(event, RequestLimiter(), Usage())
    finally:
        http.close()


def test_an_answer_that_is_not_a_verdict_is_retried_then_unjudged_with_why() -> None:
    with FakeGuard("no-provider") as guard:
        with pytest.raises(TransportError) as info:
            evaluate(guard, retries=2)
        assert len(guard.events) == 3  # every try reached the guard
    assert info.value.reason.startswith(
        "guard: unreadable reply: HTTP 200, but the guard's answer is not a valid Verdict"
    )
    assert "provider: required field missing" in info.value.reason
    assert info.value.reason.endswith("(gave up after 3 tries)")
