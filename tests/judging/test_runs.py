"""The run machinery with the pointwise kind, in process, against the fake server over HTTP."""

import uuid

import pytest
from django.utils import timezone

from fakejudge import PerConversation, Reply, Status, When
from judgeapp.judging import runs, taskqueue
from judgeapp.judging.runs import lifecycle
from judgeapp.models import AuditLog, Judgment, Output, Run, RunStatus, UnitStatus
from tests.factories import RUBRIC_TWO, pointwise_run

pytestmark = pytest.mark.django_db


def units_sent(monkeypatch) -> list[int]:
    """The ids of the units sent to the workers from now on (nothing reaches a broker)."""
    sent: list[int] = []

    def send(name, *args, **options):
        if name == taskqueue.EXECUTE_JUDGMENTS:
            sent.extend(args[0])

    monkeypatch.setattr(taskqueue, "send", send)
    return sent


def test_pointwise_run_judges_every_case_and_criterion_once(judge, fake_judge):
    run = pointwise_run(judge=judge, n=5, rubric=RUBRIC_TWO)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert run.total_units == run.done_units == 10
    keys = set(run.judgments.values_list("key", flat=True))
    assert keys == {f"c{i:03d}/{c}" for i in range(5) for c in ("helpfulness", "tone")}
    assert len(fake_judge.chat_requests) == 10
    # The judge grades one criterion per call, with that criterion's scale and examples.
    prompt = fake_judge.chat_requests[0].prompt
    assert prompt.count("Criterion:") == 1 and "Examples:" in prompt
    assert run.report["mean"] is not None and set(run.report["per_criterion"]) == {"helpfulness", "tone"}


def test_rerunning_the_same_judgments_costs_no_call(judge, fake_judge):
    runs.run_execute_inline(run=pointwise_run(judge=judge, n=3))
    calls = len(fake_judge.chat_requests)
    second = pointwise_run(judge=judge, n=3)
    runs.run_execute_inline(run=second)
    assert len(fake_judge.chat_requests) == calls
    cached = list(second.judgments.values_list("cached", flat=True))
    assert len(cached) == 3 and all(cached)


def test_starting_twice_creates_the_units_once(judge):
    run = pointwise_run(judge=judge, n=3)
    assert runs.run_start(run_pk=run.pk) is True
    assert runs.run_start(run_pk=run.pk) is False
    assert run.judgments.count() == 3


def test_planned_units_are_inserted_once_with_every_default_of_the_model(judge):
    # A stage planned again (a start replayed after a crash) inserts nothing twice and changes nothing;
    # a unit inserted in bulk reads back as one the ORM would have made.
    from judgeapp.judging.runkind import UnitSpec

    run = pointwise_run(judge=judge, n=1)
    first = [UnitSpec(key=f"u{i}", payload={"i": i, "text": "é\"'"}) for i in range(3)]
    lifecycle._units_create(run, 0, first)
    before = {u.key: (u.uuid, u.payload) for u in run.judgments.all()}
    lifecycle._units_create(
        run, 0, [UnitSpec(key="u1", payload={"changed": True}), UnitSpec(key="u3", order="ab", judge_id=judge.pk)],
    )
    units = {u.key: u for u in run.judgments.all()}
    assert sorted(units) == ["u0", "u1", "u2", "u3"]
    assert (units["u1"].uuid, units["u1"].payload) == before["u1"] and units["u1"].payload["text"] == "é\"'"
    assert len({u.uuid for u in units.values()}) == 4
    made = Judgment(run=run, key="orm")
    for name in (
        "status", "messages", "raw_reply", "parsed", "attempts", "cached", "truncated", "transcript", "claim_token", "stage",
    ):
        assert getattr(units["u3"], name) == getattr(made, name), name
    assert units["u3"].order == "ab" and units["u3"].judge_id == judge.pk and units["u3"].created_at is not None


def test_a_unit_is_claimed_by_one_caller_only(judge):
    run = pointwise_run(judge=judge, n=1)
    runs.run_start(run_pk=run.pk)
    unit = run.judgments.get()
    assert runs.judgment_claim(judgment_id=unit.pk, worker="w1") is not None
    assert runs.judgment_claim(judgment_id=unit.pk, worker="w2") is None


