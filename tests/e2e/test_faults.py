"""A run outlives its services (issue #27): one fault at a time on PostgreSQL, a private redis-server and real
worker processes, and the run loses nothing, judges nothing twice, counts nothing against a healthy judge and
moves again within 30 s of the service's return. bench/faults.py measures the same faults with larger runs.

The database fault goes through a TCP proxy in front of PostgreSQL (tests/helpers.py TcpProxy); the broker
is a redis-server of the test's own (RedisServer), never the machine's. PostgreSQL pass only: on SQLite the
database is a file, with no connection to refuse.
"""

import os
import shutil
import time

import pytest
from django.db import connection

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.judging import runs
from judgeapp.models import Run, RunStatus
from tests.factories import pointwise_run
from tests.helpers import (
    RedisServer,
    TcpProxy,
    celery_broker,
    database_url_for_subprocess,
    judge_tally,
    moved_again,
    run_fault_tally,
    run_state,
    units_finished,
    wait_for,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")),
        reason="the fault tests run in CI's PostgreSQL pass (DATABASE_URL=postgres://...)",
    ),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server for a private broker"),
]

UNITS = 60
BACK_WITHIN = 30  # seconds after the service's return by which the run must move again, and finish


@pytest.fixture
def broker():
    """A redis-server of this test's own (no persistence), which this process and its workers use."""
    redis = RedisServer().start()
    try:
        with celery_broker(redis.url):
            yield redis
    finally:
        redis.stop()


def assert_run_survived(run, server, *, back: float, workers) -> None:
    """Moves again within BACK_WITHIN s of `back`, finishes by then, and the fault cost it nothing."""
    moved = moved_again(run.pk, since=back, timeout=BACK_WITHIN)
    assert moved is not None, f"the run did not move within {BACK_WITHIN}s of the service's return\n{run_state(run.pk, *workers)}"
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, max(0.1, back + BACK_WITHIN - time.monotonic()),
             message="the run to finish", explain=lambda: run_state(run.pk, *workers))
    tally, calls = run_fault_tally(run.pk, units=UNITS), judge_tally(server.chat_requests)
    assert tally["lost"] == 0, run_state(run.pk, *workers)
    assert calls["judged_twice"] == 0, calls
    assert tally["against_judge"] == 0, tally["example_error"]
    assert tally["status"] == RunStatus.DONE


def test_a_database_that_refuses_connections_for_10_s_costs_the_run_nothing(broker, worker_factory, make_judge):
    port = connection.settings_dict.get("PORT") or 5432
    with FakeJudgeServer(DemoBrain(), latency=0.2) as server, TcpProxy(int(port)) as proxy:
        judge = make_judge("slow", server=server, max_concurrency=4)
        worker = worker_factory(
            concurrency=4, DATABASE_URL=database_url_for_subprocess(port=proxy.port), CELERY_BROKER_URL=broker.url,
        )
        run = pointwise_run(judge=judge, n=UNITS, executor="celery")
        runs.run_enqueue(run=run)
        wait_for(
            lambda: units_finished(run.pk) >= UNITS * 0.3, 60, message="30% of the run",
            explain=lambda: run_state(run.pk, worker),
        )

        proxy.refuse(10)
        back = proxy.wait_back()
        assert_run_survived(run, server, back=back, workers=[worker])


def test_a_broker_killed_and_back_after_8_s_costs_the_run_nothing(broker, worker_factory, make_judge):
    with FakeJudgeServer(DemoBrain(), latency=0.2) as server:
        judge = make_judge("slow", server=server, max_concurrency=4)
        worker = worker_factory(concurrency=4, CELERY_BROKER_URL=broker.url)
        run = pointwise_run(judge=judge, n=UNITS, executor="celery")
        runs.run_enqueue(run=run)
        wait_for(
            lambda: units_finished(run.pk) >= UNITS * 0.3, 60, message="30% of the run",
            explain=lambda: run_state(run.pk, worker),
        )

        broker.kill()  # with every message it held
        time.sleep(8)
        broker.start()
        assert_run_survived(run, server, back=time.monotonic(), workers=[worker])


