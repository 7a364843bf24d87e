import errno
import functools


class InputError(ValueError):
    """Bad input from a user (a file, a flag, a form): one line that says what to fix, never a traceback.
    The CLI prints it and exits 2; the browser shows it beside the form. Nothing has been stored."""


class DiskFull(InputError):
    """No space was left to store what was asked (on the disk, or in the database's): nothing was stored
    (the transaction rolled back, the temp files removed). The API answers 507 Insufficient Storage; a page
    shows it beside its form and a command prints it and exits 2, like bad input."""


# What says "the disk is full": the OS (no space, over the quota), SQLite (SQLITE_FULL, "database or disk
# is full") and PostgreSQL (SQLSTATE 53100 disk_full), whichever exception wraps it.
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_SQLITE_FULL = 13
_PG_DISK_FULL = "53100"


def disk_full(exc: BaseException | None) -> bool:
    """Whether an exception, or one it was raised from, says that the disk is full."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, DiskFull):
            return True
        if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
            return True
        if getattr(exc, "sqlite_errorcode", None) == _SQLITE_FULL:
            return True
        if type(exc).__name__ == "OperationalError" and "database or disk is full" in str(exc):
            return True
        if _PG_DISK_FULL in (getattr(exc, "sqlstate", None), getattr(exc, "pgcode", None)):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def disk_full_line(exc: BaseException, *, nothing_stored: bool = True) -> str:
    """The one line for a full disk: what the system said, and (when the caller knows it) that nothing was
    stored."""
    if isinstance(exc, DiskFull):
        return str(exc)
    reason = getattr(exc, "strerror", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
    stored = ": nothing was stored" if nothing_stored else ""
    return f"the disk is full ({reason}){stored}; free some space and try again"


def refused_when_disk_full(service):
    """A service that stores uploads raises DiskFull, one line, when the disk fills while it writes (its
    transaction has rolled back by then, and its own temp files are gone)."""

    @functools.wraps(service)
    def storing(*args, **kwargs):
        try:
            return service(*args, **kwargs)
        except DiskFull:
            raise
        except Exception as exc:
            if disk_full(exc):
                raise DiskFull(disk_full_line(exc)) from exc
            raise

    return storing


class ServiceUnavailable(Exception):
    """A service the work needs (the database, Redis) stayed out of reach for longer than the work waits for
    it (`judging/outages.py`: through_outage). Never the judge's failure: whoever holds a unit gives it back
    to pending, to be judged when the service returns; nothing is recorded against the judge. `str()` is one
    line: what was being done, and the service's last error."""
