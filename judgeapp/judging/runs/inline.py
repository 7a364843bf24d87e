"""A run in the calling process (the CLI): the same claims and records as a worker, on a thread pool."""

from __future__ import annotations

import collections
import importlib
import logging
import threading
import time
import uuid

from django.conf import settings
from django.db import connections

from judgeapp.judging import shutdown
from judgeapp.judging.client import openai_preload
from judgeapp.judging.leases import UNIT, Heartbeat
from judgeapp.judging.outages import through_outage
from judgeapp.judging.runkind import UnitResult, handler_for
from judgeapp.judging.runs.lifecycle import Progress, run_advance, run_fail, run_interrupt, run_start
from judgeapp.judging.runs.sequential import run_sequential_execute
from judgeapp.judging.runs.units import (
    RECORD_EVERY_SECONDS,
    _RunWatch,
    budget_spent,
    claims_give_back,
    judgments_claim,
    judgments_record,
    unit_judge,
)
from judgeapp.judging.workers import soft_time_limit, worker_identity
from judgeapp.models import Judgment, Run, UnitStatus

log = logging.getLogger(__name__)

LANE_UNITS_AT_ONCE = 4  # a command's batch: this many units per lane (_execute_units)



def run_execute_inline(*, run: Run, concurrency: int = 1, progress: Progress | None = None) -> Run:
    """Run every stage in this process: the same claims and records as a worker, on a thread pool.

    With concurrency 1 everything happens in the calling thread (and its database transaction). When the
    command is asked to stop (judgeapp/judging/shutdown.py) no new unit is claimed; the units in flight
    finish and are recorded; then the run is failed "interrupted by SIGTERM before it finished" and
    `shutdown.Interrupted` is raised. A run that finished meanwhile is returned as it is.
    """
    _stop_if_asked(run)
    handler = handler_for(run.kind)
    _preload(handler)
    run_start(run_pk=run.pk)
    run.refresh_from_db()
    if handler.sequential:
        run_sequential_execute(run_pk=run.pk, progress=progress)
        run.refresh_from_db()
        if not run.is_finished:
            _stop_if_asked(run)
        return run
    worker = worker_identity()
    while True:
        run.refresh_from_db()
        if run.is_finished:
            return run
        _stop_if_asked(run)
        # As many lanes as there are units to start with, up to the concurrency (a count that stops there).
        lanes = Judgment.objects.filter(run=run, stage=run.stage, status=UnitStatus.PENDING)[:concurrency].count()
        if not lanes:
            # Nothing pending and the run is not finished: the stage's last units are claimed elsewhere, or
            # nothing advanced it yet.
            run_advance(run_pk=run.pk)
            run.refresh_from_db()
            if not run.is_finished and not Judgment.objects.filter(run=run, stage=run.stage, status=UnitStatus.PENDING).exists():
                return run
            continue
        _execute_units(worker=worker, concurrency=concurrency, lanes=lanes, run=run, progress=progress)


def _preload(handler) -> None:
    """Import what the run will need (the judge client's library, the report's) in a thread, while the
    units are planned and the first ones judged: a command starts without them (bench/startup.py)."""

    threading.Thread(target=modules_preload, args=([handler],), name="judgeapp-preload", daemon=True).start()


def modules_preload(handlers) -> None:
    """Import the judge client's library and what these run kinds' reports need (`preload_modules`)."""
    openai_preload()
    for name in sorted({name for handler in handlers for name in handler.preload_modules}):
        importlib.import_module(name)


def _stop_if_asked(run: Run) -> None:
    """Where stopping is safe (no claim held, no transaction open): fail the run and raise, if asked."""
    signum = shutdown.requested()
    if signum is not None:
        run_interrupt(run_pk=run.pk, signal_name=shutdown.requested_name())
        raise shutdown.Interrupted(signum)


