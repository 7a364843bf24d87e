"""A judge's max_concurrency across threads, processes and machines: the slot limiters the judge client
takes a slot from for every call (judgeapp/judging/client.py takes any context manager `limiter(name, n)`).

Three kinds, one chosen by `limiter_kind()` for the deployment: lock files on one host (SQLite), a Redis
sorted set (a Redis broker), or database rows (anything else). All wait the same way (`_take_or_wait`).
"""

import contextvars
import fcntl
import logging
import os
import random
import re
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from judgeapp.judging.workers import claimer_is_dead, worker_identity
from judgeapp.models import JudgeSlot

log = logging.getLogger(__name__)


def _safe(name: str) -> str:
    return re.sub(r'[^A-Za-z0-9_-]', '_', name)


_lock_dirs: dict[str, Path] = {}


def lock_dir() -> Path:
    """DATA_DIR/locks, created on first use (not on every call: a call's slot took 17 mkdir and path
    objects when every slot file's path was built afresh)."""
    data_dir = str(settings.DATA_DIR)
    directory = _lock_dirs.get(data_dir)
    if directory is None:
        directory = Path(data_dir) / "locks"
        directory.mkdir(parents=True, exist_ok=True)
        _lock_dirs[data_dir] = directory
    return directory


_before_waiting: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar("judgeapp_before_waiting", default=None)


@contextmanager
def before_waiting_for_a_slot(callback: Callable[[], None]):
    """Inside this block, a call that finds every slot of its judge busy runs `callback()` before it waits
    in line (each time it has to wait). A worker's batch gives back its unstarted units there: held by a
    process that waits for a slot, they would idle while another process has none to judge."""
    reset = _before_waiting.set(callback)
    try:
        yield
    finally:
        _before_waiting.reset(reset)


