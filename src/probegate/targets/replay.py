"""``--record DIR`` and the ``replay`` target: judge a recorded scan again, with no network.

A recording is a directory: ``recording.json`` (the manifest: seed, the target's description,
its tools and what it exposes) and one JSON file per attempt holding its transcript. The
replay target answers each message with the reply recorded for the same attempt, so the same
oracles see the same transcript and reach the same verdicts; the canaries match because they
derive from the recorded seed and the attempt id. A changed probe library shows up as a
message that does not match the recording, and the attempt is unjudged with that reason rather
than judged against a conversation that never happened.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from probegate.config import ScanConfig
from probegate.engine.limits import RequestGate
from probegate.errors import UsageError
from probegate.models.report import TargetInfo
from probegate.models.taxonomy import Capability
from probegate.models.transcript import Transcript, Turn
from probegate.models.verdict import Attempt
from probegate.targets.base import TransportError, Usage
from probegate.targets.sandbox import Sandbox, ToolSpec

MANIFEST = "recording.json"
MANIFEST_KIND = "probegate-recording-v1"


def recording_name(attempt_id: str) -> str:
    """A file name per attempt: readable, and unique even where sanitising merges two ids."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", attempt_id)[:120]
    digest = hashlib.sha256(attempt_id.encode()).hexdigest()[:10]
    return f"{safe}-{digest}.json"


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write then rename, so a kill mid-write never leaves half a recording."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, sort_keys=True, indent=1), encoding="utf-8")
    tmp.replace(path)


def write_manifest(
    directory: Path,
    *,
    seed: int,
    info: TargetInfo,
    tools: list[ToolSpec],
    tool_calls_visible: bool,
    uses_sandbox: bool,
    system_canaries: bool,
) -> None:
    manifest = {
        "kind": MANIFEST_KIND,
        "seed": seed,
        "target": info.model_dump(mode="json"),
        "tools": [
            {
                "name": t.name,
                "description": t.description,
                "capabilities": sorted(c.value for c in t.capabilities),
                "parameters": t.parameters,
            }
            for t in tools
        ],
        "tool_calls_visible": tool_calls_visible,
        "uses_sandbox": uses_sandbox,
        "system_canaries": system_canaries,
    }
    _refuse_foreign_recording(directory, manifest)
    directory.mkdir(parents=True, exist_ok=True)
    _write_atomic(directory / MANIFEST, manifest)


def _refuse_foreign_recording(directory: Path, manifest: dict[str, Any]) -> None:
    """Never mix or overwrite what a user recorded: a directory holds one scan's recording.

    Re-recording the same scan (same seed, target and tools, e.g. after ``--resume``) is fine;
    anything else already in the directory is refused before a single attempt runs.
    """
    if not directory.exists():
        return
    existing = directory / MANIFEST
    if existing.exists():
        try:
            old = json.loads(existing.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = None
        if old == json.loads(json.dumps(manifest)):
            return
        raise UsageError(
            f"--record {directory} already holds a recording of a different scan (seed, target "
            "or tools differ); record into a new directory"
        )
    if any(directory.iterdir()):
        raise UsageError(
            f"--record {directory} is not empty and holds no probegate recording; "
            "record into a new or empty directory"
        )


def write_recording(directory: Path, attempt: Attempt, seed: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    _write_atomic(
        directory / recording_name(attempt.attempt_id),
        {
            "attempt_id": attempt.attempt_id,
            "probe_id": attempt.probe_id,
            "seed": seed,
            "transcript": attempt.transcript.model_dump(mode="json")
            if attempt.transcript
            else None,
            "outcome": attempt.outcome.value,
            "reason": attempt.reason,
            "judged_by": attempt.judged_by,
        },
    )


@dataclass(frozen=True)
class Recording:
    attempt_id: str
    transcript: Transcript
    judged_by: str
    reason: str


class ReplayTarget:
    """Answers from a recording directory; never opens a connection."""

    def __init__(self, config: ScanConfig) -> None:
        raw = config.target.replay
        if not raw:
            raise UsageError("the replay target needs --replay DIR (or target.replay)")
        directory = Path(raw).expanduser()
        if not directory.is_absolute() and not directory.is_dir():
            directory = config.base_dir / directory
        manifest_path = directory / MANIFEST
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UsageError(
                f"{raw}: not a probegate recording (no {MANIFEST}; make one with --record DIR)"
            ) from None
        except (OSError, ValueError) as exc:
            raise UsageError(
                f"{manifest_path}: cannot read the recording manifest: {exc}"
            ) from None
        if not isinstance(manifest, dict) or manifest.get("kind") != MANIFEST_KIND:
            raise UsageError(f"{manifest_path}: not a {MANIFEST_KIND} manifest")
        try:
            self._info = TargetInfo.model_validate(manifest["target"])
            self._tools = [
                ToolSpec(
                    name=str(t["name"]),
                    description=str(t.get("description", "")),
                    capabilities=frozenset(Capability(c) for c in t.get("capabilities", [])),
                    parameters=dict(t.get("parameters") or {}),
                )
                for t in manifest["tools"]
            ]
            self.seed = int(manifest["seed"])
        except (KeyError, TypeError, ValueError, ValidationError) as exc:
            raise UsageError(f"{manifest_path}: invalid recording manifest: {exc}") from None
        if self.seed != config.seed:
            raise UsageError(
                f"{raw} was recorded with --seed {self.seed}; replay it with --seed {self.seed} "
                "(the planted canaries and mutated payloads depend on the seed)"
            )
        self.directory = directory
        self.tool_calls_visible = bool(manifest.get("tool_calls_visible", True))
        self.uses_sandbox = bool(manifest.get("uses_sandbox", True))
        self._system_canaries = bool(manifest.get("system_canaries", True))
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
        path = self.directory / recording_name(attempt_id)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("attempt_id") != attempt_id or data.get("transcript") is None:
                return None
            return Recording(
                attempt_id=attempt_id,
                transcript=Transcript.model_validate(data["transcript"]),
                judged_by=str(data.get("judged_by", "")),
                reason=str(data.get("reason", "")),
            )
        except (OSError, ValueError, AttributeError, ValidationError):
            return None

    def open_session(self, sandbox: Sandbox, gate: RequestGate) -> ReplaySession:
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
