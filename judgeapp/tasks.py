"""Celery tasks: thin. They pass ids, and the services do the work (and keep the state in the models)."""

from celery import shared_task
from django.conf import settings

from judgeapp.services import runs


@shared_task(acks_late=True, soft_time_limit=settings.UNIT_SOFT_TIME_LIMIT, time_limit=settings.UNIT_HARD_TIME_LIMIT)
def execute_judgment(judgment_id: int) -> None:
    runs.judgment_execute(judgment_id=judgment_id)


@shared_task(acks_late=True, soft_time_limit=120, time_limit=180)
def start_run(run_pk: int) -> None:
    runs.run_start(run_pk=run_pk)


@shared_task(acks_late=True, soft_time_limit=settings.RUN_SOFT_TIME_LIMIT, time_limit=settings.RUN_HARD_TIME_LIMIT)
def execute_sequential_run(run_pk: int) -> None:
    runs.run_sequential_execute(run_pk=run_pk)


@shared_task(acks_late=True, soft_time_limit=120, time_limit=180)
def recover_runs(redispatch_pending: bool = False) -> None:
    runs.runs_recover(redispatch_pending=redispatch_pending)


@shared_task(acks_late=True, soft_time_limit=settings.RUN_SOFT_TIME_LIMIT, time_limit=settings.RUN_HARD_TIME_LIMIT)
def ranklist_work(ranklist_pk: int) -> None:
    """Make a ranklist's pending inserts (queued from the browser), in arrival order."""
    from judgeapp.services.ranker import ranklist_work as work

    work(ranklist_pk=ranklist_pk, wait_seconds=None)
