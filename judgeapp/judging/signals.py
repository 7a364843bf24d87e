"""Worker start-up: load the judges file, recover what a crashed worker left behind, then keep checking
now and then. And each task starts with a usable database connection (kept between tasks, see CELERY_DB_REUSE_MAX).

Recovery runs in a thread of the worker's parent process, not as a task: a task would wait behind the
judgment backlog in the queue and then behind the busy pool (a dead worker's claims took over a minute to
come back under a few hundred queued units). The thread opens its own database connection for a pass and
closes it after, so a pool child forked meanwhile never shares an open connection it would use (a forked
child sees only its own thread's connections, and leaves with os._exit, closing nothing of the parent's).
"""

import logging
import threading

from celery.signals import task_postrun, task_prerun, worker_init, worker_ready, worker_shutting_down

log = logging.getLogger(__name__)

RECOVER_INTERVAL_SECONDS = 10
_stop = threading.Event()


def _recover(redispatch_pending: bool) -> bool:
    """One recovery pass; False when it failed (logged)."""
    from django.db import connections

    from judgeapp.judging.notify import webhook_deliveries_recover
    from judgeapp.judging.runs import runs_recover

    try:
        counts = runs_recover(redispatch_pending=redispatch_pending)
        if counts.get("released"):
            log.warning("recovery: %s", counts)
        webhook_deliveries_recover()  # webhook messages whose task was lost
        return True
    except Exception:  # noqa: BLE001 - a database or broker hiccup must not kill the timer; next time will do
        log.exception("recovery pass failed")
        return False
    finally:
        connections.close_all()


def _broker_identity() -> str | None:
    """The broker's identity (taskqueue.broker_identity), or None when it cannot be reached (logged)."""
    from judgeapp.judging import taskqueue

    try:
        return taskqueue.broker_identity()
    except taskqueue.BrokerDown as exc:
        log.warning("recovery: %s; every pending unit is sent again when it is back", exc)
        return None


def recovery_loop(recover, stop: threading.Event, interval: float, broker_identity=_broker_identity) -> None:
    """`recover(redispatch_pending)` now and then every `interval` seconds until `stop` is set.

    A pass sends every pending unit and starts every queued run again (a full pass) when messages may have
    been lost: the first pass (what a killed worker had prefetched may be lost); the pass after one that
    failed (it may have released a dead worker's claims and not sent them, and the next pass, finding no
    dead claim, would leave those units pending without a message until their run counted as stalled,
    minutes later); and the first pass after the broker came back, whether it was out of reach (the sends
    made meanwhile failed) or restarted (a Redis without persistence comes back empty, and its run_id is
    new). While the broker is out of reach no pass is made: every send would fail."""
    full = True
    known_broker = None
    while True:
        broker = broker_identity()
        if broker is None:
            full = True
        else:
            if broker != known_broker:
                full = True
                known_broker = broker
            full = not recover(full)
        if stop.wait(interval):
            return


@worker_init.connect
def _import_what_runs_need(**kwargs):
    """The pool processes are forked from this process after it starts: what it imports here, each of them
    has without importing it again. The judge client's library (openai), for a process's first call; and
    the run kinds' `preload_modules` (scipy.stats for a report's intervals), which the process recording a
    run's last unit otherwise imported between that unit and the report (about 2 s on a loaded machine)."""
    from judgeapp.judging.runkind import handlers_all
    from judgeapp.judging.runs import modules_preload

    modules_preload(handlers_all())


@worker_ready.connect
def _recover_on_start(sender=None, **kwargs):
    from judgeapp.judging.tasks import load_judges_file

    load_judges_file.delay()

    threading.Thread(
        target=recovery_loop, args=(_recover, _stop, RECOVER_INTERVAL_SECONDS), name="judgeapp-recovery", daemon=True
    ).start()


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
