"""The adapter boundary: the user's agent, ``--adapter MODULE:ATTR``, called safely.

``ATTR`` is a function ``f(input, context)``, a class whose instances have
``run(input, context)`` (instantiated with no arguments for every attempt, so state an agent
keeps on ``self`` never leaks from one scenario into the next), or an object with such a
``run``. Whether the adapter *can* be called that way is checked once, before any scenario runs:
a wrong signature is a usage error (exit 2), not a hundred identical scenario errors.

What happens inside a call is the agent's business and never crashes probegate: an exception
or a timeout becomes that scenario's ``error`` (one bounded line, no traceback). Calls run in a
daemon worker thread so a hung agent can be abandoned; Python cannot kill a thread, so an
abandoned call keeps running in the background until it returns or the process exits.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probegate import inprocess
from probegate.errors import UsageError
from probegate.scenarios.models import json_safe

AgentCall = Callable[[str, dict[str, Any]], Any]
FLAG = "--adapter"


@dataclass(frozen=True)
class Adapter:
    """A loaded adapter: ``new_agent()`` gives the callable for one attempt."""

    spec: str
    new_agent: Callable[[], AgentCall]
    model_info: dict[str, Any] | None = None


@contextlib.contextmanager
def importable_from(directory: Path) -> Iterator[None]:
    """Let ``directory`` (the current one) provide modules for the duration of a run.

    Kept for the whole run, not just the import, because agents often import their own helper
    modules lazily, inside ``run``.
    """
    entry = str(directory)
    added = entry not in sys.path
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)


def split_spec(spec: str) -> tuple[str, str]:
    """``MODULE:ATTR``; AgenticAssure's ``module.Attr`` form is read as the last dot."""
    return inprocess.split_spec(spec, flag=FLAG, dotted_form=True)


def load_adapter(spec: str) -> Adapter:
    """Import the adapter and check that it can be called as ``(input, context)``."""
    obj = inprocess.load_attribute(spec, flag=FLAG, dotted_form=True)
    return Adapter(spec=spec, new_agent=_factory(spec, obj), model_info=_model_info(spec, obj))


def _factory(spec: str, obj: Any) -> Callable[[], AgentCall]:
    """The in-process agent check that ``--python`` uses too; an adapter takes a context."""
    entry = inprocess.agent_entry(obj, what=f"{FLAG} {spec}", context_required=True)
    return entry.new_call


def _model_info(spec: str, obj: Any) -> dict[str, Any] | None:
    """An optional ``model_info`` dict on the adapter, recorded in every RunResult."""
    info = getattr(obj, "model_info", None) if not inspect.ismodule(obj) else None
    if info is None:
        return None
    if not isinstance(info, dict):
        raise UsageError(f"--adapter {spec}: model_info must be a dict, got {type(info).__name__}")
    safe: dict[str, Any] = json_safe(info)
    return safe
