"""A transcript's dump leaves out an absent guard and empty cuts, whichever way it is dumped.

Journals, recordings and reports written before guards and bounds existed keep their bytes
(models/transcript.py); the omission is pydantic's ``exclude_if``, so every dump path is held
here: Python and JSON modes, ``model_dump_json``, the exclude options, and tool calls nested in
a guard's refused calls.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from probegate.models.bounds import Cut
from probegate.models.transcript import GuardCheck, ToolCall, Transcript, Turn, TurnGuard

CUT = Cut(field="content", length=9, kept=1, sha256="ab")
CHECK = GuardCheck(stage="tool_call", decision=None, action="not_run")


def _transcript() -> Transcript:
    return Transcript(
        turns=[
            Turn(role="user", content="hi"),
            Turn(
                role="assistant",
                tool_calls=[
                    ToolCall(name="plain"),
                    ToolCall(name="unguarded", guard=None, cuts=[]),
                    ToolCall(name="guarded-empty", guard=[]),
                    ToolCall(name="guarded", guard=[CHECK], cuts=[CUT]),
                ],
                guard=TurnGuard(refused_calls=[ToolCall(name="refused")]),
                cuts=[CUT],
            ),
            Turn(role="assistant", guard=TurnGuard()),
        ]
    )


def _keys(data: dict[str, Any]) -> list[list[str]]:
    """Each turn's keys, then each tool call's (the refused ones after a turn's own)."""
    keys: list[list[str]] = []
    for turn in data["turns"]:
        keys.append(sorted(turn))
        calls = turn["tool_calls"] + (turn.get("guard") or {}).get("refused_calls", [])
        keys += [sorted(call) for call in calls]
    return keys


BASE_TURN = ["content", "name", "role", "session", "tool_calls"]
BASE_CALL = ["arguments", "declared", "error", "id", "name", "result"]
EXPECTED = [
    BASE_TURN,
    sorted([*BASE_TURN, "guard", "cuts"]),
    BASE_CALL,
    BASE_CALL,
    sorted([*BASE_CALL, "guard"]),  # an empty guard list is a guard that found nothing: kept
    sorted([*BASE_CALL, "guard", "cuts"]),
    BASE_CALL,  # the refused call, inside the turn's guard
    sorted([*BASE_TURN, "guard"]),
]


@pytest.mark.parametrize(
    "dump",
    [
        lambda t: t.model_dump(),
        lambda t: t.model_dump(mode="json"),
        lambda t: json.loads(t.model_dump_json()),
        lambda t: t.model_dump(mode="json", by_alias=True, round_trip=True),
    ],
    ids=["python", "json-mode", "model_dump_json", "round_trip"],
)
def test_absent_guard_and_empty_cuts_are_left_out_of_every_dump(dump: Any) -> None:
    assert _keys(dump(_transcript())) == EXPECTED


def test_exclude_options_still_apply_around_the_omission() -> None:
    transcript = _transcript()
    # Defaults dropped as well: what stays is what was set to something else.
    slim = transcript.model_dump(exclude_defaults=True)
    assert sorted(slim["turns"][1]) == ["cuts", "guard", "role", "tool_calls"]
    assert [sorted(c) for c in slim["turns"][1]["tool_calls"]] == [
        ["name"],
        ["name"],
        ["guard", "name"],
        ["cuts", "guard", "name"],
    ]
    # exclude_none removes the other Nones; a guard of [] is not None and stays.
    lean = transcript.model_dump(exclude_none=True)
    assert lean["turns"][1]["tool_calls"][2]["guard"] == []


def test_the_dump_reads_back_as_the_same_transcript_and_the_same_bytes() -> None:
    transcript = _transcript()
    text = transcript.model_dump_json()
    again = Transcript.model_validate_json(text)
    assert again == transcript
    assert again.model_dump_json() == text
    assert Transcript.model_validate(transcript.model_dump(mode="json")) == transcript


def test_an_unguarded_transcript_keeps_the_bytes_it_had_before_guards_and_cuts() -> None:
    transcript = Transcript(
        turns=[
            Turn(role="user", content="hi"),
            Turn(role="assistant", content="ok", tool_calls=[ToolCall(name="t", result="r")]),
        ],
        tools_offered=["t"],
    )
    assert transcript.model_dump_json() == (
        '{"turns":[{"role":"user","content":"hi","tool_calls":[],"session":1,"name":null},'
        '{"role":"assistant","content":"ok","tool_calls":[{"id":"","name":"t","arguments":{},'
        '"result":"r","error":null,"declared":true}],"session":1,"name":null}],'
        '"tools_offered":["t"]}'
    )
