"""A real Celery worker asks each judgment K times: every trial one call, none twice, and the report's noise."""

import pytest

from fakejudge import DemoBrain, Flip
from judgeapp.judging import runs
from judgeapp.models import Run, RunStatus
from tests.factories import RUBRIC_ONE, pointwise_run
from tests.helpers import run_state, wait_for

pytestmark = pytest.mark.slow


def test_a_worker_asks_every_judgment_three_times_once_each_and_reports_the_noise(worker_factory, judge, fake_judge):
    fake_judge.action = Flip(DemoBrain(), share=0.3, seed=11)
    run = pointwise_run(judge=judge, n=8, rubric=RUBRIC_ONE, executor="celery", trials=3)
    worker = worker_factory(concurrency=2)
    runs.run_enqueue(run=run)
    wait_for(
        lambda: Run.objects.get(pk=run.pk).is_finished, 60, message="the run to finish",
        explain=lambda: run_state(run.pk, worker),
    )

    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error
    assert fake_judge.stats()["chat_requests"] == 8 * 3  # each trial a call of its own, none asked twice
    units = list(run.judgments.filter(purpose="judge"))
    assert len(units) == 8 and all(sorted(t["trial"] for t in u.trials) == [1, 2, 3] for u in units)
    noise = run.report["noise"]
    changed = sum(len({t["verdict"] for t in u.trials}) > 1 for u in units)
    assert noise["trials"] == 3 and noise["changed_share"]["changed"] == changed and noise["changed_share"]["items"] == 8