def test_only_the_claim_holder_can_record(judge):
    from judgeapp.judging.runkind import UnitResult

    run = pointwise_run(judge=judge, n=1)
    runs.run_start(run_pk=run.pk)
    unit = Judgment.objects.select_related("run").get(run=run)
    runs.judgment_claim(judgment_id=unit.pk, worker="w1")
    assert runs.judgment_record(
        unit=unit, token=uuid.uuid4(), result=UnitResult(ok=True, fields={"parsed": {"score": 1}}),
    ) is False
    unit.refresh_from_db()
    assert unit.status == UnitStatus.CLAIMED


def test_an_expired_lease_can_be_taken_over(judge):
    run = pointwise_run(judge=judge, n=1)
    runs.run_start(run_pk=run.pk)
    unit = run.judgments.get()
    runs.judgment_claim(judgment_id=unit.pk, worker="elsewhere:1:1")
    Judgment.objects.filter(pk=unit.pk).update(lease_expires_at=timezone.now() - timezone.timedelta(seconds=1))
    assert runs.judgment_claim(judgment_id=unit.pk, worker="w2") is not None


def test_recovery_releases_the_claims_of_a_dead_process(judge, monkeypatch):
    sent = units_sent(monkeypatch)
    run = pointwise_run(judge=judge, n=2, executor="celery")
    runs.run_start(run_pk=run.pk)
    first, second = run.judgments.order_by("pk")
    import socket

    dead = f"{socket.gethostname()}:999999:1:1"  # no such pid on this host
    runs.judgment_claim(judgment_id=first.pk, worker=dead)
    counts = runs.runs_recover()
    first.refresh_from_db()
    assert first.status == UnitStatus.PENDING
    assert counts["released"] == 1
    assert set(sent) == {first.pk, second.pk}


def test_a_recovery_pass_that_fails_after_releasing_claims_is_followed_by_one_that_sends_them(judge, monkeypatch):
    """The worker's recovery thread: a pass that released a dead worker's claims and then could not send
    them (the database hiccupped) is followed by a full pass; else the units stayed pending with no message
    until their run counted as stalled, minutes later."""
    import socket
    import threading

    from django.db import connections

    from judgeapp.judging import signals

    sent, failures, armed = [], [], []

    def send(name, *args, **options):
        if name != taskqueue.EXECUTE_JUDGMENTS:
            return
        if armed and not failures:
            failures.append("database down")
            raise ConnectionError("database down")
        sent.extend(args[0])

    monkeypatch.setattr(taskqueue, "send", send)
    monkeypatch.setattr(connections, "close_all", lambda: None)  # the test's transaction stays open
    run = pointwise_run(judge=judge, n=2, executor="celery")
    runs.run_start(run_pk=run.pk)
    sent.clear()
    armed.append(True)  # the send fails from the recovery's first pass on
    first, second = run.judgments.order_by("pk")
    runs.judgment_claim(judgment_id=first.pk, worker=f"{socket.gethostname()}:999999:1:1")  # a dead process

    stop, passes = threading.Event(), []

    def recover(full: bool) -> bool:
        passes.append(full)
        ok = signals._recover(full)
        if len(passes) == 3:
            stop.set()
        return ok

    signals.recovery_loop(recover, stop, 0, broker_identity=lambda: "the same broker")
    first.refresh_from_db()
    assert failures and first.status == UnitStatus.PENDING
    assert passes == [True, True, False]  # full at start, full again after the failure, then the usual pass
    assert set(sent) == {first.pk, second.pk}


def test_recovery_leaves_a_live_claim_alone(judge, monkeypatch):
    from judgeapp.judging.workers import worker_identity

    units_sent(monkeypatch)
    run = pointwise_run(judge=judge, n=1, executor="celery")
    runs.run_start(run_pk=run.pk)
    unit = run.judgments.get()
    runs.judgment_claim(judgment_id=unit.pk, worker=worker_identity())
    runs.runs_recover()
    unit.refresh_from_db()
    assert unit.status == UnitStatus.CLAIMED


def test_cancel_stops_pending_units_and_is_audited(judge, lead):
    run = pointwise_run(judge=judge, n=3, executor="celery")
    runs.run_start(run_pk=run.pk)
    assert runs.run_cancel(run=run, actor=lead, reason="wrong rubric") is True
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert set(run.judgments.values_list("status", flat=True)) == {UnitStatus.CANCELLED}
    entry = AuditLog.objects.get(run=run)
    assert entry.actor == lead and entry.reason == "wrong rubric"
    assert runs.judgment_execute(judgment_id=run.judgments.first().pk) is False


