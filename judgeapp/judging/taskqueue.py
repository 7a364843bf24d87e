"""Sending a Celery task by its name (Celery's own `send_task`), so that the services which enqueue work need
not import the task modules that call them back (a task module imports its services; a service never
imports a task module).

Celery is imported only when a task is first sent: a command that never sends one (`gate`, every
`--help`) does not pay for Celery's start-up. A broker that cannot be reached is `BrokerDown`, one line:
the callers keep what they meant to send in the database (a run marked `awaiting_broker`, units pending)
and the workers' recovery sends it once the broker is back (judging/runs/recovery.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

EXECUTE_JUDGMENTS = "judgeapp.tasks.execute_judgments"
START_RUN = "judgeapp.tasks.start_run"
EXECUTE_SEQUENTIAL_RUN = "judgeapp.tasks.execute_sequential_run"
RANKLIST_WORK = "judgeapp.tasks.ranklist_work"
COMPUTE_AGREEMENT = "calibration.tasks.compute_agreement"
REFRESH_AGREEMENTS = "calibration.tasks.refresh_agreements"
DELIVER_WEBHOOK = "judgeapp.tasks.deliver_webhook"


class BrokerDown(Exception):
    """The broker could not be reached (after kombu's own retries, about a second): nothing was sent."""


@contextmanager
def _broker_errors() -> Iterator[None]:
    from kombu.exceptions import OperationalError

    try:
        yield
    except OperationalError as exc:
        raise BrokerDown(f"the broker cannot be reached ({exc})") from exc


def _app():
    from judgeapp.celery import app

    return app


def send(name: str, *args, **options) -> None:
    """Send the task called `name` with `args`; `options` are `send_task`'s (producer, time limits).
    Raises BrokerDown when the broker cannot be reached."""
    app = _app()
    if app.conf.task_always_eager:
        # send_task ignores eager mode (tests, a demo without a worker): run the task here, as `delay` did.
        app.loader.import_default_modules()
        app.tasks[name].apply(args)
        return
    with _broker_errors():
        app.send_task(name, args=args, **options)


@contextmanager
def producer() -> Iterator[object]:
    """One broker connection for many `send(..., producer=...)` calls (a run's batches)."""
    with _broker_errors(), _app().producer_or_acquire() as acquired:
        yield acquired


def broker_identity() -> str:
    """Which broker answers now: a Redis server's run_id (new each time the server starts, and a Redis
    without persistence starts empty: every message it held is gone), else the broker's URL. Raises
    BrokerDown when the broker cannot be reached."""
    app = _app()
    url = app.conf.broker_url
    if url.startswith(("redis://", "rediss://")):
        import redis

        client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
        try:
            return client.info("server")["run_id"]
        except redis.RedisError as exc:
            raise BrokerDown(f"the broker cannot be reached ({exc})") from exc
        finally:
            client.close()
    with _broker_errors(), app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1)
    return url
