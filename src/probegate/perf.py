"""Performance helpers shared by the emitters and the report loader."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while an emitter allocates.

    Rendering a large scan allocates millions of short-lived, acyclic objects; with a report
    of ten thousand findings in memory every collection rescans it, which doubled render time.
    Reference counting still frees everything; the collector resumes (if it was on) after.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
