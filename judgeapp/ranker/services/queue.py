"""Work handed to the workers: a batch rank or a compare stored and queued on Celery once committed, an insert
queued behind the ranklist's lock, a ranklist's pending work resumed. The pages call these; the commands judge inline."""

from __future__ import annotations

import logging

from django.db import transaction

from judgeapp.judging import taskqueue
from judgeapp.judging.errors import InputError
from judgeapp.judging.runs import run_enqueue, run_task_send
from judgeapp.models import Executor, Insertion, InsertionStatus, Ranklist, Run, RunKind, RunStatus
from judgeapp.ranker.services.compare import compare_create
from judgeapp.ranker.services.ranklists import insertion_register, rank_create, unplaced_requeue

log = logging.getLogger(__name__)


def rank_submit(**kwargs) -> Run:
    """A batch rank run on Celery (rank_create's arguments), started once it is committed."""
    run = rank_create(executor=Executor.CELERY, **kwargs)
    run_enqueue(run=run)
    return run


def compare_submit(**kwargs) -> Run:
    run = compare_create(executor=Executor.CELERY, write_files=True, **kwargs)
    run_enqueue(run=run)
    return run


def insertion_submit(*, ranklist: Ranklist, candidate, requested_by: str) -> tuple[Insertion, bool]:
    """Queue one more candidate; a worker makes the insert. (insertion, queued) as insertion_register."""
    insertion, queued = insertion_register(ranklist=ranklist, candidate=candidate, requested_by=requested_by)
    if queued:
        ranklist_work_enqueue(ranklist=ranklist)
    return insertion, queued


def ranklist_work_enqueue(*, ranklist: Ranklist) -> None:
    def send() -> None:
        try:
            taskqueue.send(taskqueue.RANKLIST_WORK, ranklist.pk)
        except taskqueue.BrokerDown as exc:  # the inserts are stored; Resume hands them to a worker later
            log.warning("ranklist %s: its queued inserts wait for the broker: %s", ranklist.pk, exc)

    transaction.on_commit(send)


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
