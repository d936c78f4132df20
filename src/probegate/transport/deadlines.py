"""The deadline watchdog: a request in flight ends at its deadline, or when its scan stops.

A socket timeout alone resets on every byte, so a server dripping one byte a second would hold
a worker for ever; and a scan that stops (Ctrl-C, a cancelled CI job) must not wait for the
replies it will never use. One watchdog thread per HTTP client shuts down the socket of any
request still running past its deadline, or whose scan's limiter closed (a request is watched
with the limiter it spends from: transport/limiter.py's ``when_closed``).

``shutdown`` (not ``close``) wakes a thread blocked in ``recv`` on Linux and macOS; the
blocked read then fails and the client reports why (:attr:`Watch.expired`). Watches are
deactivated under the same lock before their connection goes back to the pool, so a later
request that reuses the connection can never be shut down by an old deadline.
"""

from __future__ import annotations

import contextlib
import heapq
import http.client
import itertools
import socket
import threading
import time
import weakref
from dataclasses import dataclass

from probegate.transport.limiter import RequestLimiter


@dataclass(eq=False)
class Watch:
    """One in-flight request: when it must be done, and the connection carrying it."""

    deadline: float
    conn: http.client.HTTPConnection | None = None
    active: bool = True
    expired: bool = False
    # The limiter the request spends from (its scan): when it closes, the request ends.
    limiter: RequestLimiter | None = None


class Watchdog:
    """Shuts down the socket of any request past its deadline or whose scan stopped."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._heap: list[tuple[float, int, Watch]] = []
        self._counter = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False
        # Limiters this watchdog has asked to be told about, once each.
        self._told: weakref.WeakSet[RequestLimiter] = weakref.WeakSet()

    def watch(self, deadline: float, limiter: RequestLimiter | None = None) -> Watch:
        item = Watch(deadline, limiter=limiter, expired=limiter is not None and limiter.closed)
        with self._lock:
            heapq.heappush(self._heap, (deadline, next(self._counter), item))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="probegate-deadlines", daemon=True
                )
                self._thread.start()
            # The loop sleeps until the earliest deadline; only a new earliest one changes
            # that. Waking it for every request made 64 workers queue on this lock behind it.
            if self._heap[0][2] is item:
                self._lock.notify()
            ask = limiter is not None and limiter not in self._told
            if limiter is not None and ask:
                self._told.add(limiter)
        if limiter is not None and ask:
            limiter.when_closed(lambda: self.stop_for(limiter))
        return item

    def release(self, item: Watch) -> None:
        with self._lock:
            item.active = False
            item.conn = None

    def stop_for(self, limiter: RequestLimiter) -> None:
        """End every request in flight that spends from ``limiter``: its scan stopped."""
        with self._lock:
            for _deadline, _n, item in self._heap:
                if item.active and item.limiter is limiter:
                    _expire(item)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify()

    def _loop(self) -> None:
        with self._lock:
            while not self._closed:
                while self._heap and not self._heap[0][2].active:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._lock.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._lock.wait(wait)
                    continue
                _, _, item = heapq.heappop(self._heap)
                _expire(item)


def _expire(item: Watch) -> None:
    item.expired = True
    sock = getattr(item.conn, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed: nothing to wake
            sock.shutdown(socket.SHUT_RDWR)
