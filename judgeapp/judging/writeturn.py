"""On SQLite, the run machinery's frequent writes (a batch's claim, a batch's record, a cached response)
queue for the database's write lock on a lock file of this host, not in SQLite's busy handler.

SQLite lets one writer in at a time, and a writer that finds the lock taken sleeps 1, 2, 5, 10, … up to
100 ms between tries, however soon the lock is free again. With 16 worker processes writing hundreds of
times a second, most of a process's time went to those sleeps (bench/overhead.py: the cached-response
INSERT, a fraction of a millisecond of work, took tens of milliseconds of waiting). Waiters on an
exclusive `flock` sleep in the kernel and the next one is woken as soon as the lock is released.

Only a write in autocommit takes its turn here: inside a transaction the connection already holds the
write lock (IMMEDIATE transactions) or waits for it as any other writer, so no process ever waits here
while it holds SQLite's lock. Writers that do not take a turn (the web, recovery) still get in through
the busy handler. Other databases: nothing to do.
"""

import fcntl
import os
import threading
from contextlib import contextmanager

from django.conf import settings
from django.db import connections

from judgeapp.judging.limiters import lock_dir

_held = threading.local()  # a write inside another's turn, in the same thread, does not queue again


@contextmanager
def write_turn(using: str = "default"):
    connection = connections[using]
    if connection.vendor != "sqlite" or connection.in_atomic_block or getattr(_held, "depth", 0):
        yield
        return
    fd = os.open(lock_dir() / "sqlite-writes.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _held.depth = 1
        try:
            yield
        finally:
            _held.depth = 0
    finally:
        os.close(fd)  # closing drops the lock: the next writer goes