class _Claims:
    """The pending units of a run's stage, claimed from the database a batch at a time (the next ids, then
    one claim for them) by whichever lane runs out of work first, then handed out one by one. Nothing is
    held of the units not yet claimed: a run of 100,000 units is not a list of their ids here.

    Each claimed batch has its lease renewed (a Heartbeat) until its last unit is recorded or given back
    (`settled`): a batch waiting behind slow lanes never needs a lease as long as its wait. When a batch's
    heartbeat is lost (the database out of reach for a whole lease, its units taken over), no further unit is
    handed out: the lanes record what they have and the rest is given back (`release`)."""

    def __init__(self, run: Run, size: int):
        self.watch = _RunWatch(run.pk)
        self.pending = Judgment.objects.filter(run_id=run.pk, stage=run.stage, status=UnitStatus.PENDING)
        self.size = size
        self.ready: collections.deque[tuple[Judgment, uuid.UUID]] = collections.deque()
        self.lock = threading.Lock()
        self.stopped = False
        self.beats: dict[uuid.UUID, Heartbeat] = {}  # by the token of a claimed batch
        self.unsettled: dict[uuid.UUID, int] = {}  # a batch's units not yet recorded or given back
        self.run = run
        self.unrecorded = lambda: []  # the results judged and not yet recorded (_Recorder.waiting), for the budget

    def next(self, worker: str) -> tuple[Judgment, uuid.UUID] | None:
        with self.lock:
            if self.stopped or shutdown.requested() is not None or not self.watch.still_running():
                return None
            if self.run.budget is not None and budget_spent(self.run, self.unrecorded()):
                # The units in flight in the other lanes finish and are recorded (the budget's overshoot).
                self.stopped = True
                return None
            if any(beat.lost.is_set() for beat in self.beats.values()):
                log.warning("run %s: the lease on a claimed batch was lost; no further unit is started", self.watch.run_pk)
                self.stopped = True
                return None
            while not self.ready:
                batch = through_outage(self._next_ids, what="reading the pending units")
                if not batch:
                    return None
                # Another process may claim some of them first: the claim takes what is still free, and the
                # next read finds the pending units after them.
                token, units = judgments_claim(ids=batch, worker=worker)
                if units:
                    held = Judgment.objects.filter(pk__in=[unit.pk for unit in units])
                    self.beats[token] = Heartbeat(UNIT, held, token, name="cli-units").__enter__()
                    self.unsettled[token] = len(units)
                self.ready.extend((unit, token) for unit in units)
            return self.ready.popleft()

    def _next_ids(self) -> list[int]:
        return list(self.pending.order_by("id").values_list("pk", flat=True)[: self.size])

    def settled(self, token: uuid.UUID, count: int) -> None:
        """`count` units of the batch claimed under `token` were recorded (or dropped, or given back): after
        its last, its lease is no longer renewed."""
        with self.lock:
            if token not in self.unsettled:
                return
            self.unsettled[token] -= count
            if self.unsettled[token] > 0:
                return
            del self.unsettled[token]
            beat = self.beats.pop(token)
        beat.__exit__(None, None, None)

    def release(self) -> None:
        """Give back what was claimed and not started (a stop request, a failed run, a lost lease)."""
        with self.lock:
            self.stopped = True
            left, self.ready = list(self.ready), collections.deque()
        by_token: dict[uuid.UUID, list[int]] = {}
        for unit, token in left:
            by_token.setdefault(token, []).append(unit.pk)
        for token, pks in by_token.items():
            claims_give_back(pks=pks, token=token)
            self.settled(token, len(pks))

    def close(self) -> None:
        """Stop every heartbeat left (a lane that raised never settled its unit)."""
        with self.lock:
            beats, self.beats, self.unsettled = list(self.beats.values()), {}, {}
        for beat in beats:
            beat.__exit__(None, None, None)


