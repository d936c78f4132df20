"""The ``replay`` target: judge a recorded scan again, with no network.

It answers each message with the reply recorded (``--record DIR``, the format in
:mod:`probegate.models.recording`) for the same attempt, so the same oracles see the same
transcript and reach the same verdicts; the canaries match because they derive from the
recorded seed and the attempt id. A changed probe library shows up as a message that does not
match the recording, and the attempt is unjudged with that reason rather than judged against a
conversation that never happened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from probegate.config import ScanConfig
from probegate.errors import UsageError
from probegate.models.recording import Recording, read_manifest, read_recording
from probegate.models.report import TargetInfo
from probegate.models.tools import ToolSpec
from probegate.models.transcript import Turn
from probegate.targets.sandbox import Sandbox
from probegate.transport.limiter import RequestLimiter
from probegate.transport.usage import TransportError, Usage


class ReplayTarget:
    """Answers from a recording directory; never opens a connection."""

    def __init__(self, config: ScanConfig) -> None:
        raw = config.target.replay
        if not raw:
            raise UsageError("the replay target needs --replay DIR (or target.replay)")
        directory = Path(raw).expanduser()
        if not directory.is_absolute() and not directory.is_dir():
            directory = config.base_dir / directory
        manifest = read_manifest(directory, shown_as=raw)
        self._info = manifest.target
        self._tools = list(manifest.tools)
        self.seed = manifest.seed
        if self.seed != config.seed:
            raise UsageError(
                f"{raw} was recorded with --seed {self.seed}; replay it with --seed {self.seed} "
                "(the planted canaries and mutated payloads depend on the seed)"
            )
        self.directory = directory
        self.tool_calls_visible = manifest.tool_calls_visible
        self.uses_sandbox = manifest.uses_sandbox
        self._system_canaries = manifest.system_canaries
        self._ref = raw

    def info(self) -> TargetInfo:
        return self._info.model_copy(
            update={"mode": "replay", "ref": f"replay:{self._ref}", "profile_source": "recording"}
        )

    def tools(self) -> list[ToolSpec]:
        return list(self._tools)

    def system_canaries(self) -> bool:
        return self._system_canaries

    def load(self, attempt_id: str) -> Recording | None:
        return read_recording(self.directory, attempt_id)

    def open_session(self, sandbox: Sandbox, limiter: RequestLimiter) -> ReplaySession:
        return ReplaySession(self.load(sandbox.attempt_id))

    def close(self) -> None:
        return None


@dataclass
class ReplaySession:
    """Replays one recorded conversation (one ``session`` number of one attempt)."""

    recording: Recording | None
    usage: Usage = field(default_factory=Usage)
    _sent: int = 0

    def send(self, message: Turn) -> Turn:
        if self.recording is None:
            raise TransportError("no recording for this attempt")
        turns = self.recording.transcript.turns
        inputs = [
            i for i, t in enumerate(turns) if t.role != "assistant" and t.session == message.session
        ]
        index = self._sent
        self._sent += 1
        if index >= len(inputs):
            raise TransportError("the recording has fewer turns than this attempt")
        at = inputs[index]
        recorded = turns[at]
        if recorded.content != message.content or recorded.role != message.role:
            raise TransportError(
                "recording does not match this attempt (probe library or settings changed)"
            )
        if at + 1 >= len(turns) or turns[at + 1].role != "assistant":
            # The recorded attempt failed here; replay the same failure.
            raise TransportError(self.recording.reason or "the recording ends here")
        return turns[at + 1].model_copy(deep=True)

    def close(self) -> None:
        return None
