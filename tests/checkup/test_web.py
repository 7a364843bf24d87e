"""The check-up in the browser: the "Check up" button on the judges page starts a Celery run, the run's
page shows the figures beside the published ones, and the judges page shows the latest check-up (or
"never checked up", or "stale" once the judge's configuration changed)."""

import re

import pytest
from django.urls import reverse

from judgeapp.judging import taskqueue
from judgeapp.models import Executor, Judgment, Run, RunKind, RunStatus
from tests.checkup.builders import checkup
from tests.checkup.oracles import LabelOracle

pytestmark = pytest.mark.django_db


def judge_cell(html: str, name: str) -> str:
    match = re.search(rf'<div class="judge-checkup" id="checkup-{re.escape(name)}">(.*?)</form>', html, re.DOTALL)
    assert match, f"no check-up cell for {name}"
    return match.group(1)


def test_the_judges_page_offers_a_check_up_of_each_judge_never_checked_up_yet(client, reviewer, judge, make_system):
    make_system("bot-v1")
    client.force_login(reviewer)
    html = client.get(reverse("judges")).content.decode()
    cell = judge_cell(html, "judge-a")
    assert "never checked up" in cell and "Check up" in cell
    assert f'action="{reverse("checkup:start", args=["judge-a"])}"' in cell
    assert html.count('class="judge-checkup"') == 1  # judges only, not the systems under test


def test_the_button_starts_a_celery_check_up_and_goes_to_its_page(
    client, reviewer, judge, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(taskqueue, "send", lambda name, *args: sent.append((name, args)))
    client.force_login(reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("checkup:start", args=["judge-a"]), {"sample": "4", "sets": ["llmbar-natural", "pandalm"]})
    run = Run.objects.get(kind=RunKind.CHECKUP)
    assert response.status_code == 302 and response["Location"] == reverse("run_detail", args=[run.run_id])
    assert run.executor == Executor.CELERY and run.status == RunStatus.QUEUED and run.created_by == reviewer
    assert run.config["options"]["sets"] == ["llmbar-natural", "pandalm"] and len(run.config["options"]["case_ids"]) == 8
    assert sent == [(taskqueue.START_RUN, (run.pk,))]
    # While it runs, the judges page links to it.
    assert run.run_id in judge_cell(client.get(reverse("judges")).content.decode(), "judge-a")


def test_the_button_with_htmx_redirects_on_the_client(client, reviewer, judge, monkeypatch):
    monkeypatch.setattr(taskqueue, "send", lambda *a: None)
    client.force_login(reviewer)
    response = client.post(reverse("checkup:start", args=["judge-a"]), {"sample": "2"}, HTTP_HX_REQUEST="true")
    run = Run.objects.get(kind=RunKind.CHECKUP)
    assert response["HX-Redirect"] == reverse("run_detail", args=[run.run_id])
    assert run.config["options"]["sets"] == ["llmbar-natural", "mt-bench-human", "pandalm"]  # none ticked: all


def test_bad_input_from_the_button_is_a_message_on_the_judges_page_and_nothing_stored(client, reviewer, judge):
    client.force_login(reviewer)
    response = client.post(reverse("checkup:start", args=["judge-a"]), {"seed": "3"}, follow=True)
    assert "Check-up of judge-a not started: A draw number without a sample draws nothing" in response.content.decode()
    response = client.post(reverse("checkup:start", args=["judge-a"]), {"sample": "0"}, follow=True)
    assert "not started" in response.content.decode()
    assert not Run.objects.exists()
    assert client.post(reverse("checkup:start", args=["nobody"])).status_code == 404


def test_only_readers_may_start_a_check_up_and_only_by_post(client, annotator, reviewer, judge):
    url = reverse("checkup:start", args=["judge-a"])
    assert client.post(url)["Location"].startswith("/login/")
    client.force_login(annotator)
    assert client.post(url).status_code == 403
    client.force_login(reviewer)
    assert client.get(url).status_code == 405
    assert not Run.objects.exists()


def test_a_finished_check_up_shows_its_figures_beside_the_published_ones_and_on_the_judges_page(client, lead, judge, fake_judge):
    fake_judge.action = LabelOracle()
    run = checkup(judge, sets="llmbar-natural,pandalm", sample=5, run_id="checkup-web")
    client.force_login(lead)
    html = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    assert 'id="set-llmbar-natural"' in html and 'id="set-pandalm"' in html
    assert "Accuracy over all pairs (a disagreement is a miss)" in html and "100.0% [" in html
    assert "Position consistency (the two orders agree)" in html and "Cohen&#x27;s kappa with the human label" in html
    assert '<span class="badge">published</span> GPT-4: <strong>92.0%</strong>' in html
    assert '<span class="badge">computed here from published verdicts</span> GPT-3.5' in html
    assert "20 judgments called the judge" in html and "Wilson score interval" in html
    assert Judgment.objects.filter(run=run).first().key in html  # every call is listed

    cell = judge_cell(client.get(reverse("judges")).content.decode(), "judge-a")
    assert "checked up" in cell and "checkup-web" in cell and "stale" not in cell
    assert '<span class="badge passed" title="judge check-up passed: judge-a' in cell and "badge failed" not in cell  # green
    assert "llmbar-natural: accuracy 100%, consistency 100%" in cell

    judge.structured_output = "json_object"  # the judge's configuration changed since
    judge.save()
    cell = judge_cell(client.get(reverse("judges")).content.decode(), "judge-a")
    assert "stale" in cell and "checkup-web" in cell and "the configuration changed since" in cell


def test_a_budget_for_an_unpriced_judge_is_a_message_and_a_priced_one_is_stored_on_the_run(
    client, reviewer, judge, make_judge, monkeypatch
):

    from decimal import Decimal

    monkeypatch.setattr(taskqueue, "send", lambda *args, **kwargs: None)
    client.force_login(reviewer)
    response = client.post(reverse("checkup:start", args=["judge-a"]), {"sample": "2", "budget": "0.50"}, follow=True)
    assert "Check-up of judge-a not started: a budget needs prices for every judge" in response.content.decode()
    assert not Run.objects.exists()
    make_judge("priced", input_price_per_million=Decimal("0.20"), output_price_per_million=Decimal("0.60"))
    client.post(reverse("checkup:start", args=["priced"]), {"sample": "2", "budget": "0.50"})
    assert Run.objects.get().budget == Decimal("0.5")
