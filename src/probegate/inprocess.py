"""Loading and calling user code in-process: one import rule, bounded errors, a timeout.

Python agents (``--python``) and scenario adapters (``probegate run --adapter``) are the user's
code run inside probegate, named as ``MODULE:ATTR`` and imported by :func:`load_attribute`.
Whatever they raise, even ``SystemExit``, is their error, reported in one bounded line; a call
that hangs is abandoned after its timeout on a daemon thread (Python cannot kill a thread), so
it never blocks the scan or keeps the process alive.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probegate.errors import UsageError
from probegate.models.bounds import valid_unicode

ERROR_MAX = 300
# A dotted Python name: what `import` and attribute access accept, nothing relative.
_DOTTED = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
# sys.path is process-wide: two targets importing at once must not undo each other's entries.
_IMPORT_LOCK = threading.Lock()


@dataclass(frozen=True)
class Outcome:
    """What one call returned, or the bounded error that stopped it."""

    value: Any = None
    error: str | None = None
    timed_out: bool = False


def bounded(text: str, limit: int = ERROR_MAX) -> str:
    """One line of at most ``limit`` characters: error text goes into a report, not a log."""
    text = " ".join(valid_unicode(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_exception(exc: BaseException) -> str:
    message = str(exc) if _printable(exc) else ""
    return bounded(f"{type(exc).__name__}: {message}" if message else type(exc).__name__)


def _printable(exc: BaseException) -> bool:
    try:
        str(exc)
    except Exception:
        return False
    return True


# Asks to be told when the caller stops waiting for good (a scan's ``limiter.when_closed``);
# returns what forgets the request.
WhenStopped = Callable[[Callable[[], None]], Callable[[], None]]


def call_with_timeout(
    func: Callable[[], Any], timeout: float | None, when_stopped: WhenStopped | None = None
) -> Outcome:
    """Run ``func`` in a daemon thread; give up on it after ``timeout`` seconds, or as soon as
    ``when_stopped`` says the scan stopped (a stopped scan abandons a slow agent at once).

    Everything the agent raises, even ``SystemExit``, is its error, so the worker catches
    ``BaseException``: nothing it does can end the run.
    """
    box: list[Outcome] = []
    done = threading.Event()
    forget = when_stopped(done.set) if when_stopped is not None else None

    def work() -> None:
        try:
            box.append(Outcome(value=func()))
        except BaseException as exc:  # reported as the scenario's error, never re-raised
            box.append(Outcome(error=describe_exception(exc)))
        finally:
            done.set()

    worker = threading.Thread(target=work, name="probegate-user-code", daemon=True)
    worker.start()
    try:
        finished = done.wait(timeout)
    finally:
        if forget is not None:
            forget()
    if not finished:
        return Outcome(error=f"timed out after {timeout:g}s", timed_out=True)
    if not box:  # woken by the stop, the agent still running: abandoned
        return Outcome(error="stopped: the scan ended before the agent answered", timed_out=True)
    return box[0]


def field_of(result: Any, name: str) -> Any:
    """A field of an agent's reply, which may be a dict or an object with attributes."""
    if isinstance(result, dict):
        return result.get(name)
    return getattr(result, name, None)


def source_file(obj: Any) -> Path | None:
    """The file that defines ``obj`` (the agent's code, for findings' locations), if any."""
    try:
        source = inspect.getsourcefile(obj)
    except TypeError:
        return None
    return Path(source) if source else None


def split_spec(spec: str, *, flag: str, dotted_form: bool = False) -> tuple[str, str]:
    """``MODULE:ATTR`` -> ``(MODULE, ATTR)``, both dotted Python names.

    ``dotted_form`` also reads ``package.module.Attr`` as module and attribute split at the
    last dot: the form AgenticAssure's ``--adapter`` and project file use.
    """
    module, sep, attr = spec.strip().partition(":")
    if not sep and dotted_form:
        module, sep, attr = spec.strip().rpartition(".")
    if not sep or not _DOTTED.fullmatch(module) or not _DOTTED.fullmatch(attr):
        example = "my_agent:MyAgent" if dotted_form else "my_agent:run"
        raise UsageError(f"{flag} takes MODULE:ATTR (e.g. {example}), got {spec!r}")
    return module, attr


