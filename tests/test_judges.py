"""Judges and systems from the judges file, the environment and the admin; the cross-process limiter."""

import os
import threading
import uuid

import pytest

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.judging.errors import InputError
from judgeapp.judging.endpoints import client_for
from judgeapp.judging.judges import judge_get, judges_sync, system_get
from judgeapp.models import EndpointSource, Judge, System
from tests.helpers import chats_at_once

GOOD = b'''
[judges.small-a]
model = "qwen2.5-7b-instruct"
base_url = "http://127.0.0.1:8000/v1"
api_key_env = "LOCAL_KEY"
max_concurrency = 3

[judges.small-b]
model = "llama3.1:8b"
structured_output = "json_object"

[systems.support-bot-v2]
model = "gpt-4o-mini"
family = "openai"
system_prompt = "You are a support assistant."
'''


@pytest.fixture
def judges_file(tmp_path, settings):
    path = tmp_path / "judges.toml"
    path.write_bytes(GOOD)
    settings.JUDGES_FILE = str(path)
    return path


@pytest.mark.django_db
def test_judges_file_loads_judges_and_systems(judges_file):
    assert set(judges_sync()) == {"small-a", "small-b", "support-bot-v2"}
    a = Judge.objects.get(name="small-a")
    assert (a.model, a.effective_family, a.api_key_env, a.max_concurrency) == ("qwen2.5-7b-instruct", "qwen", "LOCAL_KEY", 3)
    assert Judge.objects.get(name="small-b").effective_family == "meta"
    assert System.objects.get(name="support-bot-v2").system_prompt == "You are a support assistant."
    assert system_get(name="support-bot-v2").family == "openai"


@pytest.mark.django_db
def test_editing_the_file_updates_its_judges_but_not_admin_edits(judges_file):
    judges_sync()
    Judge.objects.filter(name="small-b").update(source=EndpointSource.ADMIN, model="edited-in-admin")
    judges_file.write_bytes(GOOD.replace(b"max_concurrency = 3", b"max_concurrency = 5").replace(b"llama3.1:8b", b"llama3.2:3b"))
    judges_sync()
    assert Judge.objects.get(name="small-a").max_concurrency == 5
    assert Judge.objects.get(name="small-b").model == "edited-in-admin"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "text, message",
    [
        (b"[judges.x]\nfamily = 'qwen'\n", "missing 'model'"),
        (b"[judges.x]\nmodel = 'm'\napi_key = 'sk-123'\n", "api_key_env"),
        (b"[judges.x]\nmodel = 'm'\nstructured_output = 'grammar'\n", "structured_output must be"),
        (b"[judges.x]\nmodel = 'm'\nmax_concurrency = 0\n", "max_concurrency"),
        (b"[judges.x]\nmodel = 'm'\ncolour = 'red'\n", "unknown key"),
        (b"[judge.x]\nmodel = 'm'\n", "unknown table"),
        (b"[judges.x\nmodel = 'm'\n", "not valid TOML"),
    ],
)
def test_a_bad_judges_file_is_one_clear_line(tmp_path, settings, text, message):
    path = tmp_path / "judges.toml"
    path.write_bytes(text)
    settings.JUDGES_FILE = str(path)
    with pytest.raises(InputError, match=message) as exc:
        judges_sync()
    assert "\n" not in str(exc.value)
    assert not Judge.objects.exists()


@pytest.mark.django_db
def test_default_judge_comes_from_the_environment(settings):
    settings.JUDGE_MODEL = "gpt-4o"
    settings.OPENAI_BASE_URL = "http://llm.internal/v1"
    judges_sync()
    judge = judge_get()
    assert (judge.name, judge.model, judge.effective_family, judge.base_url) == ("default", "gpt-4o", "openai", "http://llm.internal/v1")


@pytest.mark.django_db
def test_unknown_judge_names_the_known_ones(judges_file):
    judges_sync()
    with pytest.raises(InputError, match="unknown judge 'nope' \\(known: small-a, small-b\\)"):
        judge_get(name="nope")


