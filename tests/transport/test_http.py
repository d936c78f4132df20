"""The shared HTTP client against a real fault-injecting loopback server.

Every fault must end as a TransportError with a reason (never a crash, never a reply), be
retried only when retrying can help, and leave no secret in the message.
"""

from __future__ import annotations

import email.utils
import socket
import threading
import time

import pytest

from probegate.models.causes import Cause
from probegate.transport.http import HttpClient
from probegate.transport.http_parts import parse_retry_after
from probegate.transport.limiter import BudgetExhausted, RequestLimiter, ScanStopped
from probegate.transport.usage import MalformedReply, TransportError, Usage
from tests.servers.faults import FaultServer

KEY = "sk-test-SUPERSECRET-0123456789"


def client(**kw: object) -> HttpClient:
    options: dict[str, object] = {"timeout": 1.0, "retries": 0, "backoff_base": 0.01}
    options.update(kw)
    return HttpClient(**options)  # type: ignore[arg-type]


def post(
    c: HttpClient, url: str, limiter: RequestLimiter | None = None, usage: Usage | None = None
):
    return c.request_json(
        "POST",
        url + "/chat/completions",
        body={"x": 1},
        limiter=limiter or RequestLimiter(),
        usage=usage,
    )


def fail(c: HttpClient, url: str) -> TransportError:
    with pytest.raises(TransportError) as info:
        post(c, url)
    return info.value


def test_retry_after_forms() -> None:
    assert parse_retry_after("7") == 7.0
    date = email.utils.formatdate(1_000_030, usegmt=True)
    assert parse_retry_after(date, now=1_000_000) == pytest.approx(30.0)
    assert parse_retry_after(email.utils.formatdate(5, usegmt=True), now=100) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_ok_reply_is_decoded_and_each_try_passes_the_gate(faults: FaultServer) -> None:
    limiter, usage = RequestLimiter(), Usage()
    data = post(client(), faults.endpoint("ok"), limiter, usage)
    assert data["choices"][0]["message"]["content"] == "All good."
    assert limiter.state.requests == 1 and usage.requests == 1


def test_429_waits_for_retry_after_seconds_then_succeeds(faults: FaultServer) -> None:
    c, limiter = client(retries=2), RequestLimiter()
    start = time.monotonic()
    post(c, faults.endpoint("429-1"), limiter)
    assert time.monotonic() - start >= 0.95
    assert faults.hits("429-1") == 2 and limiter.state.requests == 2


def test_429_with_http_date_is_honoured(faults: FaultServer) -> None:
    start = time.monotonic()
    post(client(retries=1), faults.endpoint("429date-1"))
    assert time.monotonic() - start >= 0.9  # the date is 2 s ahead, at 1 s resolution


def test_retry_after_beyond_the_limit_gives_up_at_once(faults: FaultServer) -> None:
    start = time.monotonic()
    err = fail(client(retries=3), faults.endpoint("429long"))
    assert "3600s" in err.reason and not err.fatal
    assert faults.hits("429long") == 1 and time.monotonic() - start < 1


def test_5xx_is_retried_with_backoff_then_reported(faults: FaultServer) -> None:
    err = fail(client(retries=2), faults.endpoint("500"))
    assert faults.hits("500") == 3
    assert "HTTP 500" in err.reason and "gave up after 3 tries" in err.reason
    assert not err.fatal
    post(client(retries=1), faults.endpoint("503-1"))
    assert faults.hits("503-1") == 2


def test_other_4xx_is_not_retried(faults: FaultServer) -> None:
    err = fail(client(retries=3), faults.endpoint("400"))
    assert faults.hits("400") == 1
    assert "HTTP 400" in err.reason and "content_policy_violation" in err.reason
    assert not err.fatal


def test_auth_failures_are_fatal_and_404_only_before_any_answer(faults: FaultServer) -> None:
    assert fail(client(), faults.endpoint("401")).fatal
    assert fail(client(), faults.endpoint("404")).fatal
    warm = client()
    post(warm, faults.endpoint("ok"))
    assert not fail(warm, faults.endpoint("404")).fatal


@pytest.mark.parametrize(
    ("fault", "words", "retried"),
    [
        ("garbage", "unreadable reply: HTTP 200 with an HTML page, not JSON", True),
        ("empty", "unreadable reply: HTTP 200 with an empty body", True),
        ("cutjson", "unreadable reply: HTTP 200 with JSON cut off after 40 bytes", True),
        ("notjson", "unreadable reply: HTTP 200 with a body that is not JSON", True),
        ("nochoices", None, False),
        ("truncated", "truncated", True),
        ("huge", "too large", False),
        ("hugechunked", "too large", False),
        ("drop", "dropped", True),
    ],
)
def test_broken_bodies_are_transport_errors(
    faults: FaultServer, fault: str, words: str | None, retried: bool
) -> None:
    """A body that cannot be read is missing evidence: retried like a 5xx, then a reason that
    says what was wrong with it. Only a body too large to read at all is not tried again."""
    c = client(retries=1)
    if words is None:  # valid JSON of the wrong shape is the target's problem, not the client's
        assert post(c, faults.endpoint(fault)) == {"object": "list", "data": []}
        return
    err = fail(c, faults.endpoint(fault))
    assert words in err.reason
    assert faults.hits(fault) == (2 if retried else 1)
    assert ("gave up after 2 tries" in err.reason) is retried
    assert c.stats.unreadable == (2 if fault in ("garbage", "empty", "cutjson", "notjson") else 0)


