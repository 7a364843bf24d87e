"""A Redis broker without persistence killed mid-run and started again: every message it held is gone. The
worker's recovery sees the new server (or the pass that could not reach it) and sends every pending unit
again at its next pass: the run moves again within seconds, every unit is judged once, none fails.

A private redis-server on a free port is started and killed here; the machine's own is never touched.
"""

import shutil
import subprocess
import time
from collections import Counter

import pytest

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.judging import runs
from judgeapp.models import Judgment, Run, RunStatus, UnitStatus
from tests.factories import pointwise_run
from tests.helpers import free_port, listening, run_state, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server for a private broker"),
]

UNITS = 60


class PrivateRedis:
    """A redis-server on a free loopback port, with no persistence: a restart starts it empty."""

    def __init__(self, tmp_path):
        self.port, self.dir = free_port(), tmp_path
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(lambda: listening(self.port), 10, message="redis-server listening")

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def private_redis(tmp_path):
    redis = PrivateRedis(tmp_path)
    redis.start()
    yield redis
    if redis.proc.poll() is None:
        redis.kill()


def test_a_broker_killed_and_restarted_mid_run_loses_no_unit_and_judges_none_twice(
    worker_factory, make_judge, private_redis, celery_broker
):
    with FakeJudgeServer(DemoBrain(), latency=0.2) as slow:
        judge = make_judge("slow", server=slow, max_concurrency=2)
        run = pointwise_run(judge=judge, n=UNITS, executor="celery")
        celery_broker(private_redis.url)
        # The slot limiter on lock files: this test is about the broker's messages, not the limiter's Redis.
        worker = worker_factory(concurrency=2, CELERY_BROKER_URL=private_redis.url, JUDGE_LIMITER="host")
        runs.run_enqueue(run=run)

        wait_for(lambda: Run.objects.get(pk=run.pk).done_units >= 10, 60, message="10 judgments done")
        private_redis.kill()
        time.sleep(5)
        private_redis.start()
        restarted = time.monotonic()
        done_at_restart = Run.objects.get(pk=run.pk).done_units
        assert done_at_restart < UNITS, "the run finished while the broker was down: nothing was lost to recover"

        wait_for(
            lambda: Run.objects.get(pk=run.pk).done_units > done_at_restart, 30, message="the run to move again",
            explain=lambda: run_state(run.pk, worker),
        )
        moved_after = time.monotonic() - restarted
        wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, 60, message="the run to finish", explain=lambda: run_state(run.pk, worker))

        run.refresh_from_db()
        assert run.status == RunStatus.DONE, run.error
        assert run.done_units == UNITS and run.failed_units == 0
        assert Judgment.objects.filter(run=run, status=UnitStatus.DONE).count() == UNITS
        calls = Counter(request.prompt for request in slow.chat_requests)
        assert len(calls) == UNITS and set(calls.values()) == {1}, "a case was judged twice"
        assert moved_after <= 30
