"""Who is doing a piece of work, and whether that process is still alive.

A claim records `<host>:<pid>:<process start time>`. On the same host a dead claimer is recognised at once
(no such pid, or a pid reused by a later process); on another host its lease has to run out.
"""

import os
import socket
import sys
import threading

_HOST = socket.gethostname()


def _start_time(pid: int) -> str:
    """The process's start time, or "0" when it is gone or a zombie (dead, not yet reaped: in a container
    whose first process reaps nothing, a killed worker's pool processes stay zombies)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            # Field 22 (starttime) comes after the command name, which may itself hold spaces: split after ')'.
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return "0"
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return "0"
    return fields[19]


_own_start_time: dict[int, str] = {}  # by pid: a forked child gets its own entry


def worker_identity() -> str:
    pid = os.getpid()
    # Read /proc once per process: this is called for every judgment and every judge call.
    start = _own_start_time.get(pid)
    if start is None:
        start = _own_start_time[pid] = _start_time(pid)
    return f"{_HOST}:{pid}:{start}:{threading.get_ident()}"


def claimer_is_dead(identity: str) -> bool:
    """True only when the claimer was on this host and its process is gone (or the pid now belongs to
    another process). False when unsure: a remote claimer is trusted until its lease expires."""
    parts = identity.split(":")
    if len(parts) < 3 or parts[0] != _HOST:
        return False
    try:
        pid = int(parts[1])
    except ValueError:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return _start_time(pid) != parts[2]


def soft_time_limit() -> tuple[type[BaseException], ...]:
    """What `except` catches for a Celery worker's soft time limit: billiard's exception, or nothing (an empty
    tuple matches no exception) in a process that never loaded billiard, which cannot raise it. Looked up
    when the exception is raised, so the run machinery does not import Celery to start."""
    module = sys.modules.get("billiard.exceptions")
    return (module.SoftTimeLimitExceeded,) if module is not None else ()
