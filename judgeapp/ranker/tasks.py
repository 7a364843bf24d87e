"""The ranker's own task: the inserts a browser queued on a ranklist."""

from django.conf import settings

from judgeapp.celery import app
from judgeapp.ranker.services import ranklist_work as ranklist_work_perform


@app.task(
    name="judgeapp.tasks.ranklist_work", acks_late=True, soft_time_limit=settings.RUN_SOFT_TIME_LIMIT,
    time_limit=settings.RUN_HARD_TIME_LIMIT
)

def ranklist_work(ranklist_pk: int) -> None:
    """Make a ranklist's pending inserts (queued from the browser), in arrival order."""
    ranklist_work_perform(ranklist_pk=ranklist_pk, wait_seconds=None)
