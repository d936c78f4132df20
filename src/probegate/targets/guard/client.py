"""``POST /v1/evaluate``: one GuardEvent out, the guard's verdict back (docs/guard.md).

The request goes over the shared HTTP client (retries, deadlines, body cap, secret scrubbing)
and spends from the scan's request limiter like every request to the agent.
"""

from __future__ import annotations

import time

from probegate.models.causes import Cause
from probegate.targets.guard.events import GuardEvent, GuardVerdict, VerdictError, parse_verdict
from probegate.transport.http import HttpClient
from probegate.transport.limiter import RequestLimiter
from probegate.transport.usage import UNREADABLE, MalformedReply, TransportError, Usage

EVALUATE_PATH = "/v1/evaluate"
KEY_HINT = "name the variable holding it with --guard-api-key-env VAR (target.guard_api_key_env)"


def evaluate_url(base: str) -> str:
    """``{base}/v1/evaluate``; a URL that already names the endpoint (or ``/v1``) is completed.

    The runtime API joins canonical paths to one configured base URL, which may carry a
    deployment prefix (``https://host/api/public/ogr``).
    """
    base = base.rstrip("/")
    if base.endswith(EVALUATE_PATH):
        return base
    if base.endswith("/v1"):  # given the way OpenAI-style base URLs are usually written
        return base + "/evaluate"
    return base + EVALUATE_PATH


class GuardClient:
    """The guard's endpoint, its client and its headers (the API key among them)."""

    def __init__(self, url: str, http: HttpClient, headers: dict[str, str]) -> None:
        self.url = url
        self.http = http
        self.headers = headers

    def evaluate(
        self, event: GuardEvent, limiter: RequestLimiter, usage: Usage
    ) -> tuple[GuardVerdict, float]:
        """The verdict and the round trip in ms (retries included); TransportError otherwise."""
        start = time.monotonic()
        try:
            verdict: GuardVerdict = self.http.request_json(
                "POST",
                self.url,
                body=event.body,
                headers=self.headers,
                limiter=limiter,
                usage=usage,
                parse=_read_verdict,
            )
        except TransportError as exc:
            reason = f"guard: {exc.reason}"
            if exc.reason.startswith("HTTP 401") and "Authorization" not in self.headers:
                # Runtimes authenticate every evaluate; the usual cause is a key never given.
                reason += f"; no API key was sent: {KEY_HINT}"
            raise TransportError(reason, cause=Cause.GUARD, fatal=exc.fatal) from None
        round_trip = (time.monotonic() - start) * 1000.0
        # A guard request has no token cost; recording it as priced keeps the dollar budget's
        # in-flight estimate from counting every guard request as a model call still pending.
        limiter.record_usage(0, 0, 0.0)
        return verdict, round_trip


def _read_verdict(data: object) -> GuardVerdict:
    """A 200 that is not a Verdict is a transient fault, retried like a 5xx: a guard that
    answered nothing readable neither allowed nor blocked anything."""
    try:
        return parse_verdict(data)
    except VerdictError as exc:
        raise MalformedReply(f"{UNREADABLE}: HTTP 200, but {exc}") from None
