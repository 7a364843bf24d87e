"""A judge's max_concurrency across threads, processes and machines: the slot limiter the judge client takes a
slot from for every call (judgeapp/judging/client.py: `with limiter(name, max_concurrency, seconds=...)`).

One interface, `SlotLimiter`: `acquire(name, max_concurrency)` gives a `Slot`, `release(slot)` gives it back.
One backend per deployment, chosen by `limiter_kind()`: `RedisSlotLimiter` when the broker is Redis (the
workers reach it anyway; no database write per call), else `DatabaseSlotLimiter` (JudgeSlot rows, leased with
judging/leases.py). A slot is leased for twice the longest its call may take: a holder that dies loses it
within that time, and at once on its own host (its process is gone).

Waiting for a busy judge is a plain poll with a short jittered pause. A service error while taking or giving
back a slot (the database or Redis out of reach) is not the judge's: `judging/outages.py` retries it until
the service returns and, past its bound, raises ServiceUnavailable, which the judge client passes on
untouched. A slot whose release could not be written lapses by its lease.
"""

from __future__ import annotations

import contextvars
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db.models import BooleanField, ExpressionWrapper

from judgeapp.judging.errors import ServiceUnavailable
from judgeapp.judging.leases import SLOT, lease_seconds
from judgeapp.judging.outages import through_outage
from judgeapp.judging.workers import claimer_is_dead, worker_identity
from judgeapp.judging.writeturn import write_turn
from judgeapp.models import JudgeSlot

log = logging.getLogger(__name__)

_before_waiting: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "judgeapp_before_waiting", default=None
)


@contextmanager
def before_waiting_for_a_slot(callback: Callable[[], None]):
    """Inside this block, a call that finds every slot of its judge busy runs `callback()` before it waits
    (once per call that waits). A worker's batch gives back its unstarted units there: held by a process that
    waits for a slot, they would idle while another process has none to judge."""
    reset = _before_waiting.set(callback)
    try:
        yield
    finally:
        _before_waiting.reset(reset)


@dataclass(frozen=True)
class Slot:
    """A slot held: whose (`holder`, unique per call), of which judge, the database row it is (`pk`; None on
    Redis) and how long its lease runs."""

    name: str
    holder: str
    seconds: float
    pk: int | None = None


class SlotLimiter:
    """Take one of a judge's `max_concurrency` slots before a call and give it back after. A backend says how
    to take a free slot (`_take`, None when every one is busy) and give one back (`_give_back`); waiting and
    outages are handled here, the same for both."""

    # A waiter looks again after this long (jittered). With several waiters polling, a freed slot is taken
    # within a fraction of it (a few ms against a 0.2 s call). 50 ms saved no measurable CPU (each take and
    # release is a query anyway), and a slot would stand idle longer.
    poll_seconds = 0.02

    def acquire(self, name: str, max_concurrency: int, *, seconds: float | None = None) -> Slot:
        """A slot of judge `name`, waiting while all `max_concurrency` are busy. `seconds`: the longest the call
        may hold it (its deadline); the lease runs twice that (LEASE_SECONDS when not given)."""
        holder = f"{worker_identity()}:{uuid.uuid4().hex[:8]}"
        lease = 2 * seconds if seconds else lease_seconds()
        limit = max(1, max_concurrency)
        what = f"taking a slot of judge {name!r}"
        called_back = False
        while (slot := through_outage(lambda: self._take(name, limit, holder, lease), what=what)) is None:
            if not called_back:
                called_back = True
                callback = _before_waiting.get()
                if callback is not None:
                    callback()
            time.sleep(self.poll_seconds * random.uniform(0.5, 1.5))
        return slot

    def release(self, slot: Slot) -> None:
        """Give the slot back. While the service is out of reach this waits for it, for at most the slot's
        lease (by then the slot has lapsed anyway), and never raises: the call it guarded has its reply."""
        try:
            through_outage(
                lambda: self._give_back(slot), what=f"giving back a slot of judge {slot.name!r}", give_up_after=slot.seconds
            )
        except ServiceUnavailable as exc:
            log.warning("%s; the slot lapses by its lease", exc)

    @contextmanager
    def __call__(self, name: str, max_concurrency: int, *, seconds: float | None = None):
        slot = self.acquire(name, max_concurrency, seconds=seconds)
        try:
            yield slot
        finally:
            self.release(slot)

    def _take(self, name: str, max_concurrency: int, holder: str, seconds: float) -> Slot | None:
        raise NotImplementedError

    def _give_back(self, slot: Slot) -> None:
        raise NotImplementedError


