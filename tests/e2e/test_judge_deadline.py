"""Real worker processes against a judge that answers 200 and then streams a body that never ends."""

import time

import pytest

from fakejudge import FakeJudgeServer, StreamForever
from judgeapp.judging import runs
from judgeapp.models import Run, RunStatus, UnitStatus
from tests.factories import pointwise_run
from tests.helpers import run_state, wait_for

pytestmark = pytest.mark.slow


def test_a_judge_streaming_forever_holds_no_worker_past_its_deadline(worker_factory, make_judge):
    # Before the deadline on the whole call, each of these calls held its pool process for the task's soft
    # limit (600 s), and a run on a healthy judge queued behind them waited as long.
    with FakeJudgeServer(StreamForever()) as endless:
        stuck = make_judge("endless", server=endless, timeout_seconds=1.0, max_concurrency=2)
        healthy = make_judge()
        worker = worker_factory(concurrency=2, JUDGE_MAX_ATTEMPTS="2")
        first = pointwise_run(judge=stuck, n=4, executor="celery")
        runs.run_enqueue(run=first)
        wait_for(lambda: len(endless.chat_requests) >= 2, 60, message="both processes in a call that never ends")

        second = pointwise_run(judge=healthy, n=4, executor="celery")
        started = time.monotonic()
        runs.run_enqueue(run=second)
        wait_for(
            lambda: Run.objects.get(pk=second.pk).is_finished, 90, message="the healthy run to finish",
            explain=lambda: run_state(second.pk, worker),
        )
        # The four endless units take 2 attempts of 1 s each on two processes (about 4 s), then the second run:
        # seconds, not the 600 s of the task's limit (generous for a loaded CI machine).
        assert time.monotonic() - started < 45
        second.refresh_from_db()
        assert second.status == RunStatus.DONE and second.done_units == 4

        wait_for(lambda: Run.objects.get(pk=first.pk).is_finished, 30, message="the endless run to finish")
        failed = list(first.judgments.values_list("status", "error"))
        assert len(failed) == 4
        assert all(status == UnitStatus.FAILED and "timed out after 1s, 2 attempts" in error for status, error in failed)
        assert len(endless.chat_requests) == 8
