"""The ``replay`` target: judge a recorded scan again, with no network.

It answers each message with the reply recorded (``--record DIR``, the format in
:mod:`probegate.models.recording`) for the same attempt, so the same oracles see the same
transcript and reach the same verdicts; the canaries match because they derive from the
recorded seed and the attempt id. A recording holds its scan's real secrets only as
placeholders (the stored form, :mod:`probegate.models.placeholders`): the declared canaries
given to the replay are spelled back into each reply exactly as the agent wrote them (encoded,
cut off), so a leak of one is judged exactly as it was live. A changed probe library shows up
as a message that does not match the recording, and the attempt is unjudged with that reason
rather than judged against a conversation that never happened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from probegate.errors import UsageError
from probegate.models.causes import Cause
from probegate.models.placeholders import restore_turn
from probegate.models.recording import Recording, read_manifest, read_recording
from probegate.models.redaction import Redactor, same_when_stored
from probegate.models.report import TargetInfo
from probegate.models.sections import KindSection
from probegate.models.tools import ToolSpec
from probegate.models.transcript import Turn
from probegate.targets.base import (
    AgentConfig,
    Notice,
    TargetFlag,
    TargetSettings,
    TargetSpec,
    TargetTraits,
    ToolDelivery,
)
from probegate.targets.sandbox import Sandbox
from probegate.transport.limiter import RequestLimiter
from probegate.transport.usage import TransportError, Usage


class ReplayConfig(AgentConfig):
    """``kind: replay``: the recording directory. Declared ``canaries`` must be those the
    recorded scan declared: the planted canaries derive from them."""

    kind: Literal["replay"] = "replay"
    replay: str | None = None


class ReplayTarget:
    """Answers from a recording directory; never opens a connection."""

    def __init__(self, config: ReplayConfig, settings: TargetSettings) -> None:
        raw = config.replay
        if not raw:
            raise UsageError("the replay target needs --replay DIR (or target.replay)")
        directory = Path(raw).expanduser()
        if not directory.is_absolute() and not directory.is_dir():
            directory = settings.base_dir / directory
        manifest = read_manifest(directory, shown_as=raw)
        self._info = manifest.target
        self._tools = list(manifest.tools)
        self.seed = manifest.seed
        if self.seed != settings.seed:
            raise UsageError(
                f"{raw} was recorded with --seed {self.seed}; replay it with --seed {self.seed} "
                "(the planted canaries and mutated payloads depend on the seed)"
            )
        self.directory = directory
        # The recorded agent's traits: the same oracles must see the same transcript the same way.
        self._traits = TargetTraits(
            tool_delivery=ToolDelivery.RECORDED,
            tool_calls_visible=manifest.tool_calls_visible,
            system_canaries=manifest.system_canaries,
            uses_sandbox=manifest.uses_sandbox,
            waits=False,  # a recording is read, not asked
        )
        self._ref = raw
        self._secrets = config.real_secrets()
        # Only to compare a message with its recorded, redacted, copy: the key is not the
        # recording scan's, so pattern tokens are compared by kind (same_when_stored).
        self._stored = Redactor(self._secrets, key=b"replay")

    def info(self) -> TargetInfo:
        return self._info.model_copy(
            update={"kind": "replay", "ref": f"replay:{self._ref}", "profile_source": "recording"}
        )

    def tools(self) -> list[ToolSpec]:
        return list(self._tools)

    def traits(self) -> TargetTraits:
        return self._traits

    def report_sections(self) -> list[KindSection]:
        return []

    def notices(self) -> list[Notice]:
        return []

    def load(self, attempt_id: str) -> Recording | None:
        return read_recording(self.directory, attempt_id)

    def open_session(self, sandbox: Sandbox, limiter: RequestLimiter) -> ReplaySession:
        recording = self.load(sandbox.attempt_id)
        if recording is not None and recording.delivered:
            # What the recorded sandbox handed the agent is not served again: it is replayed.
            sandbox.delivered = True
        return ReplaySession(recording, self._secrets, self._stored)

    def close(self) -> None:
        return None


@dataclass
class ReplaySession:
    """Replays one recorded conversation (one ``session`` number of one attempt)."""

    recording: Recording | None
    secrets: dict[str, str] = field(default_factory=dict)
    stored: Redactor = field(default_factory=lambda: Redactor({}, key=b"replay"))
    usage: Usage = field(default_factory=Usage)
    _sent: int = 0

    def send(self, message: Turn) -> Turn:
        if self.recording is None:
            raise TransportError("no recording for this attempt", cause=Cause.RECORDING)
        turns = self.recording.transcript.turns
        inputs = [
            i for i, t in enumerate(turns) if t.role != "assistant" and t.session == message.session
        ]
        index = self._sent
        self._sent += 1
        if index >= len(inputs):
            raise TransportError(
                "the recording has fewer turns than this attempt", cause=Cause.RECORDING
            )
        at = inputs[index]
        recorded = turns[at]
        if recorded.role != message.role or not same_when_stored(
            recorded.content, message.content, self.stored
        ):
            raise TransportError(
                "recording does not match this attempt (probe library or settings changed)",
                cause=Cause.RECORDING,
            )
        if at + 1 >= len(turns) or turns[at + 1].role != "assistant":
            # The recorded attempt failed here; replay the same failure.
            raise TransportError(
                self.recording.reason or "the recording ends here", cause=self.recording.cause
            )
        return restore_turn(turns[at + 1], self.secrets).model_copy(deep=True)

    def close(self) -> None:
        return None


SPEC = TargetSpec(
    kinds=("replay",),
    config=ReplayConfig,
    summary="a recorded scan (--record DIR), judged again with no target at all",
    build=ReplayTarget,
    flags=(
        TargetFlag(
            "--replay",
            "replay",
            "directory of recorded transcripts to judge again",
            metavar="DIR",
            selects=True,
            path=True,
        ),
    ),
    live=False,
)
