"""A real worker whose database refuses connections for a few seconds mid-run: it waits for the database, and
the run finishes with nothing failed and nothing asked twice (PostgreSQL: the fault is a TCP proxy cut)."""

import time

import pytest
from django.db import connection

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.judging import runs
from judgeapp.models import Judgment, Run, RunStatus, UnitStatus
from tests.factories import pointwise_run
from tests.helpers import TcpProxy, database_address, database_url_for_subprocess, run_state, wait_for

pytestmark = pytest.mark.slow


def test_a_worker_whose_database_refuses_for_seconds_finishes_the_run_asking_the_judge_once_per_unit(worker_factory, make_judge):
    if connection.vendor != "postgresql":
        pytest.skip("the database is cut at its TCP connection: PostgreSQL only")
    with FakeJudgeServer(DemoBrain(), latency=0.2) as slow, TcpProxy(database_address()) as proxy:
        judge = make_judge("slow", server=slow, max_concurrency=4)
        run = pointwise_run(judge=judge, n=40, executor="celery")
        worker = worker_factory(concurrency=4, DATABASE_URL=database_url_for_subprocess(port=proxy.port))
        runs.run_enqueue(run=run)
        wait_for(lambda: Run.objects.get(pk=run.pk).done_units >= 8, 60, message="8 judgments done")

        proxy.cut()
        time.sleep(5)
        at_return = Run.objects.get(pk=run.pk).done_units
        assert at_return < 40, "the run finished before the database went away: the test measured nothing"
        proxy.restore()

        wait_for(lambda: Run.objects.get(pk=run.pk).done_units > at_return, 30, message="the run to move again")
        wait_for(
            lambda: Run.objects.get(pk=run.pk).is_finished, 60, message="the run to finish",
            explain=lambda: run_state(run.pk, worker),
        )

    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error
    assert (run.done_units, run.failed_units) == (40, 0)
    assert Judgment.objects.filter(run=run, status=UnitStatus.DONE).count() == 40
    prompts = [request.prompt for request in slow.chat_requests]
    assert len(prompts) == len(set(prompts)) == 40  # each unit's judge asked once: nothing paid twice
    assert "out of reach" in worker.log()  # the fault did reach the worker
