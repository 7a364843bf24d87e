"""On SQLite, the run machinery's frequent writes (a batch's claim, a batch's record, a cached response, a judge
slot's take and release) queue for the database's write lock on a lock file of this host, not in SQLite's busy
handler. The one bypass of SQLite's own locking, kept because a bench at a real judge latency needs it:

SQLite lets one writer in at a time, and a writer that finds the lock taken sleeps 1, 2, 5, 10, … up to
100 ms between tries, however soon the lock is free again: a slot's release sleeping there keeps the judge's
slot idle. Waiters on an exclusive `flock` sleep in the kernel and the next one is woken as soon as the lock
is released; the kernel drops a dead process's lock at once. (What it measured: docs/speed.md, "The write
turn".)

Only a write in autocommit takes its turn here: inside a transaction the connection already holds the
write lock (IMMEDIATE transactions) or waits for it as any other writer, so no process ever waits here
while it holds SQLite's lock. Writers that do not take a turn (the web, recovery) still get in through
the busy handler. Other databases: nothing to do.
"""

import fcntl
import os
import threading
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connections

_held = threading.local()  # a write inside another's turn, in the same thread, does not queue again
_lock_files: dict[str, str] = {}


def _lock_file() -> str:
    """DATA_DIR/locks/sqlite-writes.lock, its folder made on first use."""
    data_dir = str(settings.DATA_DIR)
    path = _lock_files.get(data_dir)
    if path is None:
        directory = Path(data_dir) / "locks"
        directory.mkdir(parents=True, exist_ok=True)
        path = _lock_files[data_dir] = str(directory / "sqlite-writes.lock")
    return path


@contextmanager
def write_turn(using: str = "default"):
    connection = connections[using]
    if connection.vendor != "sqlite" or connection.in_atomic_block or getattr(_held, "depth", 0):
        yield
        return
    fd = os.open(_lock_file(), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _held.depth = 1
        try:
            yield
        finally:
            _held.depth = 0
    finally:
        os.close(fd)  # closing drops the lock: the next writer goes
