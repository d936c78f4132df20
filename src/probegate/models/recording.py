"""The recording format: what ``--record DIR`` writes and the ``replay`` target reads.

A recording is a directory: ``recording.json`` (the manifest: seed, the target's description,
its tools and what it exposes) and one JSON file per attempt holding its transcript
(docs/targets.md). The engine writes it while a scan runs and the replay target reads it back,
so the format and its reader and writers live here, below both.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from probegate.errors import UsageError
from probegate.files import MAX_INPUT_BYTES, MAX_REPORT_BYTES, read_text, write_atomic
from probegate.models.causes import Cause
from probegate.models.report import TargetInfo
from probegate.models.taxonomy import Capability
from probegate.models.tools import ToolSpec
from probegate.models.transcript import Transcript
from probegate.models.verdict import Attempt
from probegate.validation import describe

MANIFEST = "recording.json"
MANIFEST_KIND = "probegate-recording-v1"


def recording_name(attempt_id: str) -> str:
    """A file name per attempt: readable, and unique even where sanitising merges two ids."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", attempt_id)[:120]
    digest = hashlib.sha256(attempt_id.encode()).hexdigest()[:10]
    return f"{safe}-{digest}.json"


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomic, so a kill mid-write never leaves half a recording; private (0600 in 0700
    directories), because a transcript is what the agent said, redacted or not."""
    write_atomic(path, json.dumps(data, sort_keys=True, indent=1), private=True)


# --------------------------------------------------------------------------- writing


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
        "target": info.model_dump(mode="json", by_alias=True),
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
    _write_json(directory / MANIFEST, manifest)


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
    """One attempt's recording; ``attempt`` comes in the stored form of redaction."""
    _write_json(
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
            "cause": attempt.cause.value if attempt.cause is not None else None,
            "delivered": attempt.delivered,
            "judged_by": attempt.judged_by,
        },
    )


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class Manifest:
    """A recording's manifest: the recorded target as the scan saw it."""

    seed: int
    target: TargetInfo
    tools: tuple[ToolSpec, ...]
    tool_calls_visible: bool
    uses_sandbox: bool
    system_canaries: bool


@dataclass(frozen=True)
class Recording:
    attempt_id: str
    transcript: Transcript
    judged_by: str
    reason: str
    # Why the recorded attempt failed, replayed as it was; a recording that does not say
    # replays as the recording's own failure.
    cause: Cause = Cause.RECORDING
    # Whether the recorded attempt's attack reached the agent: the replay says what the
    # recorded sandbox saw (a recording that does not say: not shown to have reached it).
    delivered: bool = False


class _StoredTool(BaseModel):
    """A tool as :func:`write_manifest` writes it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    capabilities: list[Capability]
    parameters: dict[str, Any]


class _StoredManifest(BaseModel):
    """The manifest as :func:`write_manifest` writes it: every key, none defaulted."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    seed: int
    target: TargetInfo
    tools: list[_StoredTool]
    tool_calls_visible: bool
    uses_sandbox: bool
    system_canaries: bool


def read_manifest(directory: Path, *, shown_as: str) -> Manifest:
    """Read ``directory``'s manifest; every problem is one usage-error line naming ``shown_as``.

    The manifest is read as :func:`write_manifest` writes it, every key present: a recording
    of an earlier probegate without one is refused, never read with a guess of what the
    recorded target exposed."""
    manifest_path = directory / MANIFEST
    if not manifest_path.exists():
        raise UsageError(
            f"{shown_as}: not a probegate recording (no {MANIFEST}; make one with --record DIR)"
        )
    try:
        text = read_text(manifest_path, what="recording manifest", max_bytes=MAX_INPUT_BYTES)
        manifest = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{manifest_path}: cannot read the recording manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != MANIFEST_KIND:
        raise UsageError(f"{manifest_path}: not a {MANIFEST_KIND} manifest")
    try:
        stored = _StoredManifest.model_validate(manifest)
    except ValidationError as exc:
        raise UsageError(
            f"{manifest_path}: invalid recording manifest: {describe(exc, top='manifest')}"
        ) from None
    return Manifest(
        target=stored.target,
        tools=tuple(
            ToolSpec(
                name=t.name,
                description=t.description,
                capabilities=frozenset(t.capabilities),
                parameters=t.parameters,
            )
            for t in stored.tools
        ),
        seed=stored.seed,
        tool_calls_visible=stored.tool_calls_visible,
        uses_sandbox=stored.uses_sandbox,
        system_canaries=stored.system_canaries,
    )


_CAUSES = frozenset(c.value for c in Cause)


def read_recording(directory: Path, attempt_id: str) -> Recording | None:
    """The attempt's recorded conversation; None when it is missing or unreadable."""
    path = directory / recording_name(attempt_id)
    try:
        data = json.loads(read_text(path, what="recording", max_bytes=MAX_REPORT_BYTES))
        if data.get("attempt_id") != attempt_id or data.get("transcript") is None:
            return None
        return Recording(
            attempt_id=attempt_id,
            transcript=Transcript.model_validate(data["transcript"]),
            judged_by=str(data.get("judged_by", "")),
            reason=str(data.get("reason", "")),
            cause=Cause(data["cause"]) if data.get("cause") in _CAUSES else Cause.RECORDING,
            delivered=data.get("delivered") is True,
        )
    except (UsageError, ValueError, AttributeError, ValidationError, RecursionError):
        return None
