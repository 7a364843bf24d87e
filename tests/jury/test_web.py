"""The jury pages: start a run with a panel, read the case x judge grid, open a case."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from fakejudge import DemoBrain, Reply, Status, When
from judgeapp.judging import content, runs
from judgeapp.models import Executor, Run, RunStatus
from tests import factories
from tests.factories import GOOD_REPLY, RUBRIC_ONE
from tests.pairwise.builders import jury_run

pytestmark = pytest.mark.django_db

JURORS = [("llama", "llama-3.1-8b-instruct", "meta"), ("mistral", "mistral-7b-instruct", "mistral"),
          ("gemma", "gemma-2-9b-it", "google"), ("qwen", "qwen2.5-7b-instruct", "qwen")]


def oracle(reply: str, message: str = "") -> float:
    return 1.0 if GOOD_REPLY in reply else 0.0


@pytest.fixture
def jurors(make_judge):
    return [make_judge(name, model=model, family=family) for name, model, family in JURORS]


@pytest.fixture
def finished(jurors, fake_judge):
    # gemma fails every reply, so it dissents on the good ones.
    fake_judge.action = When(
        lambda r: r.model == "gemma-2-9b-it", Reply('{"reasoning": "Not thorough enough.", "verdict": "fail"}'),
        DemoBrain(quality=oracle)
    )
    run = runs.run_create(
        kind="jury", run_id="jury-web", executor=Executor.INLINE, judges=jurors[:3],
        testset=content.testset_store(data=factories.testset_bytes(3), name="s.jsonl"),
        rubric=content.rubric_store(data=RUBRIC_ONE, name="r.toml"),
        options={"judge_ids": [j.pk for j in jurors[:3]], "warnings": []},
    )
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    return run


def form_data(jurors, **extra):
    return {
        "testset_file": SimpleUploadedFile("support.jsonl", factories.testset_bytes(3)),
        "rubric_file": SimpleUploadedFile("rubric.toml", RUBRIC_ONE),
        "judges": [j.pk for j in jurors],
        **extra,
    }


def test_reviewer_convenes_a_jury_and_it_goes_to_celery(
    client, reviewer, jurors, make_system, django_capture_on_commit_callbacks
):
    system = make_system("support-bot", family="openai")
    client.force_login(reviewer)
    with django_capture_on_commit_callbacks() as callbacks:
        own = SimpleUploadedFile("support-bot.jsonl", b"".join(b'{"id": "c%03d", "output": "its own"}\n' % i for i in range(3)))
        data = form_data(jurors[:3], system=system.pk, outputs_file=own, run_id="jury-from-web")
        response = client.post(reverse("jury:new"), data)
    assert response.status_code == 302 and response["Location"] == reverse("run_detail", args=["jury-from-web"])
    run = Run.objects.get(run_id="jury-from-web")
    assert run.executor == Executor.CELERY and run.status == RunStatus.QUEUED and run.system == system
    # The panel in the order the form lists the judges (by name): the grid's column order.
    assert run.config["options"]["judge_ids"] == [j.pk for j in sorted(jurors[:3], key=lambda j: j.name)]
    assert len(callbacks) == 1


@pytest.mark.parametrize("size, message", [(2, "a jury needs at least 3"), (4, "use an odd number")])
def test_a_panel_breaking_the_rules_is_a_form_error(client, reviewer, jurors, size, message):
    client.force_login(reviewer)
    response = client.post(reverse("jury:new"), form_data(jurors[:size]), headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200 and message in html and '<div id="run-form">' in html
    assert Run.objects.count() == 0


def test_a_juror_of_the_systems_family_is_a_form_error(client, reviewer, jurors, make_system):
    system = make_system("gemma-bot", model="gemma-2-27b", family="google")
    client.force_login(reviewer)
    html = client.post(reverse("jury:new"), form_data(jurors[:3], system=system.pk)).content.decode()
    assert "gemma is of the google family, the family of the system under test" in html
    assert Run.objects.count() == 0


def test_the_run_page_shows_the_grid_with_dissent_and_per_judge_agreement(client, reviewer, finished):
    client.force_login(reviewer)
    html = client.get(reverse("run_detail", args=["jury-web"])).content.decode()
    assert 'id="jury-grid"' in html and 'id="jury-panel"' in html
    # c000 has a good reply: llama and mistral pass it, gemma fails it and dissents.
    assert 'class="vote dissent" data-judge="gemma" title="Not thorough enough."' in html
    assert 'class="vote" data-judge="llama"' in html
    assert "review: far below the others" in html
    assert reverse("jury:case", args=["jury-web", "c000"]) in html


def test_a_case_page_shows_every_jurors_verdict_and_reasoning(client, reviewer, finished):
    client.force_login(reviewer)
    html = client.get(reverse("jury:case", args=["jury-web", "c000"])).content.decode()
    assert 'id="pooled">pass<' in html
    assert "Not thorough enough." in html and 'class="dissent" data-judge="gemma"' in html
    assert html.count("prompt and raw reply") == 3


def test_a_juror_that_was_left_out_is_shown_with_why(client, reviewer, jurors, fake_judge):
    fake_judge.action = When(lambda r: r.model == "gemma-2-9b-it", Status(503), DemoBrain(quality=oracle))
    run = jury_run(judges=jurors[:3], n=1, run_id="jury-down")
    runs.run_execute_inline(run=run)
    client.force_login(reviewer)
    html = client.get(reverse("jury:case", args=["jury-down", "c000"])).content.decode()
    assert "left out of the pool" in html and "HTTP 503" in html
    assert "Unjudged: only 2 of 3 jurors answered" in html