def load_attribute(
    spec: str, *, flag: str, search: Sequence[Path] = (), dotted_form: bool = False
) -> Any:
    """Import ``MODULE:ATTR`` and return ATTR; every failure is one usage-error line (exit 2).

    ``search`` directories are put in front of ``sys.path`` for the import only (an agent that
    imports its own helpers later needs them there for longer: see ``importable_from`` in
    probegate.scenarios.adapter). An import runs arbitrary code, so whatever it raises is the
    user's error, shown as its type and bounded message.
    """
    module_name, attr = split_spec(spec, flag=flag, dotted_form=dotted_form)
    with _IMPORT_LOCK:
        added = list(dict.fromkeys(str(p) for p in search if str(p) not in sys.path))
        sys.path[:0] = added
        try:
            module = importlib.import_module(module_name)
        except (Exception, SystemExit) as exc:  # an exit in a module body is its error too
            raise UsageError(
                f"{flag}: cannot import {module_name!r}: {describe_exception(exc)}"
            ) from None
        finally:
            for path in added:
                if path in sys.path:
                    sys.path.remove(path)
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"{flag}: module {module_name!r} has no attribute {attr!r}") from None
    return obj


@dataclass(frozen=True)
class AgentEntry:
    """How to call an in-process agent (``--python``, ``--adapter``): a fresh callable for each
    conversation (a new instance when ATTR is a class, so state kept on ``self`` never leaks
    from one conversation into the next), and whether it takes ``(input, context)`` or only
    ``(input)``."""

    new_call: Callable[[], Callable[..., Any]]
    takes_context: bool


def agent_entry(obj: Any, *, what: str, context_required: bool = False) -> AgentEntry:
    """The one check of an in-process agent, before anything calls it: a function, a class
    constructible with no arguments whose ``run`` takes ``(input, context)`` or ``(input)``
    (a plain method, a ``staticmethod`` or a ``classmethod``), or an object with such a
    ``run``. ``context_required``: only ``(input, context)`` will do (a scenario adapter).
    Anything else is one usage-error line starting with ``what`` (exit 2).
    """
    if inspect.isclass(obj):
        cls: Any = obj
        run = getattr(cls, "run", None)
        if not callable(run):
            raise UsageError(f"{what}: the class has no run(input, context) method")
        try:
            inspect.signature(cls).bind()
        except TypeError:
            raise UsageError(f"{what}: the class must be constructible with no arguments") from None
        except ValueError:
            pass  # no signature to inspect (a builtin); the call itself will tell
        # Read from the class, a plain method still wants ``self``; a staticmethod or a
        # classmethod (bound to the class already) does not.
        raw = inspect.getattr_static(cls, "run", None)
        unbound = not isinstance(raw, staticmethod | classmethod)
        takes_context = _takes_context(run, f"{what}: run()", context_required, unbound=unbound)
        return AgentEntry(lambda: cls().run, takes_context)
    if not inspect.isroutine(obj) and callable(getattr(obj, "run", None)):
        method = obj.run
        return AgentEntry(
            lambda: method, _takes_context(method, f"{what}: run()", context_required)
        )
    if callable(obj):
        func = obj
        return AgentEntry(
            lambda: func, _takes_context(func, f"{what}: the function", context_required)
        )
    raise UsageError(f"{what}: not a function (input, context) or a class with run(input, context)")


def _takes_context(func: Any, what: str, required: bool, *, unbound: bool = False) -> bool:
    """Whether ``func`` is called ``(input, context)`` (preferred) or ``(input)``."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return True  # builtins and C callables: nothing to check before calling
    first: tuple[Any, ...] = (None,) if unbound else ()
    shapes = [((*first, "", {}), True)] + ([] if required else [((*first, ""), False)])
    for args, context in shapes:
        try:
            signature.bind(*args)
        except TypeError:
            continue
        return context
    accepted = "two arguments (input, context)" if required else "(input, context) or (input)"
    raise UsageError(f"{what} must accept {accepted}")
