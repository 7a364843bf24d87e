"""Worker start-up: load the judges file, recover what a crashed worker left behind, then keep checking
now and then. And each task starts with a usable database connection (kept between tasks, see CELERY_DB_REUSE_MAX).

The worker's parent process only publishes `recover_runs` tasks; the database work happens in a pool
child, so the parent never holds a database connection that a forked child would share.
"""

import threading

from celery.signals import task_postrun, task_prerun, worker_ready, worker_shutting_down

RECOVER_INTERVAL_SECONDS = 30
_stop = threading.Event()


@worker_ready.connect
def _recover_on_start(sender=None, **kwargs):
    from judgeapp.judging.tasks import load_judges_file, recover_runs

    load_judges_file.delay()
    recover_runs.delay(redispatch_pending=True)

    def every_interval():
        while not _stop.wait(RECOVER_INTERVAL_SECONDS):
            try:
                recover_runs.delay(redispatch_pending=False)
            except Exception:  # noqa: BLE001 - a broker hiccup must not kill the timer; next time will do
                pass

    threading.Thread(target=every_interval, name="judgeapp-recovery", daemon=True).start()


@worker_shutting_down.connect
def _stop_timer(**kwargs):
    _stop.set()


@task_prerun.connect
@task_postrun.connect
def _fresh_connections(sender=None, **kwargs):
    """Django's per-request rule, per task: close a connection that errored, is past CONN_MAX_AGE or (with
    CONN_HEALTH_CHECKS) fails its check on first use; keep the others. Not for a task run eagerly in the
    caller (its connection, maybe inside a transaction, is the caller's), as Celery's own fixup."""
    from django.db import close_old_connections

    if sender is not None and getattr(sender.request, "is_eager", False):
        return
    close_old_connections()
