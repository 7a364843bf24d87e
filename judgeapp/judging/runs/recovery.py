"""Recovery: put a crashed worker's work back in the queue."""

from __future__ import annotations

import logging

from django.utils import timezone

from judgeapp.judging import taskqueue
from judgeapp.judging.leases import UNIT
from judgeapp.judging.runkind import handler_for
from judgeapp.judging.runs.lifecycle import run_advance, run_dispatch, run_task_send
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
    - a run `awaiting_broker` (a message it needed could not be sent) is sent what it waits for: its start,
      its sequential task or its pending units;
    - queued Celery runs are started (their start message may have been lost), and so are runs whose
      planner was cut off (it continues where that one stopped);
    - pending units are sent again: all of them when `redispatch_pending` (a worker starting: the broker
      may have lost what a killed worker had prefetched; the broker restarted or was out of reach), else
      only those of runs that stalled;
    - a run whose stage has no active unit left is advanced (a crash between the last unit and the report).
    Sending a unit twice is harmless: only one claim succeeds.
    """

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
        run = Run.objects.only("pk", "run_id", "kind", "executor").get(pk=pk)
        if not handler_for(run.kind).sequential:
            # A planner cut off with its stage part planned: its lease ends now (the token stays: the stage
            # is not fully planned) and the next planner continues where it stopped.
            if run.executor == Executor.CELERY and UNIT.expire(Run.objects.filter(pk=pk), claim):
                if run_task_send(run=run, task=taskqueue.START_RUN):
                    counts["started"] += 1
            continue
        if UNIT.release(Run.objects.filter(pk=pk), claim):
            if run.executor == Executor.CELERY and run_task_send(run=run, task=taskqueue.EXECUTE_SEQUENTIAL_RUN):
                counts["resumed"] += 1

    # The mark is cleared before the sends: a send that fails meanwhile (here or in a worker) marks its run
    # again, for the next pass.
    awaiting = set(Run.objects.filter(awaiting_broker=True).values_list("pk", flat=True))
    Run.objects.filter(pk__in=awaiting).update(awaiting_broker=False)

    for run in Run.objects.filter(status=RunStatus.QUEUED, executor=Executor.CELERY).only("pk", "run_id", "created_at"):
        created_a_minute_ago = run.created_at < now - timezone.timedelta(seconds=60)
        if (redispatch_pending or run.pk in awaiting or created_a_minute_ago) and run_task_send(
            run=run, task=taskqueue.START_RUN
        ):
            counts["started"] += 1

    stall_cutoff = now - timezone.timedelta(seconds=STALL_SECONDS)
    for run in in_flight.filter(executor=Executor.CELERY):
        handler = handler_for(run.kind)
        if handler.sequential:
            wanted = redispatch_pending or run.pk in awaiting or run.updated_at < stall_cutoff
            if run.claim_token is None and wanted and run_task_send(run=run, task=taskqueue.EXECUTE_SEQUENTIAL_RUN):
                counts["resumed"] += 1
            continue
        active = Judgment.objects.filter(run=run, stage=run.stage, status__in=ACTIVE_UNIT_STATUSES)
        if not active.exists():
            run_advance(run_pk=run.pk)
            counts["advanced"] += 1
        elif redispatch_pending or run.pk in released_runs or run.pk in awaiting or run.updated_at < stall_cutoff:
            # All the pending units, not only the released ones: a killed worker's prefetched messages
            # may be lost with it (sending a unit twice is harmless, one claim wins).
            counts["dispatched"] += run_dispatch(run_pk=run.pk)
    return counts
