"""The guard target: the agent behind, seen through the guard at ``target.guard``.

It builds the pieces (the guard's client and key, the stats, the benign control set) once per
scan and opens one :class:`~probegate.targets.guard.session.GuardSession` per conversation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from probegate.errors import UsageError
from probegate.models.report import TargetInfo
from probegate.models.sections import KindSection
from probegate.models.tools import ToolSpec
from probegate.targets.base import Notice, Target, TargetSettings, TargetTraits, env_value
from probegate.targets.configured import http_client
from probegate.targets.guard.benign import BenignControl
from probegate.targets.guard.client import GuardClient, evaluate_url
from probegate.targets.guard.session import GuardSession
from probegate.targets.guard.stats import GuardStats
from probegate.targets.sandbox import Sandbox
from probegate.transport.http import HttpClient
from probegate.transport.http_parts import public_url
from probegate.transport.limiter import RequestLimiter

if TYPE_CHECKING:
    from probegate.targets.guard import GuardConfig


class GuardTarget:
    """The agent behind (``inner``) seen through the guard at ``target.guard``."""

    def __init__(
        self,
        config: GuardConfig,
        settings: TargetSettings,
        inner: Target,
        client: HttpClient | None = None,
    ) -> None:
        raw = config.guard
        if not raw:
            raise UsageError("the guard target needs the guard's URL (target.guard or --guard URL)")
        if not raw.startswith(("http://", "https://")):
            raise UsageError(f"guard URL {public_url(raw)!r} is not an http(s) URL")
        self.config = config
        self.inner = inner
        self.behind = config.behind
        self.url = evaluate_url(raw)
        http, headers = http_client(
            settings,
            raw,
            headers={},
            headers_env={},
            what="the guard's headers",
            client=client,
            peer="the guard",
        )
        self.http = http
        # ``api_key_env`` is the guard's only when the agent behind does not use it (the config
        # says so when it is parsed: docs/guard.md).
        key_env = config.guard_api_key_env or config.api_key_env
        if key_env:
            key = env_value(
                key_env, "the guard's API key (--guard-api-key-env, target.guard_api_key_env)"
            )
            http.add_secret(key)
            headers["Authorization"] = f"Bearer {key}"
        self.client = GuardClient(self.url, http, headers)
        self.stats = GuardStats()
        self.optional = frozenset(config.guard_optional_fields)
        self.benign = BenignControl(self.client, config.guard_identity, self.optional)

    # -- what the runner asks ------------------------------------------------------------
    def traits(self) -> TargetTraits:
        # The guard changes what crosses, not what the agent shows or how it gets its tools.
        return self.inner.traits()

    def info(self) -> TargetInfo:
        inner = self.inner.info()
        return inner.model_copy(
            update={"kind": "guard", "ref": f"guard:{public_url(self.url)}+{inner.ref}"}
        )

    def tools(self) -> list[ToolSpec]:
        return self.inner.tools()

    def open_session(self, sandbox: Sandbox, limiter: RequestLimiter) -> GuardSession:
        self.benign.run_once(self.inner.tools(), limiter)
        session = GuardSession(
            self.client, self.stats, self.config.guard_identity, sandbox, limiter, self.optional
        )
        if self.traits().uses_sandbox:
            sandbox.screen = session
        # Opening may already read tool descriptions (the openai target builds its tool list).
        session.inner = self.inner.open_session(sandbox, limiter)
        return session

    def notices(self) -> list[Notice]:
        return self.inner.notices()

    def report_sections(self) -> list[KindSection]:
        """The scan report's ``guard`` section (docs/guard.md)."""
        summary = self.stats.summary(
            url=public_url(self.url),
            behind=self.behind,
            http_status=dict(self.http.stats.by_status),
            benign=self.benign.outcome,
        )
        return [summary]

    def close(self) -> None:
        self.inner.close()
        self.http.close()
