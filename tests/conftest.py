"""Shared fixtures: the fake judge server, judges pointing at it, users with roles, a real worker. And the
socket guard: no test reaches beyond the loopback."""

import contextlib
import ipaddress
import os
import socket
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import Group, User

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.models import Judge, System
from tests.helpers import WorkerProcess, database_url_for_subprocess, support_inputs_stored
from tests.helpers import celery_broker as celery_broker_block

# --- The socket guard (zulip's `block_internet`, at the socket) ------------------------------------------


class InternetBlocked(OSError):
    """A test tried to reach an address beyond the loopback."""


def _service_hosts() -> set[str]:
    """The hosts of the services a test run is pointed at (the lead's pass on PostgreSQL and Redis)."""
    urls = [os.environ.get(name, "") for name in ("DATABASE_URL", "CELERY_BROKER_URL", "JUDGE_LIMITER_REDIS_URL")]
    return {host for host in (urlsplit(url).hostname for url in urls if "://" in url) if host}


_ALLOWED_HOSTS = {"localhost"} | _service_hosts()


def _reachable(address) -> bool:
    if not isinstance(address, tuple):  # a Unix socket's path: this machine
        return True
    host = str(address[0]).split("%", 1)[0]
    if host in _ALLOWED_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: allowed only if every address it names is a loopback one
        try:
            infos = socket.getaddrinfo(host, None)
        except socket.gaierror:
            return False
        return all(ipaddress.ip_address(info[4][0].split("%", 1)[0]).is_loopback for info in infos)


def _guarded(method):
    def guarded(self, address, *args):
        if not _reachable(address):
            raise InternetBlocked(f"the tests reach only the loopback; {address!r} is beyond it")
        return method(self, address, *args)

    return guarded


def _guarded_sendto(method):
    def guarded(self, data, *args):
        if args and not _reachable(args[-1]):
            raise InternetBlocked(f"the tests reach only the loopback; {args[-1]!r} is beyond it")
        return method(self, data, *args)

    return guarded


socket.socket.connect = _guarded(socket.socket.connect)
socket.socket.connect_ex = _guarded(socket.socket.connect_ex)
socket.socket.sendto = _guarded_sendto(socket.socket.sendto)


@pytest.fixture
def fake_judge():
    """A real HTTP fake judge server, answering with the demo brain unless a test scripts it."""
    with FakeJudgeServer(DemoBrain()) as server:
        yield server


@pytest.fixture
def make_judge(fake_judge):
    def make(name="judge-a", *, model=None, family="scripted", server=None, **fields):
        # A judge is its (base URL, model): two judges of one fake server are two judges only when their
        # model names differ (a jury of one model is refused), so each gets its own unless a test names one.
        if model is None:
            model = "fake-judge" if name == "judge-a" else f"{name}-model"
        return Judge.objects.create(
            name=name,
            model=model,
            family=family,
            base_url=(server or fake_judge).url,
            timeout_seconds=fields.pop("timeout_seconds", 2.0),
            max_concurrency=fields.pop("max_concurrency", 8),
            **fields,
        )

    return make


@pytest.fixture
def judge(db, make_judge):
    return make_judge()


@pytest.fixture
def make_system(fake_judge):
    def make(name="support-bot", *, model="gpt-4o-mini", family="openai", **fields):
        return System.objects.create(name=name, model=model, family=family, base_url=fake_judge.url, **fields)

    return make


@pytest.fixture
def make_user(db):
    def make(username, *roles, password="pw-for-tests-1"):
        user = User.objects.create_user(username=username, password=password)
        for role in roles:
            # get_or_create: a transactional test's flush empties the groups the roles migration made.
            user.groups.add(Group.objects.get_or_create(name=role)[0])
        return user

    return make


@pytest.fixture
def reviewer(make_user):
    return make_user("rita", "reviewer")


@pytest.fixture
def lead(make_user):
    return make_user("leo", "lead")


@pytest.fixture
def annotator(make_user):
    return make_user("ann", "annotator")


@pytest.fixture
def celery_broker():
    """`celery_broker(url)` points this process's Celery app (what the test sends) at another broker until
    the test ends (tests/helpers.py: celery_broker); `celery_broker(None)` points it back at the configured one."""
    with contextlib.ExitStack() as stack:

        def point(url: str | None) -> None:
            stack.close()
            if url is not None:
                stack.enter_context(celery_broker_block(url))

        yield point


@pytest.fixture
def worker_factory(transactional_db, tmp_path):
    """Start real Celery worker processes against the test database; all are stopped at the end."""
    started: list[WorkerProcess] = []

    def start(concurrency: int = 8, **env) -> WorkerProcess:
        worker = WorkerProcess(
            env={**os.environ, "DATABASE_URL": database_url_for_subprocess(), **env},
            concurrency=concurrency,
            log_path=tmp_path / f"worker-{len(started)}.log",
        )
        worker.start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()



@pytest.fixture
def support_inputs(db):
    """evals/support's test set and rubric stored as the demo stores them: what the run forms pick."""
    return support_inputs_stored()
