"""The API's run list: the runs page's search, filters and tags (one selector serves both), paged, with the
count and the next slice in headers; tags on a new run and on an old one."""

import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from judgeapp import models
from judgeapp.judging import tags
from judgeapp.models import Run, RunKind, RunStatus, RunTag
from tests import factories
from tests.factories import GOOD_REPLY, RUBRIC_ONE

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(api_as, reviewer):
    return api_as(reviewer)


def make_run(run_id, **fields):
    return Run.objects.create(run_id=run_id, kind=fields.pop("kind", RunKind.JURY), status=fields.pop("status", RunStatus.DONE),
                              report={"passed": 1, "total": 2}, **fields)


def listed(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [run["run_id"] for run in response.json()]


def test_the_api_filters_as_the_runs_page_does(api, make_judge, make_system):
    judge, bot = make_judge("qwen-7b"), make_system("support-bot")
    faq = models.TestSet.objects.create(name="faq", content_hash=hashlib.sha256(b"faq").hexdigest())
    make_run("r-old", title="refund check", judge=judge)
    make_run("r-bot", system=bot, testset=faq)
    make_run("r-live", kind=RunKind.PAIRWISE, status=RunStatus.RUNNING)
    tags.run_tag_add(run=Run.objects.get(run_id="r-bot"), name="nightly")
    assert listed(api.get("/api/v1/runs?q=REFUND")) == ["r-old"]
    assert listed(api.get("/api/v1/runs?q=qwen")) == ["r-old"]
    assert listed(api.get("/api/v1/runs?testset=faq")) == ["r-bot"]
    assert listed(api.get("/api/v1/runs?tag=Nightly")) == ["r-bot"]
    assert listed(api.get("/api/v1/runs?outcome=running")) == ["r-live"]
    assert listed(api.get("/api/v1/runs?outcome=result&system=support-bot")) == ["r-bot"]
    assert listed(api.get("/api/v1/runs?since=2000-01-01&until=2999-12-31")) == ["r-live", "r-bot", "r-old"]
    assert listed(api.get("/api/v1/runs?until=2000-01-01")) == []
    assert api.get("/api/v1/runs?tag=nightly").json()[0]["tags"] == ["nightly"]


@pytest.mark.parametrize("query", ["since=yesterday", "until=2026-02-30", "outcome=great", "page=0", "page=x",
                                   "since=2026-02-02&until=2026-02-01"])
def test_bad_filters_are_a_400_in_one_line(api, query):
    response = api.get(f"/api/v1/runs?{query}")
    assert response.status_code == 400 and response.json()["error"] == "bad_request"


def test_pages_say_the_count_and_link_the_next(api):
    for i in range(7):
        make_run(f"r-{i}", title="batch")
    make_run("r-other")
    first = api.get("/api/v1/runs?q=batch&limit=3&page=1")
    assert listed(first) == ["r-6", "r-5", "r-4"] and first["X-Total-Count"] == "7"
    assert first["Link"].endswith('/api/v1/runs?q=batch&limit=3&page=2>; rel="next"')
    last = api.get("/api/v1/runs?q=batch&limit=3&page=3")
    assert listed(last) == ["r-0"] and not last.has_header("Link")
    assert listed(api.get("/api/v1/runs?q=batch&limit=3&page=9")) == []
    by_offset = api.get("/api/v1/runs?q=batch&limit=3&offset=3")
    assert listed(by_offset) == ["r-3", "r-2", "r-1"] and "offset=6" in by_offset["Link"]


def test_a_new_run_s_tags_and_a_tag_put_on_later(api, judge, no_celery):
    body = {"testset": SimpleUploadedFile("s.jsonl", factories.testset_bytes(2, output=lambda i: GOOD_REPLY)),
            "rubric": SimpleUploadedFile("rubric.toml", RUBRIC_ONE), "judge": judge.name, "tags": "rc-2, Nightly"}
    started = api.post("/api/v1/runs/pointwise", body)
    assert started.status_code == 201 and started.json()["tags"] == ["nightly", "rc-2"]
    run_id = started.json()["run_id"]
    assert api.post(f"/api/v1/runs/{run_id}/tags", {"name": "hotfix"}).json()["tags"] == ["hotfix", "nightly", "rc-2"]
    assert api.get(f"/api/v1/runs/{run_id}").json()["tags"] == ["hotfix", "nightly", "rc-2"]
    assert api.client.delete(f"/api/v1/runs/{run_id}/tags/rc-2", headers=api.headers).json()["tags"] == ["hotfix", "nightly"]
    refused = api.post(f"/api/v1/runs/{run_id}/tags", {"name": "two words"})
    assert refused.status_code == 400 and "\n" not in refused.json()["detail"]


def test_a_bad_tag_on_a_new_run_stores_nothing(api, judge, no_celery):
    body = {"testset": SimpleUploadedFile("s.jsonl", factories.testset_bytes(2, output=lambda i: GOOD_REPLY)),
            "rubric": SimpleUploadedFile("rubric.toml", RUBRIC_ONE), "judge": judge.name, "tags": "ok,<b>"}
    response = api.post("/api/v1/runs/pointwise", body)
    assert response.status_code == 400 and "is not allowed" in response.json()["detail"]
    assert not Run.objects.exists() and not RunTag.objects.exists() and no_celery == []
