"""Worker start-up: recover what a crashed worker left behind, then keep checking now and then.

The worker's parent process only publishes `recover_runs` tasks; the database work happens in a pool
child, so the parent never holds a database connection that a forked child would share.
"""

import threading

from celery.signals import worker_ready, worker_shutting_down

RECOVER_INTERVAL_SECONDS = 30
_stop = threading.Event()


@worker_ready.connect
def _recover_on_start(sender=None, **kwargs):
    from judgeapp.tasks import recover_runs

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