def _take_or_wait(take, gate: Path, poll_seconds: float):
    """`take()` once; while it gives None (every slot busy), wait in line: the waiters of this machine
    queue on an exclusive `flock` of `gate` and sleep in the kernel (no CPU, the GIL released); the one
    holding it calls `take()` every `poll_seconds` and hands the gate on when it has a slot. The kernel
    drops the gate of a waiter that dies. Every limiter waits this way."""
    taken = take()
    if taken is not None:
        return taken
    callback = _before_waiting.get()
    if callback is not None:
        callback()
    fd = os.open(gate, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        while (taken := take()) is None:
            time.sleep(poll_seconds)
        return taken
    finally:
        os.close(fd)  # closing drops the lock: the next waiter takes over


class _Every:
    """True at most once per `seconds` for each key (checking for dead holders costs queries)."""

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


class DatabaseSlotLimiter:
    """A judge's max_concurrency across processes and machines: a call leases one of the judge's slot
    rows with a conditional UPDATE and gives it back after. A crashed holder's lease runs out by itself;
    on the same host, a slot whose holder's process is gone is taken back as soon as a caller waits for one.
    Waiting as every limiter (`_take_or_wait`): one waiter per machine polls."""

    poll_seconds = 0.01

    def __init__(self):
        self._ensured: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        self._dead_check = _Every(1.0)

    def _release_dead_holders(self, name: str, max_concurrency: int) -> bool:
        """Free the slots of holders that were on this host and are dead (a SIGKILLed worker never gives its
        slots back, and their lease is UNIT_HARD_TIME_LIMIT long: its successor would wait that long)."""
        if not self._dead_check.due(name):
            return False
        held = JudgeSlot.objects.filter(judge_name=name, slot__lt=max_concurrency).exclude(holder="")
        released = 0
        for slot_id, holder in held.values_list("id", "holder"):
            if claimer_is_dead(holder):
                released += JudgeSlot.objects.filter(id=slot_id, holder=holder).update(holder="", leased_until=None)
        if released:
            log.warning("judge %s: took back %d slot(s) held by dead processes", name, released)
        return bool(released)

    def _ensure_slots(self, name: str, max_concurrency: int, *, force: bool = False) -> None:
        with self._lock:
            if (name, max_concurrency) in self._ensured and not force:
                return
        JudgeSlot.objects.bulk_create(
            [JudgeSlot(judge_name=name, slot=i) for i in range(max_concurrency)], ignore_conflicts=True
        )
        with self._lock:
            self._ensured.add((name, max_concurrency))

    def _take(self, name: str, max_concurrency: int, holder: str, lease) -> int | None:
        """Lease a free slot row, or None when every slot is busy."""
        for _ in range(3):  # again at once after recreating missing rows or freeing dead holders' slots
            now = timezone.now()
            free = Q(holder="") | Q(leased_until__lt=now)
            # Every caller reads the same free slots; trying them in a random order keeps callers from racing
            # for the same row (each lost race is another write on a hot table).
            candidates = list(JudgeSlot.objects.filter(free, judge_name=name, slot__lt=max_concurrency).values_list("id", flat=True))
            random.shuffle(candidates)
            for candidate in candidates[:4]:
                if JudgeSlot.objects.filter(free, id=candidate).update(holder=holder, leased_until=now + lease):
                    return candidate
            # Every slot busy, or the rows are gone (a flushed database): make sure they exist.
            if JudgeSlot.objects.filter(judge_name=name, slot__lt=max_concurrency).count() < max_concurrency:
                self._ensure_slots(name, max_concurrency, force=True)
            elif not self._release_dead_holders(name, max_concurrency):
                return None
        return None

    @contextmanager
    def __call__(self, name: str, max_concurrency: int):
        self._ensure_slots(name, max_concurrency)
        holder = f"{worker_identity()}:{uuid.uuid4().hex[:8]}"
        lease = timezone.timedelta(seconds=settings.UNIT_HARD_TIME_LIMIT)
        slot_id = _take_or_wait(
            lambda: self._take(name, max_concurrency, holder, lease), lock_dir() / f"judge-{_safe(name)}.db-gate", self.poll_seconds
        )
        try:
            yield
        finally:
            JudgeSlot.objects.filter(id=slot_id, holder=holder).update(holder="", leased_until=None)


class HostSlotLimiter:
    """A judge's max_concurrency across the processes of one machine: a call holds an exclusive `flock` on
    one of the judge's slot files under DATA_DIR/locks. The kernel drops a dead process's locks at once,
    and no database write is made. The default on SQLite, whose database is one machine's anyway (there,
    two slot writes per call were a large part of a judgment's cost: every write takes the database lock).

    A caller first tries every slot once; when all are taken it waits in line (`_take_or_wait`), so a
    pool larger than the limit costs no CPU while it waits, and a freed slot is taken within a poll."""

    poll_seconds = 0.002

    def __init__(self, directory: Path | None = None):
        self.directory = directory
        self._slot_paths: dict[tuple[Path, str, int], list[str]] = {}

    def _path(self, name: str, suffix: str) -> Path:
        return (self.directory or lock_dir()) / f"judge-{_safe(name)}.{suffix}"

    def _slot_path(self, name: str, slot: int) -> Path:
        return self._path(name, f"{slot}.lock")

    def _slot_paths_of(self, name: str, max_concurrency: int) -> list[str]:
        """The judge's slot files, one per slot (built once per judge and limit)."""
        key = (self.directory or lock_dir(), name, max_concurrency)
        paths = self._slot_paths.get(key)
        if paths is None:
            paths = self._slot_paths[key] = [str(self._slot_path(name, slot)) for slot in range(max(1, max_concurrency))]
        return paths

    @staticmethod
    def _take_one(paths: list[str], opened: list[int]) -> int | None:
        """The first slot file of `paths` this caller could lock, or None. A file is opened when first
        tried and kept in `opened` for the caller's next try: the first free slot costs one open, not
        one per slot."""
        for position, path in enumerate(paths):
            if position == len(opened):
                opened.append(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
            try:
                fcntl.flock(opened[position], fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            return opened[position]
        return None

    @contextmanager
    def __call__(self, name: str, max_concurrency: int):
        paths = list(self._slot_paths_of(name, max_concurrency))
        random.shuffle(paths)  # callers that start together try different slots first
        opened: list[int] = []
        held = None
        try:
            held = _take_or_wait(lambda: self._take_one(paths, opened), self._path(name, "gate"), self.poll_seconds)
        finally:
            for fd in opened:
                if fd != held:
                    os.close(fd)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
            os.close(held)


class RedisSlotLimiter:
    """A judge's max_concurrency across machines, kept in the Redis the workers already use as their broker:
    a sorted set per judge of holder -> lease deadline. One script call takes a slot atomically after
    dropping expired leases (on Redis's own clock, so machines' clocks don't matter); a slot held by a dead
    process on this host is taken back when a caller finds every slot busy. No database write. Waiting as
    every limiter (`_take_or_wait`): one waiter per machine polls."""

    poll_seconds = 0.002
    _ACQUIRE = """
    local t = redis.call('TIME')
    local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
        redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
        return 1
    end
    return 0
    """

    def __init__(self, url: str):
        import redis

        self.redis = redis.Redis.from_url(url)
        self._acquire = self.redis.register_script(self._ACQUIRE)
        self._dead_check = _Every(1.0)

    @staticmethod
    def key(name: str) -> str:
        return f"judgeapp:judge-slots:{name}"

    def _release_dead_holders(self, key: str) -> bool:
        if not self._dead_check.due(key):
            return False
        dead = [h for h in (m.decode() for m in self.redis.zrange(key, 0, -1)) if claimer_is_dead(h)]
        return bool(dead) and bool(self.redis.zrem(key, *dead))

    def _take(self, key: str, args: list) -> bool | None:
        """True with a slot, None when every slot is busy (after freeing dead holders' slots, if any)."""
        if self._acquire(keys=[key], args=args) or (self._release_dead_holders(key) and self._acquire(keys=[key], args=args)):
            return True
        return None

    @contextmanager
    def __call__(self, name: str, max_concurrency: int):
        key = self.key(name)
        holder = f"{worker_identity()}:{uuid.uuid4().hex[:8]}"
        args = [max(1, max_concurrency), settings.UNIT_HARD_TIME_LIMIT, holder]
        _take_or_wait(lambda: self._take(key, args), lock_dir() / f"judge-{_safe(name)}.redis-gate", self.poll_seconds)
        try:
            yield
        finally:
            self.redis.zrem(key, holder)


def limiter_kind(*, configured: str | None = None, engine: str | None = None, broker_url: str | None = None) -> str:
    """host on SQLite (its database is one machine's), redis when Redis is the broker, else database.
    JUDGE_LIMITER=host|redis|database overrides. The arguments default to the settings."""
    configured = settings.JUDGE_LIMITER if configured is None else configured
    engine = settings.DATABASES["default"]["ENGINE"] if engine is None else engine
    broker_url = settings.CELERY_BROKER_URL if broker_url is None else broker_url
    if configured:
        return configured
    if engine.endswith("sqlite3"):
        return "host"
    if broker_url.startswith(("redis://", "rediss://")):
        return "redis"
    return "database"


def limiter_for_settings():
    kind = limiter_kind()
    if kind == "host":
        return HostSlotLimiter()
    if kind == "redis":
        return RedisSlotLimiter(settings.JUDGE_LIMITER_REDIS_URL or settings.CELERY_BROKER_URL)
    return DatabaseSlotLimiter()
