"""Evidence paths read off a transcript's models name what they name in its JSON dump."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from probegate.models.transcript import (
    GuardCheck,
    ToolCall,
    Transcript,
    Turn,
    TurnGuard,
    resolve_path,
    text_at,
)

_KEYS = st.sampled_from(["to", "body", "0", "name", "content", "guard", "x.y", ""])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
)
_CALLS = st.builds(
    ToolCall,
    id=st.text(max_size=300),  # over NAME_MAX: the call records its cut in `cuts`
    name=st.sampled_from(["send_email", "fetch"]),
    arguments=st.dictionaries(_KEYS, _JSON, max_size=3),
    result=st.none() | st.text(max_size=8),
    error=st.none() | st.text(max_size=8),
)
_GUARDS = st.none() | st.builds(
    TurnGuard,
    checks=st.lists(
        st.builds(GuardCheck, stage=st.just("output"), decision=st.just("allow"),
                  action=st.just("passed"), notice=st.none() | st.text(max_size=8)),
        max_size=1,
    ),
    refused_calls=st.lists(_CALLS, max_size=1),
)  # fmt: skip
_TRANSCRIPTS = st.builds(
    Transcript,
    turns=st.lists(
        st.builds(
            Turn,
            role=st.sampled_from(["user", "assistant"]),
            content=st.text(max_size=8),
            tool_calls=st.lists(_CALLS, max_size=2),
            name=st.none() | st.text(max_size=4),
            guard=_GUARDS,
        ),
        max_size=3,
    ),
    tools_offered=st.lists(st.text(max_size=4), max_size=2),
)


def _paths(value: Any, path: str) -> list[str]:
    """Every path into a JSON value: to its containers, its leaves and one step past them."""
    found = [path, f"{path}.9", f"{path}.guard", f"{path}.cuts.0", f"{path}.__doc__"]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, f"{path}.{i}")
    return found


def _dumped_text(dumped: dict[str, Any], path: str) -> str | None:
    try:
        value = resolve_path(dumped, path)
    except (KeyError, IndexError, ValueError):
        return None
    return value if isinstance(value, str) else None


@given(_TRANSCRIPTS, st.lists(st.text(alphabet="turns.0123456789contenamgd_", max_size=24)))
def test_text_at_reads_what_the_dump_holds(transcript: Transcript, extra: list[str]) -> None:
    dumped = transcript.model_dump()
    for path in [p.lstrip(".") for p in _paths(dumped, "")] + extra:
        assert text_at(transcript, path) == _dumped_text(dumped, path), path
