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
    if inspect.isclass(obj):
        cls: Any = obj
        run = getattr(cls, "run", None)
        if not callable(run):
            raise UsageError(f"--adapter {spec}: the class has no run(input, context) method")
        try:
            inspect.signature(cls).bind()
        except TypeError:
            raise UsageError(
                f"--adapter {spec}: the class must be constructible with no arguments"
            ) from None
        except ValueError:
            pass  # no signature to inspect (a builtin); the call itself will tell
        raw = inspect.getattr_static(cls, "run", None)
        unbound = not isinstance(raw, staticmethod | classmethod)
        _check_signature(spec, run, unbound=unbound, what="run()")

        def new_agent() -> AgentCall:
            agent_run: AgentCall = cls().run
            return agent_run

        return new_agent
    if not inspect.isroutine(obj) and callable(getattr(obj, "run", None)):
        method: AgentCall = obj.run
        _check_signature(spec, method, unbound=False, what="run()")
        return lambda: method
    if callable(obj):
        func: AgentCall = obj
        _check_signature(spec, func, unbound=False, what="the function")
        return lambda: func
    raise UsageError(
        f"--adapter {spec}: not a function (input, context) or a class with run(input, context)"
    )


def _check_signature(spec: str, func: Any, *, unbound: bool, what: str) -> None:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return  # builtins and C callables: nothing to check before calling
    args: tuple[Any, ...] = (None, "", {}) if unbound else ("", {})
    try:
        signature.bind(*args)
    except TypeError:
        raise UsageError(
            f"--adapter {spec}: {what} must accept two arguments (input, context)"
        ) from None


def _model_info(spec: str, obj: Any) -> dict[str, Any] | None:
    """An optional ``model_info`` dict on the adapter, recorded in every RunResult."""
    info = getattr(obj, "model_info", None) if not inspect.ismodule(obj) else None
    if info is None:
        return None
    if not isinstance(info, dict):
        raise UsageError(f"--adapter {spec}: model_info must be a dict, got {type(info).__name__}")
    safe: dict[str, Any] = json_safe(info)
    return safe