@pytest.mark.django_db
def test_no_judge_at_all_says_how_to_configure_one():
    with pytest.raises(InputError, match="JUDGE_MODEL"):
        judge_get()


def test_the_key_is_read_from_the_named_variable_and_never_stored(transactional_db, monkeypatch):
    monkeypatch.setenv("TEAM_KEY", "sk-secret-123")
    with FakeJudgeServer(DemoBrain()) as server:
        judge = Judge.objects.create(name="keyed", model="fake-judge", base_url=server.url, api_key_env="TEAM_KEY")
        client_for(judge).chat([{"role": "user", "content": "hello"}])
        assert "sk-secret-123" not in str(judge.config_snapshot())
        assert "sk-secret-123" not in str(server.chat_requests[0].headers)  # the log drops Authorization


def test_concurrency_limit_holds_across_connections(transactional_db):
    """Threads with their own database connections stand in for worker processes on other machines."""
    from django.db import connections

    with FakeJudgeServer(DemoBrain(), latency=0.15) as server:
        judge = Judge.objects.create(name="limited", model="fake-judge", base_url=server.url, max_concurrency=3)

        def call(i):
            try:
                # A fresh client per thread: only the database slots are shared.
                from judgeapp.judging.client import JudgeClient
                from judgeapp.judging.endpoints import endpoint_config
                from judgeapp.judging.limiters import DatabaseSlotLimiter

                JudgeClient(endpoint_config(judge), limiter=DatabaseSlotLimiter()).chat([{"role": "user", "content": f"q{i}"}])
            finally:
                connections.close_all()

        threads = [threading.Thread(target=call, args=(i,)) for i in range(9)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(server.chat_requests) == 9
        assert server.max_in_flight == 3


def test_slots_held_by_a_dead_process_are_freed_at_once(transactional_db):
    """A worker killed mid-call leaves its slot leased; the next caller must not wait for the lease."""
    import socket
    import time

    from django.utils import timezone

    from judgeapp.judging.limiters import DatabaseSlotLimiter
    from judgeapp.models import JudgeSlot

    limiter = DatabaseSlotLimiter()
    with limiter("held", 2):
        pass  # creates the two slots
    dead = f"{socket.gethostname()}:999999:1:1:abcd"
    JudgeSlot.objects.filter(judge_name="held").update(holder=dead, leased_until=timezone.now() + timezone.timedelta(hours=1))
    started = time.monotonic()
    with limiter("held", 2):
        assert time.monotonic() - started < 1


def test_host_limiter_bounds_concurrent_calls_across_file_descriptors(tmp_path):
    """The SQLite default: slot files under DATA_DIR/locks; each caller opens its own descriptor, as a
    separate worker process would."""
    from judgeapp.judging.client import EndpointConfig, JudgeClient
    from judgeapp.judging.limiters import HostSlotLimiter

    with FakeJudgeServer(DemoBrain(), latency=0.15) as server:
        limiter = HostSlotLimiter(tmp_path)
        client = JudgeClient(EndpointConfig(name="host-limited", model="m", base_url=server.url, max_concurrency=3), limiter=limiter)
        chats_at_once(client, 9)
        assert len(server.chat_requests) == 9
        assert server.max_in_flight == 3


def test_host_limiter_slot_of_a_killed_process_is_free_at_once(tmp_path):
    import subprocess
    import sys
    import time

    from judgeapp.judging.limiters import HostSlotLimiter

    limiter = HostSlotLimiter(tmp_path)
    slot_file = limiter._slot_path("solo", 0)
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import fcntl,os,time; fd=os.open({str(slot_file)!r}, os.O_RDWR|os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait()
    started = time.monotonic()
    with limiter("solo", 1):
        assert time.monotonic() - started < 1


def test_host_limiter_waiters_queue_on_a_gate_that_a_killed_waiter_does_not_block(tmp_path):
    """All slots taken: a caller queues behind the gate's holder; when that waiter dies (its gate lock
    dropped by the kernel) and the slot frees, the caller gets it."""
    import subprocess
    import sys
    import time

    from judgeapp.judging.limiters import HostSlotLimiter

    limiter = HostSlotLimiter(tmp_path)
    hold = "import fcntl,os,time; fd=os.open({!r}, os.O_RDWR|os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"
    holders = [
        subprocess.Popen([sys.executable, "-c", hold.format(str(path))], stdout=subprocess.PIPE, text=True)
        for path in (limiter._slot_path("solo", 0), limiter._path("solo", "gate"))
    ]
    try:
        for holder in holders:
            assert holder.stdout.readline().strip() == "held"
        got = threading.Event()

        def call():
            with limiter("solo", 1):
                got.set()

        waiter = threading.Thread(target=call, daemon=True)
        waiter.start()
        assert not got.wait(0.3)  # the slot is held and another waiter is ahead
        holders[1].kill()
        holders[1].wait()
        assert not got.wait(0.3)  # the gate is free, the slot still is not
        holders[0].kill()
        holders[0].wait()
        started = time.monotonic()
        assert got.wait(5)
        assert time.monotonic() - started < 1
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()


@pytest.fixture
def redis_url():
    import redis

    url = "redis://127.0.0.1:6379/15"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=0.5).ping()
    except redis.exceptions.ConnectionError:
        if os.environ.get("REQUIRE_BROWSER"):  # CI: the services are there
            pytest.fail("Redis is not running on 127.0.0.1:6379")
        pytest.skip("no Redis on 127.0.0.1:6379")
    return url


def test_redis_limiter_bounds_concurrent_calls_across_clients(redis_url):
    """Production with a Redis broker: each thread has its own Redis client, as workers on other machines."""
    from judgeapp.judging.client import EndpointConfig, JudgeClient
    from judgeapp.judging.limiters import RedisSlotLimiter

    name = f"redis-limited-{uuid.uuid4().hex[:6]}"
    with FakeJudgeServer(DemoBrain(), latency=0.15) as server:
        def call(i):
            config = EndpointConfig(name=name, model="m", base_url=server.url, max_concurrency=3)
            JudgeClient(config, limiter=RedisSlotLimiter(redis_url)).chat([{"role": "user", "content": f"q{i}"}])

        threads = [threading.Thread(target=call, args=(i,)) for i in range(9)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(server.chat_requests) == 9
        assert server.max_in_flight == 3
    assert RedisSlotLimiter(redis_url).redis.zcard(RedisSlotLimiter.key(name)) == 0  # every slot given back


def test_redis_limiter_takes_back_a_dead_holders_slot_at_once(redis_url):
    import socket
    import time

    from judgeapp.judging.limiters import RedisSlotLimiter

    limiter = RedisSlotLimiter(redis_url)
    key = limiter.key(f"dead-{uuid.uuid4().hex[:6]}")
    limiter.redis.zadd(key, {f"{socket.gethostname()}:999999:1:1:abcd": time.time() + 3600})
    started = time.monotonic()
    with limiter(key.rsplit(":", 1)[1], 1):
        assert time.monotonic() - started < 1


def test_limiter_kind_follows_the_deployment():
    from judgeapp.judging.limiters import limiter_kind

    sqlite, postgres = "django.db.backends.sqlite3", "django.db.backends.postgresql"
    assert limiter_kind(configured="", engine=sqlite, broker_url="filesystem://localhost/") == "host"
    assert limiter_kind(configured="", engine=postgres, broker_url="redis://10.0.0.5:6379/0") == "redis"
    assert limiter_kind(configured="", engine=postgres, broker_url="amqp://10.0.0.5//") == "database"
    assert limiter_kind(configured="host", engine=postgres, broker_url="redis://10.0.0.5:6379/0") == "host"
