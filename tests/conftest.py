"""Shared fixtures: the fake judge server, judges pointing at it, users with roles, a real worker."""

import os

import pytest
from django.contrib.auth.models import Group, User

from fakejudge import DemoBrain, FakeJudgeServer
from judgeapp.models import Judge, System
from tests.helpers import WorkerProcess, database_url_for_subprocess


@pytest.fixture
def fake_judge():
    """A real HTTP fake judge server, answering with the demo brain unless a test scripts it."""
    with FakeJudgeServer(DemoBrain()) as server:
        yield server


@pytest.fixture
def make_judge(fake_judge):
    def make(name="judge-a", *, model="fake-judge", family="scripted", server=None, **fields):
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
            # get_or_create: a transactional test before this one flushed the groups the migration made.
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
