"""A unit's claim is a short lease that its holder renews while it judges, and that lapses within one lease
of the holder going silent; the database refusing while units are claimed, judged and recorded is waited
for, never counted against the judge, and no judge call is paid twice."""

import threading
import time
import uuid

import pytest
from django.db import OperationalError, connection, connections
from django.utils import timezone

from judgeapp.judging import runs
from judgeapp.judging.leases import UNIT, Heartbeat
from judgeapp.models import Judgment, Run, RunStatus, UnitStatus
from tests.factories import pointwise_run
from tests.helpers import wait_for

# Threads with their own database connections see only what is committed.
pytestmark = pytest.mark.django_db(transaction=True)


def _started(judge, n: int) -> tuple[Run, list[int]]:
    run = pointwise_run(judge=judge, n=n)
    runs.run_start(run_pk=run.pk)
    return run, list(run.judgments.order_by("pk").values_list("pk", flat=True))


@pytest.mark.slow  # waits on the wall clock: a lease of 1 s renewed and let lapse
def test_a_holders_lease_is_renewed_while_it_judges_and_lapses_within_one_lease_of_its_silence(judge, fake_judge, settings):
    settings.LEASE_SECONDS = 1
    fake_judge.latency = 0.8
    run, ids = _started(judge, 2)
    worker = threading.Thread(target=lambda: (runs.judgments_execute(ids=ids), connections.close_all()))
    worker.start()
    try:
        # Past the first lease (and before the batch is done): the second unit, waiting its turn, is still held.
        time.sleep(1.4)
        assert runs.judgment_claim(judgment_id=ids[1], worker="another-host:1:1") is None
        assert runs.runs_recover()["released"] == 0
    finally:
        worker.join(10)
    assert set(run.judgments.values_list("status", flat=True)) == {UnitStatus.DONE}
    assert len(fake_judge.chat_requests) == 2

    # A holder on another host that goes silent: its last renewal is the end of its claim, one lease later.
    _, (unit,) = _started(judge, 1)
    token = runs.judgment_claim(judgment_id=unit, worker="another-host:1:1")
    with Heartbeat(UNIT, Judgment.objects.filter(pk=unit), token):
        time.sleep(1.4)  # renewed past its first lease
        assert runs.judgment_claim(judgment_id=unit, worker="w2") is None
    silent_at = timezone.now()
    assert Judgment.objects.get(pk=unit).lease_expires_at <= silent_at + timezone.timedelta(seconds=1)
    wait_for(lambda: runs.runs_recover()["released"] == 1, 2, message="the silent holder's unit to be released")
    assert runs.judgment_claim(judgment_id=unit, worker="w2") is not None


@pytest.mark.slow  # waits on the wall clock: a lease of 1 s renewed and let lapse
def test_a_commands_claimed_batch_keeps_its_lease_while_it_waits_for_a_lane(judge, fake_judge, settings):
    settings.LEASE_SECONDS = 1
    fake_judge.latency = 0.4
    run = pointwise_run(judge=judge, n=12)  # one batch of 12 claimed at once, judged 2 at a time: 2.4 s
    probe: list = []

    def another_worker():
        wait_for(lambda: Judgment.objects.filter(run=run, status=UnitStatus.CLAIMED).exists(), 10, message="the claim")
        time.sleep(1.5)  # past the first lease: the batch's last units are still waiting
        last = Judgment.objects.filter(run=run).order_by("-pk").values_list("pk", flat=True).first()
        probe.append(runs.judgment_claim(judgment_id=last, worker="another-host:1:1"))
        connections.close_all()

    prober = threading.Thread(target=another_worker)
    prober.start()
    runs.run_execute_inline(run=run, concurrency=2)
    prober.join(10)
    assert probe == [None]
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and (run.done_units, run.failed_units) == (12, 0)
    assert len(fake_judge.chat_requests) == 12


def test_a_holder_that_lost_its_lease_starts_no_further_unit(judge, fake_judge, settings):
    settings.LEASE_SECONDS = 1
    fake_judge.latency = 0.8
    run, ids = _started(judge, 4)
    worker = threading.Thread(target=lambda: (runs.judgments_execute(ids=ids), connections.close_all()))
    worker.start()
    try:
        wait_for(lambda: len(fake_judge.chat_requests) == 2, 10, message="the second unit's call")
        # Another holder takes the batch over (as after a lapse): the heartbeat finds it gone within a third of a lease.
        other = uuid.uuid4()
        taken = Judgment.objects.filter(pk__in=ids, status=UnitStatus.CLAIMED).update(
            claim_token=other, claimed_by="another-host:1:1",
        )
    finally:
        worker.join(10)
    assert len(fake_judge.chat_requests) == 2  # the unit in flight finished; no other was started
    # What the other holder took stays its own (the lost holder's result for it is dropped); a unit recorded
    # before the takeover stays recorded.
    assert set(Judgment.objects.filter(claim_token=other).values_list("status", flat=True)) == {UnitStatus.CLAIMED}
    assert Judgment.objects.filter(claim_token=other).count() == taken >= 3
    run.refresh_from_db()
    assert run.done_units == Judgment.objects.filter(pk__in=ids, status=UnitStatus.DONE).count() == 4 - taken


