"""What work does when a service it needs (the database, Redis) is out of reach: it waits for the service to
come back, retrying with backoff, and never blames the judge.

`through_outage(call, what=...)` runs `call()`; a service error (`is_service_error`) is retried after a
growing, jittered pause (0.1 s doubling to 5 s) until the call succeeds, logged when the outage starts, once a
minute while it lasts and when it ends. Past `SERVICE_OUTAGE_SECONDS` (10 minutes by default), or when a
Celery task's soft time limit cuts the wait short, it raises `ServiceUnavailable`: whoever holds a unit gives
it back to pending, to be judged after the service returns, and nothing is recorded against the judge.

Any other error is the caller's and passes through at once. The policy is kept apart from what it protects (a
judge's slot limiter uses it; so can any claim or record that must outlive an outage), as Sentry keeps
`TimedRetryPolicy` apart from its locks.
"""

from __future__ import annotations

import logging
import random
import sys
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections

from judgeapp.judging.errors import ServiceUnavailable
from judgeapp.judging.workers import soft_time_limit

log = logging.getLogger(__name__)

T = TypeVar("T")

FIRST_PAUSE_SECONDS = 0.1
LONGEST_PAUSE_SECONDS = 5.0
LOG_EVERY_SECONDS = 60.0
# What SQLite says about a database without tables: a missing migration, not an outage (PostgreSQL says it
# with a ProgrammingError, which is no service error anyway).
_NOT_AN_OUTAGE = ("no such table", "no such column")


def is_service_error(exc: BaseException) -> bool:
    """Whether `exc` says a service is out of reach or busy (a refused or dropped connection, a database that is
    locked or restarting, Redis gone or timing out), rather than a bug or bad data."""
    if isinstance(exc, (OperationalError, InterfaceError)):
        return not any(words in str(exc) for words in _NOT_AN_OUTAGE)
    # Redis is imported only by the deployments that use it: a process that never loaded it cannot raise its errors.
    redis_errors = sys.modules.get("redis.exceptions")
    return redis_errors is not None and isinstance(exc, (redis_errors.ConnectionError, redis_errors.TimeoutError))


def _fresh_connection(exc: BaseException) -> bool:
    """Drop this thread's database connection after a database error, so the next try connects anew. False when
    the connection is inside a transaction: the transaction is broken, and no retry here can mend it."""
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return True  # Redis's client reconnects by itself
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.in_atomic_block:
        return False
    connection.close()
    return True


def through_outage(
    call: Callable[..., T], /, *args, what: str, give_up_after: float | None = None, sleep: Callable[[float], None] = time.sleep,
    **kwargs
) -> T:
    """`call(*args, **kwargs)`, retried through a service outage for at most `give_up_after` seconds
    (SERVICE_OUTAGE_SECONDS); then ServiceUnavailable, saying `what` was being done."""
    limit = settings.SERVICE_OUTAGE_SECONDS if give_up_after is None else give_up_after
    started = logged = None
    pause = FIRST_PAUSE_SECONDS
    while True:
        try:
            result = call(*args, **kwargs)
        except Exception as exc:
            if not is_service_error(exc):
                raise
            now = time.monotonic()
            if started is None:
                started = logged = now
                log.warning("%s: a service is out of reach (%s); waiting for it to come back", what, _one_line(exc))
            elif now - logged >= LOG_EVERY_SECONDS:
                logged = now
                log.warning("%s: still waiting for the service after %.0f s (%s)", what, now - started, _one_line(exc))
            if not _fresh_connection(exc) or now - started >= limit:
                raise ServiceUnavailable(
                    f"{what}: the service stayed out of reach for {now - started:.0f} s ({_one_line(exc)})"
                ) from exc
            try:
                sleep(min(pause, max(0.0, started + limit - now)) * random.uniform(0.75, 1.25))
            except soft_time_limit() as stopped:
                # The task's time ran out while it waited for the service: still the service's fault, not the judge's.
                raise ServiceUnavailable(
                    f"{what}: the task's time limit came while the service was out of reach ({_one_line(exc)})"
                ) from stopped
            pause = min(pause * 2, LONGEST_PAUSE_SECONDS)
            continue
        if started is not None:
            log.warning("%s: the service is back after %.1f s", what, time.monotonic() - started)
        return result


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
