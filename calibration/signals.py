"""Worker start-up: catch up on any sample whose agreement task was lost (the task is idempotent)."""

from celery.signals import worker_ready


@worker_ready.connect
def _refresh_on_start(sender=None, **kwargs):
    from judgeapp.judging import taskqueue

    taskqueue.send(taskqueue.REFRESH_AGREEMENTS)
