"""Real Celery workers: a pairwise run with generation and a jury fan out; a worker is SIGKILLed mid-run
and another finishes the run with nothing lost and nothing judged twice."""

import pytest

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.judging import runs
from judgeapp.models import Judgment, Output, Run, RunStatus, System, UnitStatus
from tests.factories import GOOD_REPLY
from tests.helpers import wait_for
from tests.pairwise.builders import jury_run, pairwise_run

pytestmark = pytest.mark.slow


def test_killed_worker_mid_pairwise_run_loses_nothing_and_judges_nothing_twice(worker_factory, make_judge):
    with FakeJudgeServer(DemoBrain(), latency=0.3) as slow:
        judge = make_judge("slow", server=slow, max_concurrency=4)
        brief = System.objects.create(name="bot-v1", model="gpt-4o-mini", system_prompt="Be brief.", base_url=slow.url)
        full = System.objects.create(
            name="bot-v2", model="gpt-4o-mini", system_prompt="Give concrete next steps.", base_url=slow.url,
        )
        run = pairwise_run(judge=judge, system_a=brief, system_b=full, n=15, executor="celery")
        first = worker_factory(concurrency=4)
        runs.run_enqueue(run=run)

        # Kill it once the judging stage is under way (after the 30 replies were generated).
        wait_for(lambda: Judgment.objects.filter(run=run, purpose="judge", status=UnitStatus.DONE).count() >= 6, 90,
                 message="judging under way")
        first.kill()
        in_flight = Judgment.objects.filter(run=run, status=UnitStatus.CLAIMED).count()
        assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING

        worker_factory(concurrency=4)
        wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, 120, message="the run to finish")
        run.refresh_from_db()
        assert run.status == RunStatus.DONE, run.error
        assert Output.objects.filter(run=run).count() == 30
        judge_units = Judgment.objects.filter(run=run, purpose="judge")
        assert judge_units.count() == 30 and judge_units.filter(status=UnitStatus.DONE).count() == 30
        judge_prompts = [r.prompt for r in slow.chat_requests if "<reply_1>" in r.prompt]
        assert len(set(judge_prompts)) == 30
        assert len(judge_prompts) - 30 <= in_flight
        assert run.report["judged"] == 15 and run.report["winner"] == "B"


def test_a_jury_runs_on_the_workers_with_its_jurors_in_parallel(worker_factory, make_judge):
    with FakeJudgeServer(DemoBrain(quality=lambda r, m="": 1.0 if GOOD_REPLY in r else 0.0), latency=0.3) as slow:
        jurors = [make_judge(name, model=model, family=family, server=slow)
                  for name, model, family in [("j-llama", "llama-3.1-8b", "meta"), ("j-mistral", "mistral-7b", "mistral"),
                                              ("j-gemma", "gemma-2-9b", "google")]]
        run = jury_run(judges=jurors, n=6, executor="celery")
        worker_factory(concurrency=6)
        runs.run_enqueue(run=run)
        wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, 90, message="the jury to finish")
        run.refresh_from_db()
        assert run.status == RunStatus.DONE, run.error
        assert [c["pooled"] for c in run.report["cases"]] == ["pass", "fail"] * 3
        assert slow.max_in_flight >= 3
