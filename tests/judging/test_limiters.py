"""The judge's slot limiter (judging/limiters.py), both backends through the one interface: the judge's
max_concurrency holds across threads and processes; a dead holder's slot is taken back at once on its host and
a lapsed one elsewhere; a live one is left alone. And a service outage (judging/outages.py): a call whose
limiter lost Redis waits for it and then goes on, asking the judge once; a unit whose wait ran out goes back to
pending, never failed."""

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest
from django.db import OperationalError
from django.utils import timezone

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.judging.client import JudgeClient
from judgeapp.judging.errors import ServiceUnavailable
from judgeapp.judging.judge_calls import EndpointConfig
from judgeapp.judging.limiters import DatabaseSlotLimiter, RedisSlotLimiter, limiter_kind
from judgeapp.judging.outages import through_outage
from judgeapp.judging.workers import worker_identity
from judgeapp.models import JudgeSlot, RunStatus, UnitStatus
from tests.factories import pointwise_run
from tests.helpers import ROOT, RedisServer, database_url_for_subprocess

DEAD_HERE = f"{socket.gethostname()}:999999:1:1:dead"  # no such pid on this host
ELSEWHERE = "another-machine:4242:1:1:away"  # a holder this host cannot check: trusted until its lease ends


def private_redis_server() -> RedisServer:
    """A redis-server of the test's own on a free port (never the machine's), that a test may kill and start again."""
    if shutil.which("redis-server") is None:
        if os.environ.get("REQUIRE_BROWSER"):  # CI: the services are there
            pytest.fail("redis-server is not installed")
        pytest.skip("no redis-server on this machine")
    return RedisServer().start()


@pytest.fixture(scope="module")
def redis_server():
    server = private_redis_server()
    yield server
    server.kill()


@pytest.fixture(params=["database", "redis"])
def new_limiter(request):
    """A fresh limiter of the backend the test is run with, each call (as another process would have its own)."""
    if request.param == "redis":
        url = request.getfixturevalue("redis_server").url
        return lambda: RedisSlotLimiter(url)
    return DatabaseSlotLimiter


def hold(limiter, name: str, holders: list[str], *, seconds: float = 3600) -> None:
    """Every slot of judge `name` held by `holders` (one each), their leases running `seconds` from now."""
    if isinstance(limiter, RedisSlotLimiter):
        limiter.redis.zadd(limiter.key(name), {holder: time.time() + seconds for holder in holders})
        return
    until = timezone.now() + timezone.timedelta(seconds=seconds)
    JudgeSlot.objects.bulk_create(
        [JudgeSlot(judge_name=name, slot=i, holder=h, leased_until=until) for i, h in enumerate(holders)]
    )


def free_every_slot(limiter, name: str) -> None:
    if isinstance(limiter, RedisSlotLimiter):
        limiter.redis.delete(limiter.key(name))
    else:
        JudgeSlot.objects.filter(judge_name=name).update(holder="", leased_until=None)