def _failing(matches, times: int, tripped: threading.Event | None = None):
    """An execute wrapper: the first `times` statements that `matches` raise OperationalError, as a database
    refusing would (the connection is closed and opened again by the retry)."""
    failed = []

    def wrapper(execute, sql, params, many, context):
        if len(failed) < times and matches(sql):
            failed.append(sql)
            if tripped is not None:
                tripped.set()
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    wrapper.failed = failed
    return wrapper


def _answer_lost(matches, times: int):
    """An execute wrapper: the first `times` statements that `matches` are carried out (in autocommit, they
    commit) and then raise OperationalError, as a connection that drops before the answer comes back."""
    lost = []

    def wrapper(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if len(lost) < times and matches(sql):
            lost.append(sql)
            raise OperationalError("server closed the connection unexpectedly")
        return result

    wrapper.lost = lost
    return wrapper


def test_a_claim_whose_answer_was_lost_is_taken_again_by_its_retry_not_left_held(judge, fake_judge):
    """The claim's UPDATE committed and the connection dropped before its answer: the retry holds the units
    the first try took (same token), judges them at once, and none stays claimed until its lease runs out."""
    run, ids = _started(judge, 3)
    wrapper = _answer_lost(lambda sql: sql.startswith('UPDATE "judgeapp_judgment" ') and "claimed_by" in sql, times=1)
    with connection.execute_wrapper(wrapper):
        assert runs.judgments_execute(ids=ids) == 3
    assert len(wrapper.lost) == 1
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and (run.done_units, run.failed_units) == (3, 0)
    assert not run.judgments.filter(status=UnitStatus.CLAIMED).exists()
    assert len(fake_judge.chat_requests) == 3


def test_a_start_whose_answer_was_lost_plans_the_run_at_once(judge, fake_judge):
    """The run's queued -> running UPDATE committed and its answer was lost: the retry finds the run it
    started and plans it, rather than leaving it running without units until the planner's lease lapses."""
    run = pointwise_run(judge=judge, n=3)
    wrapper = _answer_lost(lambda sql: sql.startswith('UPDATE "judgeapp_run" ') and "claimed_by" in sql, times=1)
    with connection.execute_wrapper(wrapper):
        assert runs.run_start(run_pk=run.pk) is True
    assert len(wrapper.lost) == 1
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.claim_token is None  # planned, and the planner's lease given back
    assert run.judgments.count() == 3


def _record_write(sql: str) -> bool:
    return sql.startswith("UPDATE") and "judgment" in sql and "finished_at" in sql


@pytest.mark.parametrize(
    "matches",
    [
        pytest.param(lambda sql: sql.startswith("UPDATE") and "judgment" in sql and "claimed_by" in sql, id="claim"),
        pytest.param(lambda sql: sql.startswith("SELECT") and "cachedresponse" in sql, id="cache-read"),
        pytest.param(lambda sql: sql.startswith("INSERT") and "cachedresponse" in sql, id="cache-write"),
        pytest.param(_record_write, id="record"),
    ],
)
def test_a_database_that_refuses_twice_is_waited_for_and_every_result_recorded_once(
    judge, fake_judge, monkeypatch, caplog, matches
):
    run, ids = _started(judge, 3)
    wrapper = _failing(matches, times=2)
    with caplog.at_level("WARNING", logger="judgeapp.judging.outages"), connection.execute_wrapper(wrapper):
        assert runs.judgments_execute(ids=ids) == 3
    assert len(wrapper.failed) == 2
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert (run.done_units, run.failed_units) == (3, 0)
    assert set(run.judgments.values_list("status", flat=True)) == {UnitStatus.DONE}
    assert len(fake_judge.chat_requests) == 3  # nothing asked twice
    # Logged when it went away and when it came back, not once per try.
    messages = [record.getMessage() for record in caplog.records]
    assert sum("out of reach" in m for m in messages) == 1 and sum("is back" in m for m in messages) == 1, messages


def test_a_claim_lost_while_the_database_was_away_drops_the_result_and_its_next_holder_pays_nothing(judge, fake_judge):
    run, (unit,) = _started(judge, 1)
    tripped, back = threading.Event(), threading.Event()
    returned = []

    def first_worker():
        # Its record meets a database that refuses until `back`.
        def wrapper(execute, sql, params, many, context):
            if _record_write(sql) and not back.is_set():
                tripped.set()
                raise OperationalError("could not connect to server: Connection refused")
            return execute(sql, params, many, context)

        try:
            with connection.execute_wrapper(wrapper):
                returned.append(runs.judgments_execute(ids=[unit], worker="first-host:1:1"))
        finally:
            connections.close_all()

    first = threading.Thread(target=first_worker)
    first.start()
    try:
        assert tripped.wait(10), "the first worker never tried to record"
        # Its lease lapses meanwhile and another worker takes the unit: the cache answers it.
        Judgment.objects.filter(pk=unit).update(lease_expires_at=timezone.now() - timezone.timedelta(seconds=1))
        assert runs.judgments_execute(ids=[unit], worker="second-host:1:1") == 1
    finally:
        back.set()
        first.join(10)
    assert returned == [1]
    recorded = Judgment.objects.get(pk=unit)
    assert recorded.status == UnitStatus.DONE and recorded.cached
    run.refresh_from_db()
    assert (run.done_units, run.failed_units) == (1, 0)
    assert len(fake_judge.chat_requests) == 1