def test_a_judge_that_streams_forever_holds_no_call_past_its_deadline(broker, worker_factory, make_judge):
    from fakejudge import StreamForever

    with (
        FakeJudgeServer(StreamForever()) as streaming, TcpProxy(streaming.port) as proxy,
        FakeJudgeServer(DemoBrain()) as healthy,
    ):
        # Every call of the streaming judge gets a connection of its own (the client drops it at the
        # deadline): the proxy's connections are the calls.
        stuck = make_judge("streaming", server=streaming, timeout_seconds=2.0, max_concurrency=2)
        stuck.base_url = f"http://127.0.0.1:{proxy.port}/v1"
        stuck.save()
        worker = worker_factory(concurrency=2, CELERY_BROKER_URL=broker.url)
        held = pointwise_run(judge=stuck, n=2, executor="celery")
        runs.run_enqueue(run=held)
        wait_for(lambda: len(streaming.chat_requests) >= 2, 30, message="both pool processes to call the streaming judge")

        behind = pointwise_run(judge=make_judge("healthy", server=healthy), n=4, executor="celery")
        started = time.monotonic()
        runs.run_enqueue(run=behind)
        wait_for(lambda: Run.objects.get(pk=behind.pk).is_finished, BACK_WITHIN, message="the run on a healthy judge to finish",
                 explain=lambda: run_state(behind.pk, worker))
        assert Run.objects.get(pk=behind.pk).status == RunStatus.DONE
        wait_for(lambda: Run.objects.get(pk=held.pk).is_finished, max(0.1, started + BACK_WITHIN - time.monotonic()),
                 message="the streaming judge's run to end", explain=lambda: run_state(held.pk, worker))
        assert units_finished(held.pk) == 2  # failed as timeouts, none left claimed
        longest, still_open = proxy.longest_connection()
        assert not still_open and longest <= 2.0 + 1.0, f"a call lasted {longest:.1f}s against a 2 s deadline"


def test_a_run_started_while_the_broker_is_down_is_accepted_and_runs_when_it_returns(
    broker, worker_factory, make_judge, reviewer
):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    from judgeapp.api.services import api_token_create
    from tests.factories import RUBRIC_ONE, testset_bytes

    with FakeJudgeServer(DemoBrain(), latency=0.2) as server:
        judge = make_judge("slow", server=server, max_concurrency=4)
        worker = worker_factory(concurrency=4, CELERY_BROKER_URL=broker.url)
        token = api_token_create(user=reviewer, name="ci")[1]
        # The worker's own start-up tasks done first: kombu's Redis transport may exit a worker whose broker
        # dies while it holds unacknowledged messages (restore_unacked on a closed connection), a race of
        # the library's that a supervisor's restart covers; this test is about the run created meanwhile.
        wait_for(lambda: worker.log().count(" succeeded in ") >= 2, 30, message="the worker's start-up tasks")

        broker.kill()
        response = Client(raise_request_exception=False).post(
            "/api/v1/runs/pointwise",
            {"testset": SimpleUploadedFile(
                "cases.jsonl", testset_bytes(UNITS),
            ), "rubric": SimpleUploadedFile("rubric.toml", RUBRIC_ONE),
             "judge": judge.name},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 202, response.content[:300]
        run = Run.objects.get(run_id=response.json()["run_id"])
        assert run.status == RunStatus.QUEUED

        broker.start()
        back = time.monotonic()
        wait_for(lambda: Run.objects.get(pk=run.pk).status != RunStatus.QUEUED, BACK_WITHIN, message="the run to start",
                 explain=lambda: run_state(run.pk, worker))
        assert_run_survived(run, server, back=back, workers=[worker])