def test_the_limit_holds_across_threads(new_limiter, transactional_db):
    """Each thread has its own limiter (its own database connection or Redis client), as separate workers do."""
    from django.db import connections

    name = f"threads-{uuid.uuid4().hex[:6]}"
    with FakeJudgeServer(DemoBrain(), latency=0.15) as server:

        def call(i):
            try:
                config = EndpointConfig(name=name, model="m", base_url=server.url, max_concurrency=3)
                JudgeClient(config, limiter=new_limiter()).chat([{"role": "user", "content": f"q{i}"}])
            finally:
                connections.close_all()

        threads = [threading.Thread(target=call, args=(i,)) for i in range(9)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(server.chat_requests) == 9
        assert server.max_in_flight == 3


CALLER = """
import os, sys, threading
import django
django.setup()
from django.db import connections
from judgeapp.judging.client import JudgeClient
from judgeapp.judging.judge_calls import EndpointConfig
from judgeapp.judging.limiters import limiter_for_settings
name, url, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = JudgeClient(EndpointConfig(name=name, model="m", base_url=url, max_concurrency=2), limiter=limiter_for_settings())
def call(i):
    try:
        client.chat([{"role": "user", "content": f"{os.getpid()}-{i}"}])
    finally:
        connections.close_all()
print("ready", flush=True)
sys.stdin.readline()
threads = [threading.Thread(target=call, args=(i,)) for i in range(calls)]
for t in threads: t.start()
for t in threads: t.join()
"""


@pytest.mark.slow  # three Django processes start (6 s on two busy cores)
@pytest.mark.parametrize("kind", ["database", "redis"])
def test_the_limit_holds_across_processes(kind, transactional_db, request):
    """Three processes of three calls each against a judge whose limit is 2: on SQLite (the test database
    here, unless DATABASE_URL names another) the database backend is what holds them."""
    env = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": database_url_for_subprocess(),
        "JUDGE_LIMITER": kind,
    }
    if kind == "redis":
        env["JUDGE_LIMITER_REDIS_URL"] = request.getfixturevalue("redis_server").url
    name = f"processes-{uuid.uuid4().hex[:6]}"
    with FakeJudgeServer(DemoBrain(), latency=0.2) as server:
        callers = [
            subprocess.Popen([sys.executable, "-c", CALLER, name, server.url, "3"], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
            for _ in range(3)
        ]
        try:
            for caller in callers:
                assert caller.stdout.readline().strip() == "ready"
            for caller in callers:  # all three start calling at once
                caller.stdin.write("go\n")
                caller.stdin.flush()
            for caller in callers:
                assert caller.wait(60) == 0
        finally:
            for caller in callers:
                caller.kill()
        assert len(server.chat_requests) == 9
        assert server.max_in_flight == 2


def test_the_slot_of_a_dead_holder_on_this_host_is_taken_back_at_once(new_limiter, db):
    limiter = new_limiter()
    name = f"dead-{uuid.uuid4().hex[:6]}"
    hold(limiter, name, [f"{DEAD_HERE}{i}" for i in range(2)])
    started = time.monotonic()
    with limiter(name, 2):
        assert time.monotonic() - started < 1


def test_a_lapsed_slot_held_elsewhere_is_taken(new_limiter, db):
    limiter = new_limiter()
    name = f"lapsed-{uuid.uuid4().hex[:6]}"
    hold(limiter, name, [ELSEWHERE], seconds=-1)
    started = time.monotonic()
    with limiter(name, 1):
        assert time.monotonic() - started < 1


def _slots_held(limiter, name: str) -> int:
    if isinstance(limiter, RedisSlotLimiter):
        return limiter.redis.zcard(limiter.key(name))
    return JudgeSlot.objects.filter(judge_name=name).exclude(holder="").count()


def test_a_take_tried_again_after_its_answer_was_lost_holds_one_slot_not_two(new_limiter, db):
    """The connection drops as the take commits: the outage policy tries again with the same holder, which
    must find the slot it took, not take a second one and leave the first held until its lease runs out."""
    limiter = new_limiter()
    name = f"retried-{uuid.uuid4().hex[:6]}"
    holder = f"{worker_identity()}:retry"
    first = limiter._take(name, 2, holder, 60)
    again = limiter._take(name, 2, holder, 60)  # the retry: the first take committed, its answer never came
    assert first is not None and again is not None and again.pk == first.pk
    assert _slots_held(limiter, name) == 1
    limiter._give_back(again)
    assert _slots_held(limiter, name) == 0
    # At the limit, the holder that has a slot keeps it on a retry; another caller waits.
    hold_all = limiter._take(name, 1, holder, 60)
    assert hold_all is not None and limiter._take(name, 1, holder, 60) is not None
    assert limiter._take(name, 1, f"{worker_identity()}:other", 60) is None


@pytest.mark.slow  # waits on the wall clock: a slot held, a Redis out of reach for seconds
def test_live_holders_keep_their_slots_and_a_waiter_gets_one_when_they_let_go(new_limiter, transactional_db):
    """One slot held by this (live) process, the other by another machine whose lease runs: the waiter waits,
    and has a slot as soon as they are given back."""
    from django.db import connections

    limiter = new_limiter()
    name = f"live-{uuid.uuid4().hex[:6]}"
    hold(limiter, name, [f"{worker_identity()}:live", ELSEWHERE])
    got = threading.Event()

    def wait_for_a_slot():
        try:
            with new_limiter()(name, 2):
                got.set()
        finally:
            connections.close_all()

    waiter = threading.Thread(target=wait_for_a_slot, daemon=True)
    waiter.start()
    assert not got.wait(1.5)
    free_every_slot(limiter, name)
    assert got.wait(5)
    waiter.join(5)


def test_the_deployment_chooses_the_backend():
    assert limiter_kind(configured="", broker_url="redis://10.0.0.5:6379/0") == "redis"
    assert limiter_kind(configured="", broker_url="rediss://10.0.0.5:6380/0") == "redis"
    assert limiter_kind(configured="", broker_url="filesystem://localhost/") == "database"  # SQLite's default
    assert limiter_kind(configured="", broker_url="amqp://10.0.0.5//") == "database"
    assert limiter_kind(configured="database", broker_url="redis://10.0.0.5:6379/0") == "database"
    assert limiter_kind(configured="host", broker_url="redis://10.0.0.5:6379/0") == "database"  # the old lock files' name


# --- outages --------------------------------------------------------------------------------------------


def test_a_service_error_is_retried_until_the_service_returns_and_then_past_the_bound_is_not_the_judges():
    failures = iter([OperationalError("connection refused")] * 3)
    pauses = []

    def flaky():
        error = next(failures, None)
        if error is not None:
            raise error
        return "answer"

    assert through_outage(flaky, what="asking", sleep=pauses.append) == "answer"
    assert len(pauses) == 3 and pauses[0] < pauses[-1]  # backing off

    def down():
        raise OperationalError("connection refused")

    with pytest.raises(ServiceUnavailable, match="asking: the service stayed out of reach"):
        through_outage(down, what="asking", give_up_after=0.3)


def test_an_error_that_is_no_outage_passes_at_once():
    calls = []

    def broken():
        calls.append(1)
        raise OperationalError("no such table: judgeapp_judgeslot")

    with pytest.raises(OperationalError):
        through_outage(broken, what="asking", sleep=lambda _: pytest.fail("slept"))
    assert calls == [1]


@pytest.fixture
def private_redis():
    server = private_redis_server()
    yield server
    server.kill()


@pytest.fixture
def redis_limited(private_redis, monkeypatch):
    """The app's clients take their slots from `private_redis`."""
    from judgeapp.judging import endpoints

    monkeypatch.setattr(endpoints, "_limiter", RedisSlotLimiter(private_redis.url))
    monkeypatch.setattr(endpoints, "_clients", {})
    return private_redis


def judge_one_unit_in_a_thread(run):
    from django.db import connections

    from judgeapp.judging import runs

    unit = run.judgments.get()
    thread = threading.Thread(target=lambda: (runs.judgments_execute(ids=[unit.pk]), connections.close_all()), daemon=True)
    thread.start()
    return unit, thread


@pytest.mark.slow  # waits on the wall clock: a slot held, a Redis out of reach for seconds
def test_a_call_whose_limiter_lost_redis_waits_for_it_and_the_unit_is_judged_once(
    redis_limited, make_judge, fake_judge, transactional_db
):
    """Redis is killed before a unit's call and started again 3 s later: the call waits for it, the judge is
    asked once, and the unit is done, not failed as "no reply"."""
    from judgeapp.judging import runs

    run = pointwise_run(judge=make_judge(), n=1, executor="celery")
    runs.run_start(run_pk=run.pk)
    redis_limited.kill()
    unit, thread = judge_one_unit_in_a_thread(run)
    time.sleep(3)
    assert thread.is_alive() and not fake_judge.chat_requests  # waiting for Redis, not calling the judge
    redis_limited.start()
    thread.join(30)
    assert not thread.is_alive()
    unit.refresh_from_db()
    run.refresh_from_db()
    assert unit.status == UnitStatus.DONE and run.failed_units == 0
    assert len(fake_judge.chat_requests) == 1


@pytest.mark.slow  # waits on the wall clock: a slot held, a Redis out of reach for seconds
def test_a_unit_whose_limiter_stays_out_of_reach_goes_back_to_pending_not_failed(
    redis_limited, make_judge, fake_judge, transactional_db, settings
):
    from judgeapp.judging import runs

    settings.SERVICE_OUTAGE_SECONDS = 1
    run = pointwise_run(judge=make_judge(), n=1, executor="celery")
    runs.run_start(run_pk=run.pk)
    redis_limited.kill()
    unit, thread = judge_one_unit_in_a_thread(run)
    thread.join(30)
    unit.refresh_from_db()
    run.refresh_from_db()
    assert unit.status == UnitStatus.PENDING and unit.claim_token is None
    assert run.status == RunStatus.RUNNING and run.failed_units == 0
    assert not fake_judge.chat_requests


def test_a_slot_that_cannot_be_given_back_is_left_to_lapse(private_redis):
    limiter = RedisSlotLimiter(private_redis.url)
    slot = limiter.acquire(f"lapse-{uuid.uuid4().hex[:6]}", 1, seconds=0.5)
    private_redis.kill()
    started = time.monotonic()
    limiter.release(slot)  # waits for Redis at most the slot's lease, and never raises
    assert time.monotonic() - started < 3
