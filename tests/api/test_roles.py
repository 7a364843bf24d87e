"""Who may do what over the API: a token acts with its user's role (reviewer: start runs and read; lead: also
decide on releases; annotator: nothing), a revoked or missing token is a 401, and no token request needs a
CSRF token while the session pages still do."""

import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from judgeapp.api.services import api_token_create, api_token_revoke
from judgeapp.judging import runs as run_services
from judgeapp.models import AuditLog, GateDecision, Release, Run, RunTag
from tests import factories
from tests.factories import GOOD_REPLY, RUBRIC_ONE

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(judge, make_system):
    run = factories.pointwise_run(judge=judge, n=4, run_id="pw-1", system=make_system("bot"), threshold=1.0)
    return run_services.run_execute_inline(run=run)


def start_body(judge) -> dict:
    return {
        "testset": SimpleUploadedFile("support.jsonl", factories.testset_bytes(2, output=lambda i: GOOD_REPLY)),
        "rubric": SimpleUploadedFile("rubric.toml", RUBRIC_ONE),
        "judge": judge.name,
    }


READS = ["/api/v1/runs", "/api/v1/runs/pw-1", "/api/v1/runs/pw-1/report", "/api/v1/runs/pw-1/summary",
         "/api/v1/runs/pw-1/gate", "/api/v1/systems/bot/runs", "/api/v1/judges", "/api/v1/systems",
         "/api/v1/testsets", "/api/v1/rubrics", "/api/v1/token"]


def test_an_annotator_s_token_gets_403_on_every_endpoint(api_as, annotator, judge, finished, no_celery):
    api = api_as(annotator)
    for path in READS:
        response = api.get(path)
        assert response.status_code == 403, path
        assert response.json()["error"] == "forbidden" and "reviewer" in response.json()["detail"]
    assert api.post("/api/v1/runs/pointwise", start_body(judge)).status_code == 403
    # Nor the estimates of a run (no judge is asked, but they read the judges and the stored inputs).
    assert api.post("/api/v1/runs/pointwise/estimate", start_body(judge)).status_code == 403
    assert api.post("/api/v1/runs/pairwise/estimate", start_body(judge)).status_code == 403
    assert api.post("/api/v1/runs/jury/estimate", {**start_body(judge), "judges": judge.name}).status_code == 403
    # A system version's outputs name the system: never an annotator's.
    outputs = {"system": "bot", "version_label": "v2", "testset_version": "support",
               "outputs": SimpleUploadedFile("v2.jsonl", b'{"id": "c000", "output": "x"}\n')}
    assert api.post("/api/v1/outputs", outputs).status_code == 403
    assert api.post("/api/v1/runs/pw-1/gate/decision", {"verdict": "blocked", "reason": "no"}).status_code == 403
    assert api.post("/api/v1/runs/pw-1/tags", {"name": "nightly"}).status_code == 403
    assert api.client.delete("/api/v1/runs/pw-1/tags/nightly", headers=api.headers).status_code == 403
    assert Run.objects.count() == 1 and GateDecision.objects.count() == 0 and not RunTag.objects.exists()


def test_a_reviewer_reads_and_starts_runs_but_does_not_decide_releases(api_as, reviewer, judge, finished, no_celery):
    api = api_as(reviewer)
    for path in READS:
        assert api.get(path).status_code == 200, path
    assert api.post("/api/v1/runs/pointwise", start_body(judge)).status_code == 201
    assert api.post("/api/v1/runs/pointwise/estimate", start_body(judge)).status_code == 200
    decision = api.post("/api/v1/runs/pw-1/gate/decision", {"verdict": "blocked", "reason": "risky"})
    assert decision.status_code == 403 and decision.json()["detail"] == "only a lead decides on a release"
    assert api.post("/api/v1/runs/pw-1/release", {"label": "v2"}).status_code == 403
    assert GateDecision.objects.count() == 0 and Release.objects.count() == 0
    # Tags are light: a reviewer puts them on and takes them off.
    assert api.post("/api/v1/runs/pw-1/tags", {"name": "nightly"}).json()["tags"] == ["nightly"]
    assert api.client.delete("/api/v1/runs/pw-1/tags/nightly", headers=api.headers).json()["tags"] == []