class _Every:
    """True at most once per `seconds` for each key: looking for dead holders costs a query and a look at
    each holder's process, not worth doing on every poll."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def due(self, key: str) -> bool:
        now = time.monotonic()
        with self._lock:
            if now - self._last.get(key, float("-inf")) < self.seconds:
                return False
            self._last[key] = now
            return True


class DatabaseSlotLimiter(SlotLimiter):
    """Slots as JudgeSlot rows (judge, slot number), leased with the one lease (judging/leases.py: `SLOT`): a
    call takes a free or lapsed row with a conditional UPDATE and gives it back after. The backend on SQLite
    and on any database whose broker is not Redis. On SQLite a slot's take and release queue for the write lock on
    the write turn (judging/writeturn.py), not in SQLite's busy handler: a release that slept there kept its
    slot idle."""

    def __init__(self):
        self._dead_check = _Every(1.0)

    def _take(self, name: str, max_concurrency: int, holder: str, seconds: float) -> Slot | None:
        rows = JudgeSlot.objects.filter(judge_name=name, slot__lt=max_concurrency)
        for _ in range(2):  # again at once after making missing rows or taking back dead holders' slots
            free_now = ExpressionWrapper(SLOT.free(), output_field=BooleanField())
            slots = list(rows.annotate(free=free_now).values_list("pk", "free", "holder"))
            held = [pk for pk, _, slot_holder in slots if slot_holder == holder]
            if held:  # a take tried again after its answer was lost: the slot it took is this caller's
                return Slot(name=name, holder=holder, seconds=seconds, pk=held[0])
            if len(slots) < max_concurrency:  # a judge's first call, or a flushed database: make its rows
                JudgeSlot.objects.bulk_create(
                    [JudgeSlot(judge_name=name, slot=i) for i in range(max_concurrency)], ignore_conflicts=True
                )
                continue
            # Every caller reads the same free slots; trying them in a random order keeps callers from racing
            # for the same row (each lost race is another write).
            free = [pk for pk, is_free, _ in slots if is_free]
            random.shuffle(free)
            for pk in free[:4]:
                with write_turn():  # on SQLite: see judging/writeturn.py for why, and what it measured
                    taken = SLOT.take(JudgeSlot.objects.filter(pk=pk), holder=holder, seconds=seconds)[1]
                if taken:
                    return Slot(name=name, holder=holder, seconds=seconds, pk=pk)
            # Every slot busy (or the races for the free ones lost). Once a second, a slot whose holder is a dead
            # process of this host is taken back.
            if free or not (self._dead_check.due(name) and self._take_back_from_the_dead(rows, name)):
                return None
        return None

    @staticmethod
    def _take_back_from_the_dead(rows, name: str) -> int:
        """Free the slots held by a dead process of this host (a SIGKILLed worker never gives its slot back):
        its successor must not wait for the lease."""
        freed = sum(SLOT.release(rows.filter(pk=pk), claim) for pk, claim in SLOT.lapsed(rows))
        if freed:
            log.warning("judge %s: took back %d slot(s) whose holder is gone", name, freed)
        return freed

    def _give_back(self, slot: Slot) -> None:
        with write_turn():
            SLOT.release(JudgeSlot.objects.filter(pk=slot.pk), slot.holder)


class RedisSlotLimiter(SlotLimiter):
    """Slots as a Redis sorted set per judge (holder -> lease deadline), in the Redis the workers use as their
    broker. One script takes a slot atomically after dropping lapsed leases (on Redis's clock, so the
    machines' clocks don't matter); a slot held by a dead process of this host is taken back when a caller
    finds every slot busy. No database write per call.

    Redis's own client retries are turned off: the outage policy (judging/outages.py) is the one that waits.
    A Redis restarted without persistence has forgotten the slots held at the time: for the length of the
    calls then in flight, the judge may see up to twice its limit."""

    _ACQUIRE = """
    local t = redis.call('TIME')
    local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    -- A holder that has the slot already (a take tried again after its answer was lost) keeps it.
    if redis.call('ZSCORE', KEYS[1], ARGV[3]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
        redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
        return 1
    end
    return 0
    """

    def __init__(self, url: str):
        import redis

        self.redis = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5, retry=None)
        self._acquire = self.redis.register_script(self._ACQUIRE)
        self._dead_check = _Every(1.0)

    @staticmethod
    def key(name: str) -> str:
        return f"judgeapp:judge-slots:{name}"

    def _take(self, name: str, max_concurrency: int, holder: str, seconds: float) -> Slot | None:
        key = self.key(name)
        args = [max_concurrency, seconds, holder]
        if self._acquire(keys=[key], args=args) or (self._take_back_from_the_dead(key) and self._acquire(keys=[key], args=args)):
            return Slot(name=name, holder=holder, seconds=seconds)
        return None

    def _take_back_from_the_dead(self, key: str) -> bool:
        if not self._dead_check.due(key):
            return False
        dead = [holder for holder in (member.decode() for member in self.redis.zrange(key, 0, -1)) if claimer_is_dead(holder)]
        return bool(dead) and bool(self.redis.zrem(key, *dead))

    def _give_back(self, slot: Slot) -> None:
        self.redis.zrem(self.key(slot.name), slot.holder)


def limiter_kind(*, configured: str | None = None, broker_url: str | None = None) -> str:
    """redis when Redis is the broker, else database; JUDGE_LIMITER=redis|database overrides. The arguments
    default to the settings."""
    configured = settings.JUDGE_LIMITER if configured is None else configured
    broker_url = settings.CELERY_BROKER_URL if broker_url is None else broker_url
    if configured == "host":
        log.warning("JUDGE_LIMITER=host is deprecated (its lock files are gone): the database limiter is used")
        return "database"
    if configured:
        return configured
    if broker_url.startswith(("redis://", "rediss://")):
        return "redis"
    return "database"


def limiter_for_settings() -> SlotLimiter:
    if limiter_kind() == "redis":
        return RedisSlotLimiter(settings.JUDGE_LIMITER_REDIS_URL or settings.CELERY_BROKER_URL)
    return DatabaseSlotLimiter()
