"""Recovery: put a crashed worker's work back in the queue."""

from __future__ import annotations

import logging

from django.utils import timezone

from judgeapp.judging import taskqueue
from judgeapp.judging.leases import UNIT
from judgeapp.judging.runkind import handler_for
from judgeapp.judging.runs.lifecycle import run_advance, run_dispatch
from judgeapp.models import ACTIVE_UNIT_STATUSES, Executor, Judgment, Run, RunStatus, UnitStatus

log = logging.getLogger(__name__)


# Recovery re-sends a pending unit only when its run has made no progress for this long (the message
# may simply be waiting in a long queue).
STALL_SECONDS = 300


def runs_recover(*, redispatch_pending: bool = False) -> dict:
    """Put a crashed worker's work back in the queue.

    - units claimed by a dead process (same host) or whose lease ran out (its holder silent for a whole
      lease) go back to pending;
    - a sequential run whose holder died is sent again;
    - queued Celery runs are started (their start message may have been lost);
    - pending units are sent again: all of them when `redispatch_pending` (a worker starting: the broker
      may have lost what a killed worker had prefetched), else only those of runs that stalled;
    - a run whose stage has no active unit left is advanced (a crash between the last unit and the report).
    Sending a unit twice is harmless: only one claim succeeds.
    """
    execute_sequential_run, start_run = taskqueue.task(taskqueue.EXECUTE_SEQUENTIAL_RUN), taskqueue.task(taskqueue.START_RUN)

    now = timezone.now()
    counts = {"released": 0, "dispatched": 0, "started": 0, "advanced": 0, "resumed": 0}
    in_flight = Run.objects.filter(status=RunStatus.RUNNING)

    claimed = Judgment.objects.filter(status=UnitStatus.CLAIMED)
    released = [
        pk
        for pk, claim in UNIT.lapsed(claimed.filter(run__status=RunStatus.RUNNING))
        if UNIT.release(claimed.filter(pk=pk), claim, status=UnitStatus.PENDING)
    ]
    counts["released"] = len(released)
    released_runs = set(Judgment.objects.filter(pk__in=released).values_list("run_id", flat=True)) if released else set()

    for pk, claim in UNIT.lapsed(in_flight):
        if UNIT.release(Run.objects.filter(pk=pk), claim) and Run.objects.filter(pk=pk, executor=Executor.CELERY).exists():
            execute_sequential_run.delay(pk)
            counts["resumed"] += 1

    for run in Run.objects.filter(status=RunStatus.QUEUED, executor=Executor.CELERY).only("pk", "created_at"):
        if redispatch_pending or run.created_at < now - timezone.timedelta(seconds=60):
            start_run.delay(run.pk)
            counts["started"] += 1

    stall_cutoff = now - timezone.timedelta(seconds=STALL_SECONDS)
    for run in in_flight.filter(executor=Executor.CELERY):
        handler = handler_for(run.kind)
        if handler.sequential:
            if run.claim_token is None and (redispatch_pending or run.updated_at < stall_cutoff):
                execute_sequential_run.delay(run.pk)
                counts["resumed"] += 1
            continue
        active = Judgment.objects.filter(run=run, stage=run.stage, status__in=ACTIVE_UNIT_STATUSES)
        if not active.exists():
            run_advance(run_pk=run.pk)
            counts["advanced"] += 1
        elif redispatch_pending or run.pk in released_runs or run.updated_at < stall_cutoff:
            # All the pending units, not only the released ones: a killed worker's prefetched messages
            # may be lost with it (sending a unit twice is harmless, one claim wins).
            counts["dispatched"] += run_dispatch(run_pk=run.pk)
    return counts