def test_parse_failure_on_first_try_and_valid_retry_gives_a_valid_run(judge, fake_judge):
    from fakejudge import DemoBrain

    fake_judge.action = PerConversation(Reply("I think it is decent."), DemoBrain())
    run = pointwise_run(judge=judge, n=4)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert run.report["parse_failures"] == 0
    assert set(run.judgments.values_list("parse_attempts", flat=True)) == {2}


def test_always_malformed_on_2_of_20_cases_makes_the_run_invalid(judge, fake_judge):
    from fakejudge import DemoBrain

    fake_judge.action = When(lambda r: "(ticket 3)" in r.prompt or "(ticket 7)" in r.prompt, Reply("{score: five"), DemoBrain())
    run = pointwise_run(judge=judge, n=20, threshold=1.0)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.INVALID
    assert run.report["parse_failures"] == 2 and run.report["parse_failure_rate"] == 0.1
    assert run.report["gate"]["passed"] is False
    failed = run.judgments.get(key="c003/helpfulness")
    assert failed.status == UnitStatus.FAILED and failed.raw_reply == "{score: five" and failed.parse_attempts == 2


def test_a_server_refusing_the_format_fails_the_run_with_one_message(judge, fake_judge):
    judge.structured_output = "json_schema"
    judge.save()
    fake_judge.action = Status(500, message="response_format json_schema is not supported")
    run = pointwise_run(judge=judge, n=10)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert "structured_output" in run.error
    assert len(fake_judge.chat_requests) == 1
    assert run.judgments.filter(status=UnitStatus.CANCELLED).count() == 9


def test_a_system_under_test_generates_outputs_first(judge, make_system, fake_judge):
    system = make_system()
    run = pointwise_run(judge=judge, n=3, system=system, generate=True)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert Output.objects.filter(run=run, source=Output.Source.SYSTEM).count() == 3
    assert run.judgments.filter(purpose="generate").count() == 3
    assert run.judgments.filter(purpose="judge", status="done").count() == 3


def test_threads_in_process_judge_concurrently(transactional_db, make_judge):
    from fakejudge import DemoBrain, FakeJudgeServer

    with FakeJudgeServer(DemoBrain(), latency=0.2) as slow:
        judge = make_judge("slow", server=slow, max_concurrency=4)
        run = pointwise_run(judge=judge, n=12)
        runs.run_execute_inline(run=run, concurrency=4)
        run.refresh_from_db()
        assert run.status == RunStatus.DONE and run.done_units == 12
        assert slow.max_in_flight == 4


def test_run_id_must_be_safe_for_a_directory(judge):
    from judgeapp.judging.errors import InputError

    with pytest.raises(InputError, match="run id"):
        pointwise_run(judge=judge, run_id="../escape")
    pointwise_run(judge=judge, run_id="nightly-2026.11.29")
    with pytest.raises(InputError, match="already taken"):
        pointwise_run(judge=judge, run_id="nightly-2026.11.29")
    assert Run.objects.count() == 1


def test_a_sequential_runs_lease_is_short_and_renewed_while_it_works(transactional_db, monkeypatch, settings):
    """Another machine must be able to take over a dead holder's run within minutes, not hours."""
    import time

    from judgeapp.judging.runkind import _REGISTRY, RunHandler

    seen = {}

    class Slow(RunHandler):
        kind = "slow-test"
        sequential = True

        def run_sequential(self, run, progress=None):
            seen["first"] = Run.objects.get(pk=run.pk).lease_expires_at
            time.sleep(0.5)
            seen["later"] = Run.objects.get(pk=run.pk).lease_expires_at
            runs.run_finish(run_pk=run.pk, status=RunStatus.DONE, report={})

    monkeypatch.setitem(_REGISTRY, "slow-test", Slow())
    settings.LEASE_SECONDS = 1
    run = Run.objects.create(run_id="seq", kind="slow-test", executor="inline", status=RunStatus.RUNNING)
    assert runs.run_sequential_execute(run_pk=run.pk) is True
    assert seen["first"] - timezone.now() < timezone.timedelta(seconds=2)
    assert seen["later"] > seen["first"]
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.claim_token is None


