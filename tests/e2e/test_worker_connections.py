"""A worker's pool processes keep their database connection from one task to the next (Celery's Django
fixup would otherwise close it around every task: on PostgreSQL, a new server process per judgment)."""

import time

import pytest
from django.db import connection

from judgeapp.judging import runs
from judgeapp.judging.signals import _fresh_connections
from judgeapp.models import Run, RunStatus
from tests.factories import pointwise_run
from tests.helpers import wait_for


def test_a_task_keeps_a_healthy_connection_and_drops_an_old_one(transactional_db):
    connection.ensure_connection()
    raw = connection.connection
    connection.close_at = time.monotonic() + 60  # as CONN_MAX_AGE = 60 sets it on connecting
    _fresh_connections()
    assert connection.connection is raw
    connection.close_at = time.monotonic() - 1  # older than CONN_MAX_AGE
    _fresh_connections()
    assert connection.connection is None


def test_celery_keeps_connections_between_tasks():
    from judgeapp.celery import app

    assert app.conf.get("CELERY_DB_REUSE_MAX", 0) >= 10_000


@pytest.mark.slow
def test_a_worker_opens_a_few_database_sessions_for_many_judgments(worker_factory, make_judge, fake_judge):
    if connection.vendor != "postgresql":
        pytest.skip("counts server sessions (pg_stat_database): PostgreSQL only")

    def sessions() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
            return cursor.fetchone()[0]

    judge = make_judge(max_concurrency=2)
    run = pointwise_run(judge=judge, n=60, executor="celery")
    before = sessions()  # counted when a session starts
    worker = worker_factory(concurrency=2)
    runs.run_enqueue(run=run)
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, 120, message="the run to finish")
    assert Run.objects.get(pk=run.pk).status == RunStatus.DONE
    worker.stop()  # a backend's counts reach the statistics within a second, or when it exits
    time.sleep(1.5)
    opened = sessions() - before
    # 60 judgments on 2 pool processes: one session per task would be 60 or more.
    assert 1 <= opened <= 10, f"{opened} database sessions for 60 judgments"


def test_a_task_run_eagerly_leaves_the_callers_connection_alone(transactional_db):
    from types import SimpleNamespace

    connection.ensure_connection()
    raw = connection.connection
    connection.close_at = time.monotonic() - 1
    _fresh_connections(sender=SimpleNamespace(request=SimpleNamespace(is_eager=True)))
    assert connection.connection is raw
