"""A ranklist's pending work resumed and handed to the workers (the Resume button)."""

from __future__ import annotations

from django.db import transaction

from judgeapp.judging import taskqueue
from judgeapp.judging.errors import InputError
from judgeapp.judging.runs import run_task_send
from judgeapp.models import Executor, InsertionStatus, Ranklist, Run, RunKind, RunStatus
from judgeapp.ranker.services.ranklists import ranklist_work_enqueue, unplaced_requeue


def ranklist_resume(*, ranklist: Ranklist) -> str:
    """Go on after a judge outage or a lost task: the unplaced candidates are queued again, a failed batch
    rank runs again from where it stopped (the comparisons it made are replayed, not asked again); queued
    inserts are handed to a worker."""
    run = ranklist.run
    unplaced_requeue(ranklist=ranklist)
    if run.kind == RunKind.RANK and run.status == RunStatus.FAILED:
        with transaction.atomic():
            resumed = Run.objects.filter(pk=run.pk, status=RunStatus.FAILED).update(
                status=RunStatus.RUNNING, error="", finished_at=None, executor=Executor.CELERY
            )
            if resumed:
                transaction.on_commit(lambda: run_task_send(run=run, task=taskqueue.EXECUTE_SEQUENTIAL_RUN))
        return "The batch rank goes on from where it stopped."
    if not ranklist.insertions.filter(status=InsertionStatus.PENDING).exists():
        raise InputError("nothing to resume: no candidate is waiting or unplaced")
    ranklist_work_enqueue(ranklist=ranklist)
    return "The queued candidates were handed to a worker."
