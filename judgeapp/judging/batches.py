"""Work on a run's rows a batch at a time, so that memory stays flat however many cases a run has: a
100,000-case test set is stored, planned and reported without 100,000 model instances alive at once."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

# Rows read from or written to the database at once when a whole run's units or cases are walked.
ROWS_AT_ONCE = 1000


def batched(items: Iterable[T], size: int = ROWS_AT_ONCE) -> Iterator[list[T]]:
    """Consecutive lists of at most `size` items (itertools.batched, which Python 3.11 lacks)."""
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def ids_in_order(queryset, size: int = ROWS_AT_ONCE) -> Iterator[int]:
    """The primary keys of `queryset` in ascending order, read `size` at a time by key (each read a short
    query of its own: no cursor held open while the caller writes, and nothing missed or read twice when
    rows leave the queryset meanwhile)."""
    last = None
    while True:
        page = queryset if last is None else queryset.filter(pk__gt=last)
        ids = list(page.order_by("pk").values_list("pk", flat=True)[:size])
        yield from ids
        if len(ids) < size:
            return
        last = ids[-1]


def rows_by_key(queryset, key: str, fields: tuple[str, ...], size: int = ROWS_AT_ONCE) -> Iterator[tuple]:
    """The `fields` of `queryset`'s rows in ascending order of `key` (unique among them: a case's
    position in its test set), read `size` at a time by key like `ids_in_order`. A planner writes between
    the pages it reads: a cursor left open over them would keep its read transaction, and on SQLite a write
    from inside a read that another connection's write has outdated fails at once ("database is locked",
    whatever the busy timeout)."""
    last = None
    while True:
        page = queryset if last is None else queryset.filter(**{f"{key}__gt": last})
        rows = list(page.order_by(key).values_list(key, *fields)[:size])
        for row in rows:
            yield row[1:]
        if len(rows) < size:
            return
        last = rows[-1][0]
