"""Planning a run's units and sending them to the workers: a stage is planned in committed batches by one
planner at a time, a planner cut off is continued where it stopped, and a run has a window of a few
batches per judge slot in the queue, topped up as its batches are recorded."""

import pytest
from billiard.exceptions import SoftTimeLimitExceeded
from django.utils import timezone

from judgeapp.judging import runs, taskqueue
from judgeapp.judging.runs import lifecycle
from judgeapp.models import Judgment, Run, RunStatus, UnitStatus
from judgeapp.pointwise.runkind import PointwiseHandler
from tests.factories import pointwise_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    """The batches of unit ids sent to the workers, and the tasks sent by name (a planner handing over)."""
    batches: list[list[int]] = []
    named: list[tuple] = []

    def send(name, *args, **options):
        if name == taskqueue.EXECUTE_JUDGMENTS:
            batches.append(list(args[0]))
        else:
            named.append((name, *args))

    monkeypatch.setattr(taskqueue, "send", send)
    return batches, named


def plan_interrupted_after(monkeypatch, units: int, interruption):
    """The pointwise plan, with `interruption()` called when its `units`-th unit is asked for."""
    plan = PointwiseHandler.plan

    def interrupted(self, run, stage):
        specs = plan(self, run, stage)
        if specs is None:
            return None

        def walk():
            for given, spec in enumerate(specs):
                if given == units:
                    interruption()
                yield spec

        return walk()

    monkeypatch.setattr(PointwiseHandler, "plan", interrupted)


class Killed(BaseException):
    """A planner's process killed (not an exception it could handle)."""


def planner_killed(monkeypatch, judge):
    """A 30-case run whose planner was killed at its 12th unit (batches of 10: 10 units made)."""
    monkeypatch.setattr(lifecycle, "PLAN_BATCH", 10)
    run = pointwise_run(judge=judge, n=30, executor="celery")

    def kill():
        raise Killed

    with monkeypatch.context() as patch:
        plan_interrupted_after(patch, 12, kill)
        with pytest.raises(Killed):
            runs.run_start(run_pk=run.pk)
    return run


def test_a_planner_cut_off_by_its_time_limit_hands_over_and_the_next_plans_the_rest_once(judge, monkeypatch, sent):
    _batches, named = sent
    monkeypatch.setattr(lifecycle, "PLAN_BATCH", 10)
    run = pointwise_run(judge=judge, n=35, executor="celery")

    def time_limit():
        raise SoftTimeLimitExceeded()

    with monkeypatch.context() as patch:
        plan_interrupted_after(patch, 25, time_limit)
        with pytest.raises(SoftTimeLimitExceeded):
            runs.run_start(run_pk=run.pk)
    run.refresh_from_db()
    # The batches committed before the cut are kept; the run is running, its stage not fully planned, and
    # the planner handed over at once (lease ended, the start sent again).
    assert run.judgments.count() == 20 and run.status == RunStatus.RUNNING
    assert run.claim_token is not None and run.lease_expires_at <= timezone.now()
    assert named == [(taskqueue.START_RUN, run.pk)]

    inserted = []
    bulk_create = Judgment.objects.bulk_create
    monkeypatch.setattr(Judgment.objects, "bulk_create", lambda objs, **kw: inserted.extend(objs) or bulk_create(objs, **kw))
    assert runs.run_start(run_pk=run.pk) is True
    run.refresh_from_db()
    assert len(inserted) == 15  # the rest, not the whole plan again
    assert run.total_units == 35 == run.judgments.count() == run.judgments.values("key").distinct().count()
    assert run.claim_token is None and run.status == RunStatus.RUNNING
    assert runs.run_start(run_pk=run.pk) is False  # planned: nothing left to start


def test_a_killed_planner_is_continued_once_its_lease_runs_out(judge, monkeypatch, sent):
    run = planner_killed(monkeypatch, judge)
    assert run.judgments.count() == 10
    # Its lease still runs: no second planner, and the workers' records do not advance the run meanwhile.
    assert runs.run_start(run_pk=run.pk) is False
    runs.run_advance(run_pk=run.pk)
    assert Run.objects.get(pk=run.pk).stage == 0 and run.judgments.count() == 10

    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timezone.timedelta(seconds=1))
    assert runs.run_start(run_pk=run.pk) is True
    run.refresh_from_db()
    assert run.total_units == 30 == run.judgments.count() and run.claim_token is None


def test_a_second_planner_of_the_same_run_returns_at_once(judge, monkeypatch, sent):
    monkeypatch.setattr(lifecycle, "PLAN_BATCH", 5)
    run = pointwise_run(judge=judge, n=12, executor="celery")
    second = []
    plan_interrupted_after(monkeypatch, 7, lambda: second.append(runs.run_start(run_pk=run.pk)))
    assert runs.run_start(run_pk=run.pk) is True
    run.refresh_from_db()
    assert second == [False]
    assert run.total_units == 12 == run.judgments.count()


def test_a_run_sends_a_window_of_its_units_and_each_recorded_batch_sends_the_next(make_judge, sent):
    batches, _named = sent
    judge = make_judge(max_concurrency=1)
    run = pointwise_run(judge=judge, n=100, executor="celery")
    runs.run_start(run_pk=run.pk)
    ids = list(run.judgments.order_by("pk").values_list("pk", flat=True))
    # One judge slot: four batches of 16 in the queue, not the 100 units.
    assert batches == [ids[0:16], ids[16:32], ids[32:48], ids[48:64]]
    assert Run.objects.get(pk=run.pk).dispatched_units == 64

    batches.clear()
    runs.judgments_execute(ids=ids[0:16])
    assert Judgment.objects.filter(pk__in=ids[0:16], status=UnitStatus.DONE).count() == 16
    assert batches == [ids[64:80]]

    # A later run is queued behind four batches of this one, not 36 more.
    other = pointwise_run(judge=judge, n=3, executor="celery", run_id="small")
    batches.clear()
    runs.run_start(run_pk=other.pk)
    assert [pk for batch in batches for pk in batch] == list(other.judgments.order_by("pk").values_list("pk", flat=True))


def test_the_recovery_sends_a_runs_window_again_not_the_rest_of_its_units(make_judge, sent):
    batches, _named = sent
    judge = make_judge(max_concurrency=1)
    run = pointwise_run(judge=judge, n=100, executor="celery")
    runs.run_start(run_pk=run.pk)
    batches.clear()
    # Every message was lost with the broker: the window is sent again, and nothing past it.
    assert runs.run_dispatch(run_pk=run.pk) == 64
    assert sorted(pk for batch in batches for pk in batch) == list(run.judgments.order_by("pk").values_list("pk", flat=True)[:64])


def test_the_recovery_restarts_a_planner_whose_lease_lapsed_and_leaves_a_live_one_alone(judge, monkeypatch, sent):
    batches, named = sent
    started = named  # the tasks sent by name: start_run
    run = planner_killed(monkeypatch, judge)
    assert runs.runs_recover()["started"] == 0 and started == []  # its lease still runs

    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timezone.timedelta(seconds=1))
    assert runs.runs_recover()["started"] == 1 and started == [(taskqueue.START_RUN, run.pk)]
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.claim_token is not None  # still marked: not fully planned
    assert runs.run_start(run_pk=run.pk) is True
    assert Run.objects.get(pk=run.pk).total_units == 30
