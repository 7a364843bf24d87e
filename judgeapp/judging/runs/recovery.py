"""Recovery: put a crashed worker's work back in the queue."""

from __future__ import annotations

import logging

from django.utils import timezone

from judgeapp.judging import taskqueue
from judgeapp.judging.leases import UNIT
from judgeapp.judging.runkind import handler_for
from judgeapp.judging.runs.lifecycle import run_advance, run_dispatch
from judgeapp.judging.workers import claimer_is_dead
from judgeapp.models import ACTIVE_UNIT_STATUSES, Executor, Judgment, Run, RunStatus, UnitStatus

log = logging.getLogger(__name__)


# Recovery re-sends a pending unit only when its run has made no progress for this long (the message
# may simply be waiting in a long queue).
STALL_SECONDS = 300


def runs_recover(*, redispatch_pending: bool = False) -> dict:
    """Put a crashed worker's work back in the queue.

    - units claimed by a dead process (same host) or whose lease ran out go back to pending;
    - a sequential run whose holder died is sent again;
    - queued Celery runs are started (their start message may have been lost), and so are runs whose
      planner was cut off (it continues where that one stopped);
    - pending units are sent again: all of them when `redispatch_pending` (a worker starting: the broker
      may have lost what a killed worker had prefetched), else only those of runs that stalled;
    - a run whose stage has no active unit left is advanced (a crash between the last unit and the report).
    Sending a unit twice is harmless: only one claim succeeds.
    """
    execute_sequential_run, start_run = taskqueue.task(taskqueue.EXECUTE_SEQUENTIAL_RUN), taskqueue.task(taskqueue.START_RUN)

    now = timezone.now()
    counts = {"released": 0, "dispatched": 0, "started": 0, "advanced": 0, "resumed": 0}
    in_flight = Run.objects.filter(status=RunStatus.RUNNING)

    released_runs: set[int] = set()
    for unit in Judgment.objects.filter(status=UnitStatus.CLAIMED, run__status=RunStatus.RUNNING).only(
        "pk", "run_id", "claim_token", "claimed_by", "lease_expires_at"
    ):
        if (unit.lease_expires_at and unit.lease_expires_at < now) or claimer_is_dead(unit.claimed_by):
            if Judgment.objects.filter(pk=unit.pk, claim_token=unit.claim_token, status=UnitStatus.CLAIMED).update(
                status=UnitStatus.PENDING, claim_token=None, claimed_by="", lease_expires_at=None
            ):
                counts["released"] += 1
                released_runs.add(unit.run_id)

    for run in in_flight.filter(claim_token__isnull=False).only("pk", "kind", "claimed_by", "lease_expires_at", "claim_token", "executor"):
        if (run.lease_expires_at and run.lease_expires_at < now) or claimer_is_dead(run.claimed_by):
            if not handler_for(run.kind).sequential:
                # A planner cut off with its stage part planned: its lease ends now (the token stays: the
                # stage is not fully planned) and the next planner continues where it stopped.
                if run.executor == Executor.CELERY and UNIT.expire(Run.objects.filter(pk=run.pk), run.claim_token):
                    start_run.delay(run.pk)
                    counts["started"] += 1
                continue
            if Run.objects.filter(pk=run.pk, claim_token=run.claim_token).update(claim_token=None, claimed_by="", lease_expires_at=None):
                if run.executor == Executor.CELERY:
                    execute_sequential_run.delay(run.pk)
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
