"""Progress on stderr while attempts run (docs/targets.md, "Progress")."""

from __future__ import annotations

import time
from typing import TextIO

from probegate.engine.runner import Progress


class ProgressPrinter:
    """A live line on a terminal, a line every few seconds otherwise, and the final count once
    the run is over (:meth:`finish`): controls may still run after the last attempt, and each
    of them reports progress too."""

    def __init__(self, err: TextIO, *, quiet: bool) -> None:
        self.err = err
        self.quiet = quiet
        self.tty = err.isatty()
        self._last = 0.0
        self._interval = 0.1 if self.tty else 5.0
        self._latest: Progress | None = None
        self._printed: Progress | None = None

    def __call__(self, p: Progress) -> None:
        if self.quiet:
            return
        self._latest = p
        t = time.monotonic()
        if t - self._last < self._interval:
            return
        self._last = t
        self._write(p)

    def finish(self) -> None:
        if self.quiet or self._latest is None:
            return
        if self._latest != self._printed:
            self._write(self._latest)
        if self.tty:
            self.err.write("\n")
            self.err.flush()

    def _write(self, p: Progress) -> None:
        self._printed = p
        counter = f"{p.phase} {p.phase_done}/{p.phase_total}" if p.phase else f"{p.done}/{p.total}"
        line = f"[{counter}] vulnerable {p.vulnerable} unjudged {p.unjudged}"
        if p.controls:
            line += f" controls {p.controls}"
        self.err.write(("\r\x1b[2K" + line) if self.tty else (line + "\n"))
        self.err.flush()
