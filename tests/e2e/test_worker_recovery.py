"""Real Celery worker processes: a run fans out, a worker is SIGKILLed mid-run, another finishes it."""

import pytest

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.judging import runs
from judgeapp.models import Judgment, Run, RunStatus, UnitStatus
from tests.factories import pointwise_run
from tests.helpers import run_state, wait_for

pytestmark = pytest.mark.slow


def test_killed_worker_loses_no_judgment_and_judges_nothing_twice(worker_factory, make_judge):
    with FakeJudgeServer(DemoBrain(), latency=0.4) as slow:
        judge = make_judge("slow", server=slow, max_concurrency=4)
        run = pointwise_run(judge=judge, n=50, executor="celery")
        first = worker_factory(concurrency=4)
        runs.run_enqueue(run=run)

        wait_for(lambda: Run.objects.get(pk=run.pk).done_units >= 10, 60, message="10 judgments done")
        first.kill()
        at_kill = Run.objects.get(pk=run.pk)
        done_at_kill = set(Judgment.objects.filter(run=run, status=UnitStatus.DONE).values_list("case__input", flat=True))
        assert at_kill.status == RunStatus.RUNNING and at_kill.done_units < 50

        second = worker_factory(concurrency=4)
        wait_for(
            lambda: Run.objects.get(pk=run.pk).is_finished, 120, message="the run to finish",
            explain=lambda: run_state(run.pk, first, second),
        )

        run.refresh_from_db()
        assert run.status == RunStatus.DONE, run.error
        units = Judgment.objects.filter(run=run)
        assert units.count() == 50
        assert units.filter(status=UnitStatus.DONE).count() == 50
        assert run.done_units == 50 and run.failed_units == 0
        assert units.values("case_id").distinct().count() == 50
        # Every case was sent; a case is sent again only if its call was in flight when the worker died: at
        # most one per killed process, and never a case judged before the kill.
        prompts = [r.prompt for r in slow.chat_requests]
        assert len(set(prompts)) == 50
        assert len(prompts) - 50 <= 4
        for prompt in set(p for p in prompts if prompts.count(p) > 1):
            assert not any(text in prompt for text in done_at_kill), "a case judged before the kill was judged again"
        assert len(run.report["lowest"]) > 0 and run.report["judged"] == 50


def test_a_run_started_from_a_queued_row_is_picked_up_by_a_worker(worker_factory, make_judge, fake_judge):
    judge = make_judge()
    run = pointwise_run(judge=judge, n=6, executor="celery")
    worker_factory(concurrency=2)
    runs.run_enqueue(run=run)
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, 60, message="the run to finish")
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.done_units == 6


def test_cancelling_a_running_run_stops_its_workers_from_judging_more(worker_factory, make_judge, lead):
    with FakeJudgeServer(DemoBrain(), latency=0.3) as slow:
        judge = make_judge("slow", server=slow, max_concurrency=2)
        run = pointwise_run(judge=judge, n=40, executor="celery")
        worker_factory(concurrency=2)
        runs.run_enqueue(run=run)
        wait_for(lambda: Run.objects.get(pk=run.pk).done_units >= 4, 60, message="4 judgments done")
        assert runs.run_cancel(run=Run.objects.get(pk=run.pk), actor=lead, reason="wrong rubric") is True
        calls_at_cancel = len(slow.chat_requests)
        # Only the calls already in flight may still finish; nothing new is sent.
        wait_for(
            lambda: not Judgment.objects.filter(run=run, status=UnitStatus.CLAIMED).exists(), 30,
            message="in-flight units to finish",
        )
        import time

        time.sleep(1.5)
        run.refresh_from_db()
        assert run.status == RunStatus.CANCELLED
        assert len(slow.chat_requests) <= calls_at_cancel + 2
        done = Judgment.objects.filter(run=run, status=UnitStatus.DONE).count()
        assert done < 40
        assert (
            Judgment.objects.filter(run=run, status=UnitStatus.CANCELLED).count()
            == 40 - done - Judgment.objects.filter(run=run, status=UnitStatus.FAILED).count()
        )


def test_a_dead_workers_claims_are_released_within_30_s_under_a_1000_unit_backlog(worker_factory, make_judge):
    """Recovery does not wait behind the queue: the surviving worker's own recovery thread releases the
    dead one's claims while a thousand units are still waiting."""
    import time

    from judgeapp.judging.audit import SYSTEM
    from judgeapp.judging.workers import claimer_is_dead

    with FakeJudgeServer(DemoBrain(), latency=0.3) as slow:
        judge = make_judge("slow", server=slow, max_concurrency=4)
        run = pointwise_run(judge=judge, n=1000, executor="celery")
        doomed = worker_factory(concurrency=2)
        survivor = worker_factory(concurrency=2)
        runs.run_enqueue(run=run)
        doomed_pids = {str(pid) for pid in doomed.pool_pids()}
        assert doomed_pids

        def doomed_claims():
            return [
                claimer
                for claimer in Judgment.objects.filter(run=run, status=UnitStatus.CLAIMED).values_list("claimed_by", flat=True)
                if claimer.split(":")[1] in doomed_pids
            ]

        wait_for(lambda: doomed_claims(), 60, message="the doomed worker to claim units")
        doomed.kill()
        killed_at = time.monotonic()
        wait_for(lambda: all(claimer_is_dead(claimer) for claimer in doomed_claims()), 10, message="the doomed pool to be dead")
        wait_for(lambda: not doomed_claims(), 30, message="the dead worker's claims to be released")
        released_after = time.monotonic() - killed_at
        pending = Judgment.objects.filter(run=run, status=UnitStatus.PENDING).count()
        assert pending >= 800, f"the backlog was gone ({pending} pending): the test did not measure recovery under one"
        assert released_after <= 30
        assert survivor.proc.poll() is None
        runs.run_cancel(run=Run.objects.get(pk=run.pk), actor=SYSTEM, reason="test over")