def test_a_lead_blocks_and_releases_over_the_api_and_it_is_audited(api_as, lead, judge, finished, no_celery):
    api = api_as(lead)
    assert api.post("/api/v1/runs/pointwise", start_body(judge)).status_code == 201
    blocked = api.post("/api/v1/runs/pw-1/gate/decision", {"verdict": "blocked", "reason": "a regression on refunds"})
    assert blocked.status_code == 200
    gate = blocked.json()
    assert gate["passed"] is False and gate["lead_decision"]["verdict"] == "blocked" and gate["lead_decision"]["by"] == "leo"
    assert AuditLog.objects.filter(action=AuditLog.Action.RELEASE_BLOCKED, actor=lead).count() == 1

    refused = api.post("/api/v1/runs/pw-1/release", {"label": "v2"})
    assert refused.status_code == 400 and "the gate does not pass" in refused.json()["detail"]
    approved = api.post("/api/v1/runs/pw-1/gate/decision", {"verdict": "approved", "reason": "fixed in the prompt"})
    assert approved.status_code == 200 and approved.json()["passed"] is True
    released = api.post("/api/v1/runs/pw-1/release", {"label": "v2"})
    assert released.status_code == 200 and Release.objects.get().label == "v2"
    missing_reason = api.post("/api/v1/runs/pw-1/gate/decision", {"verdict": "blocked"})
    assert missing_reason.status_code == 400 and "reason" in missing_reason.json()["detail"]


def test_no_token_a_bad_header_a_revoked_token_and_an_inactive_user_get_401(api_as, reviewer, make_user, finished):
    responses = {
        "none": api_as(None).get("/api/v1/runs/pw-1"),
        "garbage": api_as(token="not-a-token").get("/api/v1/runs/pw-1"),
    }
    basic = Client().get("/api/v1/runs/pw-1", headers={"Authorization": "Basic cml0YTpwdw=="})
    row, token = api_token_create(user=reviewer, name="old")
    assert api_as(token=token).get("/api/v1/runs/pw-1").status_code == 200
    api_token_revoke(token=row)
    responses["revoked"] = api_as(token=token).get("/api/v1/runs/pw-1")
    tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    responses["tampered"] = api_as(token=tampered).get("/api/v1/runs/pw-1")
    gone = make_user("gone", "reviewer")
    gone_token = api_token_create(user=gone)[1]
    gone.is_active = False
    gone.save()
    responses["inactive"] = api_as(token=gone_token).get("/api/v1/runs/pw-1")
    responses["basic"] = basic
    for what, response in responses.items():
        assert response.status_code == 401, what
        assert response.json()["error"] == "unauthorized", what
        assert response["WWW-Authenticate"].startswith("Bearer"), what
    assert "revoked" in responses["revoked"].json()["detail"]


def test_a_token_follows_its_user_s_role_as_it_changes(api_as, make_user, finished):
    user = make_user("flip", "reviewer")
    token = api_token_create(user=user)[1]
    assert api_as(token=token).get("/api/v1/runs/pw-1").status_code == 200
    user.groups.set([Group.objects.get_or_create(name="annotator")[0]])  # demoted: the same token, now refused
    assert api_as(token=token).get("/api/v1/runs/pw-1").status_code == 403


def test_a_browser_session_does_not_authenticate_the_api(client, reviewer, finished):
    client.force_login(reviewer)
    response = client.get("/api/v1/runs/pw-1")
    assert response.status_code == 401 and response.json()["error"] == "unauthorized"


# --- CSRF: token requests need none, session POSTs still do ------------------------------------------------


def test_a_token_post_needs_no_csrf_token(token_for, reviewer, judge, no_celery):
    client = Client(enforce_csrf_checks=True)
    response = client.post(
        "/api/v1/runs/pointwise", start_body(judge), headers={"Authorization": f"Bearer {token_for(reviewer)}"},
    )
    assert response.status_code == 201 and Run.objects.count() == 1


def test_session_posts_elsewhere_still_need_the_csrf_token(reviewer, lead, judge, finished):
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    started = client.post(reverse("pointwise:new"), {"judge": judge.pk, "threshold": "3"})
    created = client.post(reverse("api:profile"), {"name": "ci"})
    assert started.status_code == 403 and created.status_code == 403
    client.force_login(lead)
    decided = client.post(reverse("releases:decide", args=["pw-1"]), {"verdict": "blocked", "reason": "x"})
    assert decided.status_code == 403
    assert GateDecision.objects.count() == 0 and Run.objects.count() == 1
    assert not reviewer.api_tokens.exists()
