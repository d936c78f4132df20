"""What the proxy forwards, and where: the scan's credential, the API's endpoints, one host.

The proxy holds the user's upstream key (``upstream_api_key_env``) while a scan runs, and any
process on the machine can reach its port. So it is a capability: a request is forwarded only
when it carries one of

- the scan's **path prefix**, ``/pg-<token>`` (144 random bits, new each scan), which is in the
  base URL probegate prints, writes to ``<store>/model-proxy.url`` and gives a python agent
  (``context.model_base_url``): an agent started after the proxy carries it in its base URL;
- the **credential the agent already carries**, for an agent started before the scan with the
  fixed base URL (``OPENAI_BASE_URL=http://127.0.0.1:8790/v1``): with
  ``upstream_api_key_env`` set, that same key (in ``Authorization: Bearer``, ``x-api-key`` or
  ``api-key``), compared in constant time, which only a holder of the key can present; without
  it, the caller's own key is what goes upstream, so a request with none gets nothing, and one
  with a key of its own gets no more than that key would get it directly.

Anything else is refused (401) and counted. With the credential, only the declared API's model
endpoint (``POST``) and the model list (``GET .../models``, which SDKs and frameworks read on
start-up) are forwarded; any other method or path is refused (404) and counted.

The request target must be a plain path (origin-form): segments of unreserved characters,
none of them ``.`` or ``..``, no ``%`` escape (nothing is decoded, so nothing can spell a
``/``, a ``.`` or an ``@``), and a query of the same characters. The upstream URL is built from
the parsed ``upstream`` (its scheme and host, its path joined with the request's), never by
joining strings, and is checked to name that host before it is used: no request reaches a
second host (docs/scan-your-agent/proxy.md, "What the proxy protects").
"""

from __future__ import annotations

import hmac
import re
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from probegate.targets.model_proxy.incoming import Head, Refused
from probegate.transport.model_apis import ModelApi

PREFIX = "pg-"
_SEGMENT = re.compile(r"[A-Za-z0-9_~-][A-Za-z0-9._~-]*")
_QUERY = re.compile(r"[A-Za-z0-9._~=&-]*")
_BEARER = re.compile(r"(?i)bearer[ \t]+(\S+)")
# The API families whose SDKs put /v1 in the base URL (the Anthropic SDK adds it itself).
_V1_IN_BASE = frozenset({"openai-chat", "openai-responses"})


@dataclass(frozen=True)
class Forward:
    """Where one request goes: the upstream URL, and whether it is a model call."""

    url: str
    model_call: bool
    # The agent presented the user's key (or the prefix): the proxy sends the key upstream.
    keyed: bool


class Gate:
    """The scan's credential and the API's endpoints, for one proxy."""

    def __init__(self, api: ModelApi, upstream: str, key: str | None) -> None:
        parts = urlsplit(upstream)
        self.api = api
        self._scheme, self._netloc = parts.scheme, parts.netloc
        self._base = parts.path.rstrip("/")
        self._key = key.encode("utf-8") if key else None
        self.token = PREFIX + secrets.token_urlsafe(18)
        self._token = self.token.encode("ascii")
        calls = {api.path, "/v1" + api.path}
        self._posts = frozenset(calls)

    def base_url(self, host: str, port: int) -> str:
        """The base URL an agent is given: its SDK appends the API's path to it."""
        shown = f"[{host}]" if ":" in host else host
        tail = "/v1" if self.api.name in _V1_IN_BASE else ""
        return f"http://{shown}:{port}/{self.token}{tail}"

    def decide(self, head: Head) -> Forward:
        """Where ``head``'s request goes, or :class:`Refused` with why."""
        segments, query = _parse_target(head.target)
        prefixed = bool(segments) and hmac.compare_digest(segments[0].encode(), self._token)
        if prefixed:
            segments = segments[1:]
        elif not self._credential(head.headers):
            raise Refused(
                401,
                "no_credential",
                "probegate's model-API proxy forwards only requests that carry the scan's "
                "credential (its base URL, or the upstream's API key): refused",
            )
        path = "/" + "/".join(segments)
        if self._base and (path == self._base or path.startswith(self._base + "/")):
            path = path[len(self._base) :] or "/"
        model_call = head.method == "POST" and path in self._posts
        if not model_call and not (head.method == "GET" and _models(path)):
            raise Refused(
                404,
                "not_model_endpoint",
                f"probegate's model-API proxy forwards only {self.api.name}'s model endpoint "
                f"(POST ...{self.api.path}) and GET .../models: {head.method} refused",
            )
        if head.method == "GET" and head.has_body:
            raise Refused(400, "invalid", "a GET with a body")
        url = urlunsplit((self._scheme, self._netloc, self._base + path, query, ""))
        if urlsplit(url).netloc != self._netloc:  # built, so never: but never is checked
            raise Refused(400, "invalid", "the request would leave the upstream's host")
        return Forward(url, model_call, keyed=prefixed or self._key is not None)

    def _credential(self, headers: dict[str, str]) -> bool:
        """Whether the request carries the user's key (or, without one, a key of its own)."""
        presented = [
            value for name in ("x-api-key", "api-key") if (value := headers.get(name, "").strip())
        ]
        bearer = _BEARER.fullmatch(headers.get("authorization", "").strip())
        if bearer is not None:
            presented.append(bearer.group(1))
        if self._key is None:
            return bool(presented)
        key = self._key
        return any(hmac.compare_digest(value.encode("utf-8"), key) for value in presented)


def _parse_target(target: str) -> tuple[list[str], str]:
    """The path's segments and the query of an origin-form target, or :class:`Refused`."""
    if not target.startswith("/") or target.startswith("//"):
        raise Refused(400, "invalid", "the request target must be a path (origin-form)")
    path, _sep, query = target.partition("?")
    segments = path[1:].split("/")
    if segments == [""]:
        segments = []
    if any(_SEGMENT.fullmatch(s) is None for s in segments) or _QUERY.fullmatch(query) is None:
        raise Refused(400, "invalid", "the request target is not a plain path")
    return segments, query


def _models(path: str) -> bool:
    """``GET /models`` or ``/models/<id>`` (with or without ``/v1``): what SDKs read first."""
    parts = path.removeprefix("/v1").split("/")
    return parts[:2] == ["", "models"] and len(parts) <= 3
