"""Progress on stderr while attempts run (docs/targets.md, "Progress").

On a terminal, one live line: attempts done of planned, the time elapsed, the rate in attempts
per second, the time left at that rate, the requests sent and, once a reply has been priced, the
dollars spent; redrawn as attempts complete (at most ten times a second) and every second while
they take their time. In a CI log (not a terminal) the same facts as a plain line every
:data:`LOG_INTERVAL_SECONDS`, whether attempts complete or not, so a long scan shows it is alive
without flooding the log. The clock and the wait between lines are injectable: the tests drive
both by hand, with no sleep.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TextIO

from probegate.engine.run_state import Progress

# A terminal's live line: redrawn at most this often as attempts complete, and at least this
# often while they do not (so the elapsed time and the ETA stay current).
TTY_REDRAW_SECONDS = 0.1
TTY_TICK_SECONDS = 1.0
# A log's plain line: one at this fixed interval.
LOG_INTERVAL_SECONDS = 10.0


def clock_text(seconds: float) -> str:
    """``75`` -> ``1:15``; ``3725`` -> ``1:02:05``."""
    whole = max(0, int(seconds + 0.5))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class ProgressPrinter:
    """The runner's progress callback, a ticker (:meth:`start`, :meth:`tick`) and the final
    line once the run is over (:meth:`finish`): controls may still run after the last attempt,
    and each of them reports progress too."""

    def __init__(
        self,
        err: TextIO,
        *,
        quiet: bool,
        clock: Callable[[], float] = time.monotonic,
        tty: bool | None = None,
    ) -> None:
        self.err = err
        self.quiet = quiet
        self.tty = err.isatty() if tty is None else tty
        self.clock = clock
        self.interval = TTY_TICK_SECONDS if self.tty else LOG_INTERVAL_SECONDS
        self._start = clock()
        self._redrawn: float | None = None
        # Attempts already done when this process started (a resumed scan): not its rate.
        self._resumed: int | None = None
        self._latest: Progress | None = None
        self._printed: tuple[Progress, str] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what the runner calls -----------------------------------------------------------
    def __call__(self, p: Progress) -> None:
        if self.quiet:
            return
        with self._lock:
            if self._resumed is None:
                self._resumed = max(0, p.done - 1)
            self._latest = p
            if not self.tty:
                return  # a log gets its line at the fixed interval (tick)
            now = self.clock()
            if self._redrawn is not None and now - self._redrawn < TTY_REDRAW_SECONDS:
                return
            self._write(p, now)

    # -- the ticker ----------------------------------------------------------------------
    def start(self) -> None:
        """Tick on a thread of its own until :meth:`finish`."""
        if self.quiet or self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self.run_ticks, args=(self._stop.wait,), name="progress", daemon=True
        )
        self._thread.start()

    def run_ticks(self, wait: Callable[[float], bool]) -> None:
        """Write a line every ``interval`` until ``wait`` says to stop (``Event.wait``)."""
        while not wait(self.interval):
            self.tick()

    def tick(self) -> None:
        """The line as it stands now; nothing before the first attempt has completed."""
        with self._lock:
            if self._latest is not None:
                self._write(self._latest, self.clock())

    def finish(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.quiet or self._latest is None:
            return
        with self._lock:
            if self._printed is None or self._printed[0] != self._latest:
                self._write(self._latest, self.clock())
        if self.tty:
            self.err.write("\n")
            self.err.flush()

    # -- the line ------------------------------------------------------------------------
    def line(self, p: Progress, now: float) -> str:
        """What the progress says at ``now``."""
        elapsed = max(0.0, now - self._start)
        if p.phase:
            counter = f"{p.phase} {p.phase_done}/{p.phase_total}"
            done, total = p.phase_done, p.phase_total
        else:
            counter = f"{p.done}/{p.total}"
            done, total = p.done, p.total
        fresh = p.done - (self._resumed or 0)
        parts = [f"[{counter}]", f"{clock_text(elapsed)} elapsed"]
        if elapsed > 0 and fresh > 0:
            rate = fresh / elapsed
            parts.append(f"{rate:.1f} attempts/s")
            if total > done:
                parts.append(f"ETA {clock_text((total - done) / rate)}")
        parts.append(f"{p.requests} requests")
        if p.cost_usd > 0:
            parts.append(f"${p.cost_usd:.4f} spent")
        counts = f"vulnerable {p.vulnerable} unjudged {p.unjudged}"
        parts.append(counts + (f" controls {p.controls}" if p.controls else ""))
        return " · ".join(parts)

    def _write(self, p: Progress, now: float) -> None:
        line = self.line(p, now)
        self._printed = (p, line)
        self._redrawn = now
        self.err.write(("\r\x1b[2K" + line) if self.tty else (line + "\n"))
        self.err.flush()
