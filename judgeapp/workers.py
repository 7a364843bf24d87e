"""Who is doing a piece of work, and whether that process is still alive.

A claim records `<host>:<pid>:<process start time>`. On the same host a dead claimer is recognised at once
(no such pid, or a pid reused by a later process); on another host its lease has to run out.
"""

import os
import socket
import threading

_HOST = socket.gethostname()


def _start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            # Field 22 (starttime) comes after the command name, which may itself hold spaces: split after ')'.
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "0"


_identity: tuple[int, str] | None = None


def worker_identity() -> str:
    global _identity
    pid = os.getpid()
    if _identity is None or _identity[0] != pid:  # a forked pool child has a new pid
        _identity = (pid, f"{_HOST}:{pid}:{_start_time(pid)}")
    return f"{_identity[1]}:{threading.get_ident()}"


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
