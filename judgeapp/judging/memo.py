"""Reads shared within one page view: a page that shows many runs (the dashboard, the releases) asks the
same calibration questions for every run of one judge — the level and policy in force, the status of a
judge configuration. Within `reads_shared()` a function marked `@shared_read` answers each distinct call
once; outside it, every call reads the database as before.

Only reads that nothing in the same view writes to are shared: the middleware opens the scope for GET and
HEAD requests (which write nothing here), never for a form's POST, which may change a policy and then
read it.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

F = TypeVar("F", bound=Callable)
_memo: ContextVar[dict | None] = ContextVar("judgeapp_shared_reads", default=None)


@contextmanager
def reads_shared() -> Iterator[None]:
    token = _memo.set({})
    try:
        yield
    finally:
        _memo.reset(token)


def reads_are_shared() -> bool:
    """True inside `reads_shared()` (a GET request's scope, for one): each read is answered once there."""
    return _memo.get() is not None


def shared_read(fn: F) -> F:
    """Answer each distinct call (keyword arguments, hashable) once within `reads_shared()`. A dict or list
    answer is copied for each caller, so one caller's change is not another's."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        memo = _memo.get()
        if memo is None:
            return fn(*args, **kwargs)
        key = (fn.__module__, fn.__qualname__, args, tuple(sorted(kwargs.items())))
        if key not in memo:
            memo[key] = fn(*args, **kwargs)
        answer = memo[key]
        return copy.deepcopy(answer) if isinstance(answer, (dict, list)) else answer

    return wrapper  # type: ignore[return-value]


class SharedReadsMiddleware:
    """Share reads within a GET or HEAD request (see the module's docstring)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        with reads_shared():
            return self.get_response(request)