def test_a_batch_waiting_for_a_busy_judge_gives_back_its_unstarted_units_for_other_processes(make_judge, fake_judge, monkeypatch):
    """More worker processes than the judge's slots: a process that has to wait for a slot keeps the unit
    it is on and sends the rest of its batch back to the queue, where a process with nothing to do takes it."""
    from judgeapp.judging import endpoints

    judge = make_judge(max_concurrency=1)
    sent: list[int] = []
    held = []

    def send(name, batch, **options):
        sent.extend(batch)
        while held:
            endpoints._limiter.release(held.pop())

    monkeypatch.setattr(taskqueue, "send", send)
    run = pointwise_run(judge=judge, n=3, executor="celery")
    runs.run_start(run_pk=run.pk)
    first, *rest = run.judgments.order_by("pk")
    sent.clear()
    # Another process holds the judge's one slot until the batch has given its rest back. (Taken and given
    # back in this thread: on SQLite another thread could not write while the test's transaction is open.)
    held.append(endpoints._limiter.acquire(judge.name, 1))
    assert runs.judgments_execute(ids=[first.pk, *(u.pk for u in rest)]) == 3

    assert sent == [u.pk for u in rest]
    statuses = dict(run.judgments.values_list("pk", "status"))
    assert statuses == {first.pk: UnitStatus.DONE, **{u.pk: UnitStatus.PENDING for u in rest}}
    assert len(fake_judge.chat_requests) == 1


def test_a_batch_with_free_slots_judges_all_its_units_itself(judge, fake_judge, monkeypatch):
    sent = units_sent(monkeypatch)
    run = pointwise_run(judge=judge, n=3, executor="celery")
    runs.run_start(run_pk=run.pk)
    sent.clear()
    assert runs.judgments_execute(ids=list(run.judgments.order_by("pk").values_list("pk", flat=True))) == 3
    assert sent == []
    assert set(run.judgments.values_list("status", flat=True)) == {UnitStatus.DONE}


def test_a_units_finish_time_is_when_its_judgment_finished_not_when_its_batch_was_recorded(judge, fake_judge):
    fake_judge.latency = 0.3
    run = pointwise_run(judge=judge, n=3)
    runs.run_execute_inline(run=run, concurrency=1)  # the three are recorded in one batch, at the end
    finished = sorted(run.judgments.values_list("finished_at", flat=True))
    assert len(finished) == 3
    assert all((later - earlier).total_seconds() >= 0.25 for earlier, later in zip(finished, finished[1:]))


def test_a_server_that_cannot_be_reached_fails_the_run_only_until_it_has_answered(judge):
    import socket

    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge.base_url = f"http://127.0.0.1:{port}/v1"
    judge.save()
    run = pointwise_run(judge=judge, n=2)
    runs.run_start(run_pk=run.pk)
    first, second = Judgment.objects.select_related("run", "judge").filter(run=run).order_by("key")
    # Never reached in this run (a wrong base URL, a server that is down): the whole run fails.
    result, run_failure = runs.unit_judge(first)
    assert not result.ok and run_failure == result.fields["error"] and "cannot connect to the server" in run_failure
    # Once it has answered in this run, a lost connection (a restart) fails only its unit.
    Judgment.objects.filter(pk=first.pk).update(status=UnitStatus.DONE, raw_reply='{"reasoning": "ok", "score": 4}')
    result, run_failure = runs.unit_judge(second)
    assert not result.ok and "cannot connect to the server" in result.fields["error"] and run_failure is None


def test_a_units_time_limit_is_its_calls_deadline_under_the_ceiling(make_judge, settings):
    # A worker's task is cut off when its units' calls can no longer be running (a verdict, its parse retry
    # and a wait for a slot, each at most the judge's call deadline), not after the fixed ceiling.
    from judgeapp.judging.client import call_deadline_seconds
    from judgeapp.judging.endpoints import endpoint_config

    settings.JUDGE_MAX_ATTEMPTS = 1
    quick = make_judge(timeout_seconds=3.0)
    assert call_deadline_seconds(endpoint_config(quick)) == 3.0
    grace = settings.UNIT_HARD_TIME_LIMIT - settings.UNIT_SOFT_TIME_LIMIT
    assert lifecycle.unit_time_limits(pointwise_run(judge=quick, executor="celery")) == (9.0, 9.0 + grace)
    # A judge whose calls could outlast the ceiling, and a kind that cannot count its calls, get the ceiling.
    settings.JUDGE_MAX_ATTEMPTS = 5
    slow = make_judge("slow", timeout_seconds=300.0)
    ceiling = (settings.UNIT_SOFT_TIME_LIMIT, settings.UNIT_HARD_TIME_LIMIT)
    assert lifecycle.unit_time_limits(pointwise_run(judge=slow, executor="celery")) == ceiling
    run = pointwise_run(judge=quick, executor="celery")
    run.kind = "agent"
    assert lifecycle.unit_time_limits(run) == ceiling