class _Recorder:
    """Results wait here and are written a batch at a time (judgments_record), by the lane that fills the
    batch, while the other lanes go on judging."""

    def __init__(self, run: Run, size: int, progress: Progress | None, settled):
        self.run_pk = run.pk
        self.settled = settled  # _Claims.settled: a batch's recorded units
        self.finished = run.done_units + run.failed_units
        self.size = size
        self.progress = progress
        self.buffer: list[tuple[Judgment, UnitResult, uuid.UUID]] = []
        self.lock = threading.Lock()
        self.writing = threading.Lock()
        self.last = time.monotonic()
        self.run_failure: str | None = None

    def add(self, unit: Judgment, result: UnitResult, token: uuid.UUID, run_failure: str | None) -> None:
        with self.lock:
            self.buffer.append((unit, result, token))
            if run_failure and not self.run_failure:
                self.run_failure = run_failure
            due = len(self.buffer) >= self.size or time.monotonic() - self.last >= RECORD_EVERY_SECONDS or run_failure
        if due:
            self.flush()

    def waiting(self) -> list[tuple[Judgment, UnitResult]]:
        """The results added and not yet written (what they cost counts against the run's budget)."""
        with self.lock:
            return [(unit, result) for unit, result, _token in self.buffer]

    def flush(self) -> None:
        with self.writing:
            with self.lock:
                items, self.buffer, self.last = self.buffer, [], time.monotonic()
            if not items:
                return
            by_token: dict[uuid.UUID, list[tuple[Judgment, UnitResult]]] = {}
            for unit, result, token in items:
                by_token.setdefault(token, []).append((unit, result))
            for token, results in by_token.items():
                judgments_record(results=results, token=token)
                self.settled(token, len(results))
            self.finished += len(items)
            if self.progress:
                totals = Run.objects.filter(pk=self.run_pk).values_list("total_units", flat=True)
                total = through_outage(totals.first, what="reading the run's progress") or 0
                self.progress(self.finished, total)


def _forget_queries() -> None:
    """With DEBUG (a developer's command) Django keeps the last 9,000 statements of each connection: a lane's
    would hold tens of megabytes of prompts. A capture in progress (force_debug_cursor: a test, a bench)
    keeps them."""
    connection = connections["default"]
    if connection.queries_logged and not connection.force_debug_cursor and len(connection.queries_log) > 100:
        connection.queries_log.clear()


def _execute_units(*, worker: str, concurrency: int, lanes: int, run: Run, progress: Progress | None) -> None:
    """Claim, judge and record the pending units of the run's stage on `lanes` threads (in the calling
    thread when the concurrency is 1), claiming and recording in batches; a stop request ends the
    claiming, not the units in flight (what was claimed and not started goes back to pending)."""
    # No other process judges this run's units, so nobody waits on a larger batch: four units a lane are
    # claimed in one round trip and recorded in one transaction (64 for 16 lanes: 15% more judgments a
    # second than 16 at zero latency, bench/overhead.py); the recorder still writes every
    # RECORD_EVERY_SECONDS, so progress moves as often with a slow judge.
    size = max(settings.UNIT_BATCH_SIZE, LANE_UNITS_AT_ONCE * lanes)
    claims = _Claims(run, size)
    recorder = _Recorder(run, size, progress, claims.settled)
    claims.unrecorded = recorder.waiting

    def lane(identity: str) -> None:
        while recorder.run_failure is None:
            _forget_queries()
            claimed = claims.next(identity)
            if claimed is None:
                return
            unit, token = claimed
            try:
                result, run_failure = through_outage(unit_judge, unit, what=f"judging unit {unit.key}")
            except soft_time_limit():  # not raised in process; kept for symmetry with the worker's path
                result, run_failure = UnitResult.failure(f"time limit of {settings.UNIT_SOFT_TIME_LIMIT}s exceeded"), None
            recorder.add(unit, result, token, run_failure)

    def finish() -> None:
        try:
            claims.release()
            recorder.flush()
        finally:
            claims.close()
        if recorder.run_failure:
            run_fail(run_pk=run.pk, error=recorder.run_failure)

    if concurrency <= 1:
        try:
            lane(worker)
        finally:
            finish()
        return

    errors: list[BaseException] = []

    def threaded_lane() -> None:
        try:
            lane(f"{worker}:{threading.get_ident()}")
        except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=threaded_lane, daemon=True) for _ in range(lanes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    finish()
    if errors:
        raise errors[0]
