"""When the database is out of reach while a unit is claimed, judged or recorded, the work waits for it to come
back instead of failing: a database fault is the database's, never the judge's.

A judge reply that has been paid for must not be lost to a database blip: the response cache keeps it once the
database is back, and the results judged meanwhile are written then, in memory until that moment. So the
claim, the record and the cache's read and write are called through `database_retry`: an OperationalError or
InterfaceError (the server refused or dropped the connection, SQLite's file is locked) closes the broken
connection and tries again, with a backoff, until the database answers or DATABASE_RETRY_SECONDS have passed
(then the error is raised: a worker is not held forever). A warning is logged once a minute while it waits, and
once when it is back.

Nested calls share one deadline (a cache write inside a unit's judging waits no longer than the unit does).
Inside a transaction nothing is retried: the transaction is lost with its connection, and only whoever opened
it can start it again.
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections

log = logging.getLogger(__name__)

DATABASE_ERRORS = (OperationalError, InterfaceError)

# The first wait, doubled after each failed try up to the longest. The longest wait is how late, at most, a
# waiting process sees the database back: short, so that a judge reply waiting to be cached is stored before
# another worker could claim its unit and ask again.
BACKOFF_FIRST_SECONDS = 0.1
BACKOFF_MAX_SECONDS = 2.0
LOG_EVERY_SECONDS = 60.0

_state = threading.local()  # this thread's deadline, set by the outermost call
_last_warning = [0.0]  # when this process last said the database was out of reach


def database_retry(fn, /, *args, what: str, **kwargs):
    """`fn(*args, **kwargs)`, called again while the database is out of reach (see the module's docstring).
    `what` names the work in the log: "recording 16 results"."""
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.in_atomic_block:
        return fn(*args, **kwargs)
    outer = getattr(_state, "deadline", None)
    deadline = outer if outer is not None else time.monotonic() + settings.DATABASE_RETRY_SECONDS
    _state.deadline = deadline
    delay, failed = BACKOFF_FIRST_SECONDS, False
    try:
        while True:
            try:
                result = fn(*args, **kwargs)
            except DATABASE_ERRORS as exc:
                now = time.monotonic()
                if now >= deadline:
                    log.error("%s: the database has been out of reach too long; giving up (%s)", what, exc)
                    raise
                if now - _last_warning[0] >= LOG_EVERY_SECONDS:
                    _last_warning[0] = now
                    log.warning("%s: the database is out of reach; trying again until it is back (%s)", what, exc)
                failed = True
                _connection_close(connection)
                time.sleep(min(delay, deadline - now))
                delay = min(delay * 2, BACKOFF_MAX_SECONDS)
                continue
            if failed:
                _last_warning[0] = 0.0
                log.warning("%s: the database is back", what)
            return result
    finally:
        if outer is None:
            _state.deadline = None


def _connection_close(connection) -> None:
    """Drop the broken connection: the next query opens a new one."""
    try:
        connection.close()
    except DATABASE_ERRORS:
        pass  # closing a dead connection may fail; Django drops it all the same
