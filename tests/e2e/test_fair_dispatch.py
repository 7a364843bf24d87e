"""Real worker processes: a small run started behind a big one is not queued behind all of its units."""

import time

import pytest

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.judging import runs
from judgeapp.models import Judgment, Run, RunStatus
from tests.factories import pointwise_run
from tests.helpers import run_state, wait_for

pytestmark = pytest.mark.slow


def test_a_small_run_started_behind_a_big_one_finishes_first(worker_factory, make_judge):
    with FakeJudgeServer(DemoBrain()) as fast:
        judge = make_judge("fast", server=fast, max_concurrency=2)
        big = pointwise_run(judge=judge, n=2000, executor="celery", run_id="big")
        small = pointwise_run(judge=judge, n=10, executor="celery", run_id="small")
        worker = worker_factory(concurrency=2)
        runs.run_enqueue(run=big)
        wait_for(lambda: Run.objects.get(pk=big.pk).done_units >= 1, 60, message="the big run's first judgment")
        runs.run_enqueue(run=small)
        started = time.monotonic()
        wait_for(
            lambda: Run.objects.get(pk=small.pk).is_finished, 20, message="the small run to finish",
            explain=lambda: run_state(small.pk, worker),
        )
        took = time.monotonic() - started
        big_at_that_time = Run.objects.get(pk=big.pk)
        assert Run.objects.get(pk=small.pk).status == RunStatus.DONE
        assert not big_at_that_time.is_finished and big_at_that_time.done_units < 2000, took
        wait_for(
            lambda: Run.objects.get(pk=big.pk).is_finished, 240, message="the big run to finish",
            explain=lambda: run_state(big.pk, worker),
        )
        big.refresh_from_db()
        assert big.status == RunStatus.DONE and big.done_units == 2000 == big.total_units
        assert Judgment.objects.filter(run=big).count() == 2000
