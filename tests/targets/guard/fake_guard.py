"""A loopback runtime guard speaking the guard protocol (docs/guard.md), one policy a variant.

It is written from the OpenGuardrails 1.0 runtime API (README and schemas; the schemas ship
in ``probegate/targets/guard/data/``) and behaves at the door like the reference runtime of
that repository: a missing or wrong bearer key is ``401 unauthorized`` (``api_key``); every
event is checked against the GuardEvent schema, and beyond it the runtime accepts only the
optional top-level fields it was set up to expect (``accepts``, none by default, as the
reference runtime accepts exactly the required fields). Anything else is
``400 invalid_event`` with per-field ``details`` in the runtime API's form, recorded in
``invalid`` so a test can insist there were none.

Policies: ``allow`` (a plain 1.0 verdict), ``block``, ``keyword`` (block when a keyword
appears in any text of the payload, with findings naming path and offsets), ``unjudged``
(allow, naming every text as unjudged; ``unjudged-calls``: only for tool calls;
``block-unjudged``: a block that also names a path it could not judge),
``no-provider`` (a 1.0 allow without its required ``provider``), ``bad-severity`` (keyword,
with a severity outside the schema's enum on every finding),
``drop_calls`` and ``withhold`` (keyword, rendered with a continuation), ``spans`` (keyword
matches rewritten to a placeholder on an allow). ``fail_first=N, fail_status=S`` answers the
first N requests with status S (429 carries ``Retry-After: 1``) before the policy applies;
``fail_when=TEXT`` answers S to every event containing TEXT (a 413 for the one oversized
document, say); ``api_key`` requires that bearer key. The server also stops by itself after
``lifetime`` seconds, so a hung test cannot leak it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any

import jsonschema

from tests.servers.base import Handler, LoopbackServer

SCHEMAS = resources.files("probegate.targets.guard") / "data"
EVENT_SCHEMA = json.loads((SCHEMAS / "guard-event.schema.v1.0.json").read_text(encoding="utf-8"))
VERDICT_SCHEMA = json.loads((SCHEMAS / "verdict.schema.v1.0.json").read_text(encoding="utf-8"))
EVENT_VALIDATOR = jsonschema.Draft202012Validator(EVENT_SCHEMA)
VERDICT_VALIDATOR = jsonschema.Draft202012Validator(VERDICT_SCHEMA)
# The GuardEvent's optional top-level fields (integration, connection, session_hint).
OPTIONAL_FIELDS = frozenset(EVENT_SCHEMA["properties"]) - frozenset(EVENT_SCHEMA["required"])
KEYWORDS = ("evil.test", "ignore previous instructions", "attacker.example")
PLACEHOLDER = "${OGR_URL_1}"
NOTICE = (
    "This action was refused by a security policy and was NOT executed. You may pursue the "
    "user's goal by other legitimate means."
)
# Keys whose values are identifiers, not judged text.
_NOT_TEXT = frozenset({"role", "id", "tool_call_id", "type"})


def texts(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every judged text in a payload with its path, as a runtime registers them."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key in sorted(value):
            if key not in _NOT_TEXT:
                yield from texts(value[key], f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from texts(item, f"{path}.{i}")


def keyword_hits(payload: Any, keywords: tuple[str, ...]) -> list[dict[str, Any]]:
    hits = []
    for path, text in texts(payload, "payload"):
        lowered = text.lower()
        for word in keywords:
            start = lowered.find(word)
            if start >= 0:
                subject = text[start : start + len(word)]
                hits.append(
                    {
                        "category": "security.prompt_injection",
                        "severity": "high",
                        "path": path,
                        "start": start,
                        "end": start + len(word),
                        "score": 0.9,
                        "fp": hashlib.sha256(subject.lower().encode()).hexdigest()[:16],
                        "subject": subject,
                        "detector": "keyword",
                    }
                )
    return hits


class GuardHandler(Handler):
    def do_POST(self) -> None:
        guard: FakeGuard = self.owner
        seen = guard.count()
        body = self.read_json()
        if guard.api_key is not None and self.headers.get("Authorization") != (
            f"Bearer {guard.api_key}"
        ):
            self.send_json(401, {"error": "unauthorized"})
            return
        if not self.path.endswith("/v1/evaluate"):
            self.send_json(404, {"error": "not found"})
            return
        details = guard.validate(body)
        if details:
            with guard.lock:
                guard.invalid.extend(d["message"] for d in details)
            self.send_json(400, {"error": "invalid_event", "details": details})
            return
        with guard.lock:
            guard.events.append(body)
        if seen <= guard.fail_first or (
            guard.fail_when is not None and guard.fail_when in json.dumps(body)
        ):
            headers = {"Retry-After": "1"} if guard.fail_status == 429 else None
            error = "rate_limited" if guard.fail_status == 429 else "internal"
            self.send_json(guard.fail_status, {"error": error, "limit": 10}, headers)
            return
        self.send_json(200, guard.verdict(body, seen))


class FakeGuard(LoopbackServer):
    handler = GuardHandler

    def __init__(
        self,
        policy: str = "allow",
        *,
        keywords: tuple[str, ...] = KEYWORDS,
        fail_first: int = 0,
        fail_status: int = 429,
        fail_when: str | None = None,
        api_key: str | None = None,
        accepts: frozenset[str] = frozenset(),
        lifetime: float = 60.0,
    ) -> None:
        super().__init__()
        self.policy = policy
        self.keywords = keywords
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.fail_when = fail_when
        self.api_key = api_key
        self.accepts = accepts
        self.events: list[dict[str, Any]] = []
        self.invalid: list[str] = []
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.daemon = True

    def __enter__(self) -> FakeGuard:
        super().__enter__()
        self._timer.start()
        return self

    def stop(self) -> None:
        self._timer.cancel()
        super().stop()

    def validate(self, body: Any) -> list[dict[str, Any]]:
        """The 400 ``details``: schema violations, then optional keys this runtime refuses."""
        details = [
            {"code": e.validator, "path": list(e.absolute_path), "message": e.message}
            for e in sorted(EVENT_VALIDATOR.iter_errors(body), key=lambda e: list(e.path))
        ]
        if isinstance(body, dict):
            refused = sorted(k for k in body if k in OPTIONAL_FIELDS and k not in self.accepts)
            if refused:
                shown = ", ".join(f'"{k}"' for k in refused)
                details.append(
                    {
                        "code": "unrecognized_keys",
                        "keys": refused,
                        "path": [],
                        "message": f"Unrecognized key(s): {shown}",
                    }
                )
        return details

    def kinds(self) -> list[str]:
        with self.lock:
            return [e["kind"] for e in self.events]

    # -- the verdicts --------------------------------------------------------------------
    def verdict(self, event: dict[str, Any], n: int) -> dict[str, Any]:
        base: dict[str, Any] = {
            "event_id": f"evt-{n}",
            "provider": "fake-guard",
            "decision": "allow",
            "latency_ms": 2,
        }
        payload = event["payload"]
        if self.policy == "allow":
            return base
        if self.policy == "no-provider":
            return {k: v for k, v in base.items() if k != "provider"}
        now = datetime.now(tz=UTC)
        # The protocol's newer fields: the runtime's own two instants.
        base["timing"] = {
            "received_at": now.isoformat().replace("+00:00", "Z"),
            "responded_at": (now + timedelta(milliseconds=3)).isoformat().replace("+00:00", "Z"),
        }
        if self.policy == "block":
            return {**base, "decision": "block"}
        if self.policy == "block-unjudged":
            return {**base, "decision": "block", "unjudged": ["payload.messages.0.content"]}
        if self.policy == "unjudged" or (
            self.policy == "unjudged-calls" and "tool_calls" in payload
        ):
            return {**base, "unjudged": [path for path, _ in texts(payload, "payload")]}
        if self.policy == "unjudged-calls":
            return base
        hits = keyword_hits(payload, self.keywords)
        if not hits:
            return base
        if self.policy == "spans":
            spans = [
                {
                    "path": h["path"],
                    "start": h["start"],
                    "end": h["end"],
                    "replacement": PLACEHOLDER,
                }
                for h in hits
            ]
            return {**base, "findings": hits, "modifications": {"spans": spans}}
        if self.policy == "bad-severity":
            hits = [{**h, "severity": "severe"} for h in hits]
        verdict = {**base, "decision": "block", "findings": hits}
        if self.policy == "drop_calls" and "tool_calls" in payload:
            verdict["continuation"] = {
                "style": "drop_calls",
                "paths": ["payload.tool_calls.0"],
                "notice": NOTICE,
            }
        if self.policy == "withhold" and event["kind"] == "step/request":
            messages = payload.get("messages") or []
            if messages and messages[0].get("role") == "tool":
                verdict["continuation"] = {
                    "style": "withhold",
                    "paths": ["payload.messages.0"],
                    "notice": NOTICE,
                }
        return verdict