def test_a_parse_that_finds_the_fields_missing_is_retried_then_reported(
    faults: FaultServer,
) -> None:
    """The caller's ``parse`` says what a reply of its protocol needs; a MalformedReply it raises
    is retried with the same backoff and budget as a 5xx."""

    def needs_choices(data: object) -> object:
        if not isinstance(data, dict) or "choices" not in data:
            raise MalformedReply("unreadable reply: HTTP 200 with JSON without choices")
        return data["choices"]

    limiter = RequestLimiter()
    c = client(retries=2)
    with pytest.raises(TransportError) as info:
        c.request_json(
            "POST",
            faults.endpoint("nochoices") + "/x",
            body={},
            limiter=limiter,
            parse=needs_choices,
        )
    assert info.value.reason == (
        "unreadable reply: HTTP 200 with JSON without choices (gave up after 3 tries)"
    )
    assert faults.hits("nochoices") == 3 and limiter.state.requests == 3
    # The first good reply ends the retries, and what parse made of it is returned.
    got = c.request_json(
        "POST", faults.endpoint("nochoices-1") + "/x", body={}, limiter=limiter, parse=needs_choices
    )
    assert got[0]["message"]["content"] == "All good." and faults.hits("nochoices-1") == 2


def test_a_parse_that_refuses_the_reply_outright_is_not_retried(faults: FaultServer) -> None:
    def refuse(data: object) -> object:
        raise TransportError("endpoint said no", cause=Cause.CLIENT_ERROR)

    with pytest.raises(TransportError, match="endpoint said no"):
        client(retries=3).request_json("POST", faults.endpoint("ok") + "/x", body={}, parse=refuse)
    assert faults.hits("ok") == 1


@pytest.mark.parametrize("fault", ["timeout", "drip", "headerdrip"])
def test_total_deadline_bounds_slow_servers(faults: FaultServer, fault: str) -> None:
    c = client(timeout=0.6)
    start = time.monotonic()
    err = fail(c, faults.endpoint(fault))
    elapsed = time.monotonic() - start
    assert "timeout" in err.reason
    # A drip resets the socket timeout with every byte; only the total deadline stops it.
    assert elapsed < 1.6


def test_secrets_and_control_characters_never_reach_a_message(faults: FaultServer) -> None:
    c = client(secrets=[KEY])
    with pytest.raises(TransportError) as info:
        c.request_json(
            "POST",
            faults.endpoint("secret") + "/chat/completions",
            body={},
            headers={"Authorization": f"Bearer {KEY}"},
        )
    reason = info.value.reason
    assert KEY not in reason and "SUPERSECRET" not in reason
    assert "\x1b" not in reason and "\x07" not in reason
    assert len(reason) < 300


def test_a_piece_or_a_spelled_out_secret_never_reaches_a_message() -> None:
    secret = "gw-7c1d2e3f4a5b6c7d8e9f"
    c = client(secrets=[secret])
    said = f"echo {secret[5:17]} | {' '.join(secret)} | {secret.encode().hex()[:20]}"
    assert c.scrub(said) == "echo [REDACTED] | [REDACTED] | [REDACTED]"


def test_bearer_tokens_are_scrubbed_even_when_not_registered() -> None:
    c = client()
    assert "abcdefgh12345678" not in c.scrub("sent Bearer abcdefgh12345678 to x")


def test_connection_refused_is_fatal_before_any_answer() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    err = fail(client(retries=1), f"http://127.0.0.1:{port}/v1")
    assert "refused" in err.reason and err.fatal


def test_budget_stops_retries(faults: FaultServer) -> None:
    limiter = RequestLimiter(max_requests=2)
    with pytest.raises(BudgetExhausted):
        post(client(retries=5), faults.endpoint("500"), limiter)
    assert faults.hits("500") == 2


def test_closed_gate_refuses_at_once(faults: FaultServer) -> None:
    limiter = RequestLimiter()
    limiter.close("scan stopped (early_stop)")
    with pytest.raises(BudgetExhausted, match="early_stop"):
        post(client(), faults.endpoint("ok"), limiter)
    assert faults.hits("ok") == 0


def test_a_request_in_flight_ends_when_its_scan_stops(faults: FaultServer) -> None:
    """A reply 30 s away and a 60 s timeout: the scan stops (Ctrl-C, a cancelled job) and the
    request ends at once, not when the reply or the timeout comes."""
    limiter = RequestLimiter()
    threading.Timer(0.3, limiter.close, args=("scan stopped (cancelled)",)).start()
    start = time.monotonic()
    with pytest.raises(ScanStopped, match="cancelled"):
        post(client(timeout=60.0, retries=3), faults.endpoint("timeout"), limiter)
    took = time.monotonic() - start
    assert took < 1.5, took
    assert faults.hits("timeout") == 1  # and nothing tried again


def test_a_host_that_does_not_resolve_says_dns() -> None:
    client = HttpClient(timeout=5, retries=0)
    try:
        with pytest.raises(TransportError) as info:
            client.request_json("POST", "http://no-such-host.invalid/v1/chat/completions", body={})
    finally:
        client.close()
    assert "cannot resolve host no-such-host.invalid (DNS lookup failed)" in str(info.value)
    assert info.value.fatal  # it never answered: the scan stops at once instead of retrying
