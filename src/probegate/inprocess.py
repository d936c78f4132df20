"""Calling user code in-process: bounded errors and a timeout it cannot escape.

Python agents (``--python``) and scenario adapters (``probegate run``) are the user's code run
inside probegate. Whatever they raise, even ``SystemExit``, is their error, reported in one
bounded line; a call that hangs is abandoned after its timeout on a daemon thread (Python
cannot kill a thread), so it never blocks the scan or keeps the process alive.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ERROR_MAX = 300


@dataclass(frozen=True)
class Outcome:
    """What one call returned, or the bounded error that stopped it."""

    value: Any = None
    error: str | None = None
    timed_out: bool = False


def bounded(text: str, limit: int = ERROR_MAX) -> str:
    """One line of at most ``limit`` characters: error text goes into a report, not a log."""
    text = " ".join(text.split())
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


def call_with_timeout(func: Callable[[], Any], timeout: float | None) -> Outcome:
    """Run ``func`` in a daemon thread; give up on it after ``timeout`` seconds.

    Everything the agent raises, even ``SystemExit``, is its error, so the worker catches
    ``BaseException``: nothing it does can end the run.
    """
    box: list[Outcome] = []
    done = threading.Event()

    def work() -> None:
        try:
            box.append(Outcome(value=func()))
        except BaseException as exc:  # reported as the scenario's error, never re-raised
            box.append(Outcome(error=describe_exception(exc)))
        finally:
            done.set()

    worker = threading.Thread(target=work, name="probegate-user-code", daemon=True)
    worker.start()
    if not done.wait(timeout):
        return Outcome(error=f"timed out after {timeout:g}s", timed_out=True)
    return box[0]
