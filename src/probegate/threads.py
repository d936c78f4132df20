"""A thread pool whose threads never hold the process open: what a stopped scan abandons.

``concurrent.futures.ThreadPoolExecutor`` joins its threads when the interpreter exits, so one
worker still blocked in an agent's 20 s reply holds a cancelled scan until the reply comes
(or the target's timeout), after the report is written and before the job's outputs are
published: GitHub's SIGKILL comes 10 s after its SIGINT. Here the threads are daemons: a
scan that stops abandons what is in flight instead of waiting for it (docs/targets.md,
"Stopping"), and the process ends when its main thread does. Work is only ever handed to
them by code that waits for it while the scan runs; nothing they do after the scan matters.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_Work = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonExecutor(Executor):
    """At most ``max_workers`` daemon threads, started as work arrives and kept for more (as
    ``ThreadPoolExecutor`` does: a thread that finished its work is counted idle, and new
    work starts a thread only when none is)."""

    def __init__(self, max_workers: int, name: str) -> None:
        self._max = max(1, max_workers)
        self._name = name
        self._queue: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new work after shutdown")
            self._queue.put((future, fn, args, kwargs))
            if not self._idle.acquire(timeout=0) and len(self._threads) < self._max:
                name = f"{self._name}-{len(self._threads) + 1}"
                thread = threading.Thread(target=self._work, name=name, daemon=True)
                thread.start()
                self._threads.append(thread)
        return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                self._queue.put(None)  # the next thread stops too
                return
            future, fn, args, kwargs = item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # the caller's to handle, through the future
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del item, future, fn, args, kwargs
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No new work; ``cancel_futures`` cancels what has not started; ``wait`` waits for the
        threads to end (after what is queued), which a stopping scan never asks for."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        if cancel_futures:
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        self._queue.put(None)
        if wait:
            for thread in threads:
                thread.join()
