"""One run at a time per scan: an exclusive lock beside the scan's journal.

Two processes running one scan (a second ``--resume`` while the first still runs, or the same
scan started twice under a pinned clock, which repeats scan ids) would both send the attempts
neither has journaled yet, append them twice to one journal, and each spend ``--max-requests``
and ``--budget-usd`` on its own. So a run holds ``lock`` in the scan's store directory from
before it reads or truncates the journal until its report is written, and a second run is
refused (exit 2) with one line naming the holder (docs/targets.md, "Resume").

The lock is ``flock`` on an open file: the kernel releases it when its holder ends, however it
ends (``kill -9`` included), so a lock left by a dead process is simply free, and taking it is
one atomic call, never a check and then a write another process can slip between. The file
only says who holds it (pid, host, since when) for the refusal's message; it is emptied on
release and never removed (removing it would let a third process lock a new file at the same
name while a second holds the old one). A file that still names a holder when the lock is
taken was left by a run that ended without releasing it: the new run says so and takes over.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from probegate.clock import iso, real_now
from probegate.errors import UsageError
from probegate.files import PRIVATE_FILE, make_dirs
from probegate.models.store_layout import ScanFiles

# Enough for the holder's line; a larger file is not ours to trust.
_HOLDER_BYTES = 4096
_HOLDER_WAIT, _HOLDER_WAITS = 0.05, 40
# Filesystems where flock cannot work (some network mounts): the scan runs, unlocked, and says so.
_NO_LOCKING = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL})


class ScanBusy(UsageError):
    """Another process is running this scan (exit 2)."""


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a scan's lock: written into the lock file for the next one to read."""

    pid: int
    host: str
    since: str

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, since {self.since}"


class ScanLock:
    """The held lock of one scan; :meth:`release` (or leaving the ``with``) frees it."""

    def __init__(self, fd: int | None, path: Path, taken_over: Holder | None, warning: str):
        self._fd = fd
        self.path = path
        # The run that held the lock before and ended without releasing it (killed), if any.
        self.taken_over = taken_over
        # Why the scan runs without a lock ("" when it holds one).
        self.warning = warning

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)  # nobody holds it now; the file stays (see the module's doc)
        except OSError:
            pass
        finally:
            os.close(fd)  # closing the last descriptor releases the flock

    def __enter__(self) -> ScanLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def lock_scan(directory: Path, scan_id: str) -> ScanLock:
    """Take scan ``scan_id``'s lock in ``directory`` (its store directory) or refuse, naming
    the holder: :class:`ScanBusy`."""
    make_dirs(directory, private=True)
    path = ScanFiles(directory).lock
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, PRIVATE_FILE)
    except OSError as exc:
        raise UsageError(f"{path}: cannot open the scan's lock: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _live_holder(fd)
        # A holder writes its line just after it takes the lock: one that took it a moment
        # ago (a run started at the same time) has not yet, and the file may still name the
        # run before it, dead (killed, its lock released by the kernel).
        for _ in range(_HOLDER_WAITS):
            if holder is not None:
                break
            time.sleep(_HOLDER_WAIT)
            holder = _live_holder(fd)
        os.close(fd)
        who = holder.describe() if holder is not None else "a process that is starting"
        raise ScanBusy(
            f"scan {scan_id} is running ({who}): one run of a scan at a time; wait for it to "
            f"end, or stop it, then 'probegate scan --resume {scan_id}'"
        ) from None
    except OSError as exc:
        if exc.errno not in _NO_LOCKING:
            os.close(fd)
            raise UsageError(f"{path}: cannot lock the scan: {exc.strerror or exc}") from None
        os.close(fd)
        return ScanLock(
            None,
            path,
            None,
            f"{path}: this filesystem cannot lock files ({exc.strerror or exc}); nothing stops "
            "a second run of this scan from running at the same time",
        )
    try:
        taken_over = _read_holder(fd)
        me = Holder(pid=os.getpid(), host=socket.gethostname(), since=iso(real_now()))
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me.__dict__, sort_keys=True).encode() + b"\n", 0)
    except BaseException:
        os.close(fd)
        raise
    return ScanLock(fd, path, taken_over, "")


def _live_holder(fd: int) -> Holder | None:
    """The holder the lock file names, unless it is a process of this host that is gone."""
    holder = _read_holder(fd)
    if holder is None or holder.host != socket.gethostname():
        return holder
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return holder  # alive, another user's
    return holder


def _read_holder(fd: int) -> Holder | None:
    """Who the lock file names, or None (empty: released, or its holder is still writing)."""
    try:
        data = json.loads(os.pread(fd, _HOLDER_BYTES, 0) or b"null")
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    pid, host, since = data.get("pid"), data.get("host"), data.get("since")
    if not isinstance(pid, int) or not isinstance(host, str) or not isinstance(since, str):
        return None
    return Holder(pid=pid, host=host, since=since)
