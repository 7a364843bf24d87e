"""A pointwise run with a prompt of the library: the judge reads that prompt's text (over HTTP, as the fake
judge received it), the run and its report name it, and calibration's scope is its version. Chosen from the
command line (`--prompt`), the form and the API."""

import json

import pytest
from django.urls import reverse

from calibration.selectors.run_judges import scope_for_run
from judgeapp.judging.audit import cli_actor
from judgeapp.judging.library import prompt_template_save
from judgeapp.judging.prompts import library_prompt
from judgeapp.models import Run
from tests.factories import judge_locked
from tests.helpers import lock_reasons_for_run, support_inputs_stored

pytestmark = pytest.mark.django_db

# The seed's tags (which the demo judge reads) around a summary's words: same slots, reasoning first.
SUMMARIES = library_prompt("pointwise").text.replace(
    "You are grading one reply from a customer-support assistant.",
    "You are grading one summary of a document (in customer_message); the summary is the assistant_reply.",
)
SUMMARIES_V2 = SUMMARIES.replace("Length and confident tone are not quality.", "A summary that adds facts scores 1.")


@pytest.fixture
def summaries(db):
    return prompt_template_save(mode="pointwise", name="summaries", text=SUMMARIES, actor=cli_actor())


def evaluate(cli, judge, files, *extra):
    testset, rubric = files(n=3)
    return cli("evaluate", "pointwise", "--testset", testset, "--rubric", rubric, "--judge", judge.name,
               "--concurrency", "1", "--format", "json", "--threshold", "1", *extra)


def test_a_run_with_a_custom_prompt_sends_its_text_and_the_report_names_it(cli, judge, files, fake_judge, summaries):
    result = evaluate(cli, judge, files, "--prompt", "summaries")
    assert result.code == 0, result.err
    prompts = [request.prompt for request in fake_judge.chat_requests]
    assert len(prompts) == 3
    assert all(p.startswith("You are grading one summary of a document") for p in prompts)
    assert not any("customer-support assistant" in p for p in prompts)
    report = json.loads(result.out)
    assert report["prompt"] == {"name": "summaries", "version": "v1", "hash": summaries.version}
    assert report["versions"]["prompt"] == summaries.version
    run = Run.objects.get(run_id=report["run_id"])
    assert run.prompt == summaries


def test_the_run_page_names_the_prompt_version(cli, judge, files, summaries, client, reviewer):
    report = json.loads(evaluate(cli, judge, files, "--prompt", "summaries").out)
    client.force_login(reviewer)
    html = client.get(reverse("run_detail", args=[report["run_id"]])).content.decode()
    assert f"summaries v1 @ {summaries.version}" in html


def test_without_a_prompt_the_built_in_one_is_sent_and_named_default(cli, judge, files, fake_judge, summaries):
    result = evaluate(cli, judge, files)
    assert result.code == 0, result.err
    assert all("customer-support assistant" in r.prompt for r in fake_judge.chat_requests)
    report = json.loads(result.out)
    assert report["prompt"] == {"name": "default", "version": "built-in", "hash": library_prompt("pointwise").version}


def test_name_at_version_picks_an_earlier_version_and_the_name_alone_the_latest(cli, judge, files, fake_judge, summaries):
    v2 = prompt_template_save(mode="pointwise", name="summaries", text=SUMMARIES_V2, actor=cli_actor())
    first = json.loads(evaluate(cli, judge, files, "--prompt", "summaries@v1").out)
    assert first["prompt"] == {"name": "summaries", "version": "v1", "hash": summaries.version}
    latest = json.loads(evaluate(cli, judge, files, "--prompt", "summaries").out)
    assert latest["prompt"] == {"name": "summaries", "version": "v2", "hash": v2.version}
    assert "A summary that adds facts scores 1." in fake_judge.chat_requests[-1].prompt


@pytest.mark.parametrize(("spec", "message"), [
    ("nosuch", "error: no pointwise prompt named 'nosuch'; the library has default, summaries\n"),
    ("summaries@v9", "error: prompt summaries has no version 'v9'; it has v1\n"),
])
def test_an_unknown_prompt_is_one_line_exit_2_and_nothing_judged(cli, judge, files, fake_judge, summaries, spec, message):
    result = evaluate(cli, judge, files, "--prompt", spec)
    assert result.code == 2 and result.err == message
    assert not fake_judge.chat_requests and not Run.objects.exists()


def test_a_pairwise_prompt_is_not_a_pointwise_one(cli, judge, files, fake_judge):
    prompt_template_save(mode="pairwise", name="code-review",
                         text=library_prompt("pairwise").text.replace("customer message", "code change"),
                         actor=cli_actor())
    result = evaluate(cli, judge, files, "--prompt", "code-review")
    assert result.code == 2 and "no pointwise prompt named 'code-review'" in result.err


def test_calibration_scopes_by_the_custom_prompt_version(cli, judge, files, summaries):
    """A lock measured on runs with the built-in prompt (people's labels disagreeing with the judge there) does
    not carry over to the judge with another prompt: the scope is the prompt's version, and the custom one has
    its own."""
    default_run = Run.objects.get(run_id=json.loads(evaluate(cli, judge, files, "--run-id", "with-default").out)["run_id"])
    custom_run = Run.objects.get(
        run_id=json.loads(evaluate(cli, judge, files, "--prompt", "summaries", "--run-id", "with-summaries").out)["run_id"]
    )
    assert scope_for_run(run=custom_run)[0] == summaries.version != scope_for_run(run=default_run)[0]
    judge_locked(default_run)
    assert lock_reasons_for_run(run=default_run) and lock_reasons_for_run(run=custom_run) == []
    judge_locked(custom_run)
    assert lock_reasons_for_run(run=custom_run)


# --- The form (the API: tests/api/test_prompts.py) ------------------------------------------------------------------------------


def test_the_form_offers_the_library_and_starts_a_run_with_the_chosen_prompt(
    client, reviewer, judge, summaries, monkeypatch, django_capture_on_commit_callbacks
):
    from judgeapp.judging import taskqueue

    monkeypatch.setattr(taskqueue, "send", lambda *args, **kwargs: None)
    client.force_login(reviewer)
    page = client.get(reverse("pointwise:new")).content.decode()
    assert '<option value="summaries">summaries (latest, v1)</option>' in page and "Manage prompts" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("pointwise:new"), {
            "judge": judge.pk, "threshold": "3.5", **support_inputs_stored().form,
            "prompt": "summaries",
        })
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Run.objects.get().prompt == summaries


def test_the_form_refuses_a_prompt_that_is_not_offered(client, reviewer, judge, summaries):
    client.force_login(reviewer)
    response = client.post(reverse("pointwise:new"), {
        "judge": judge.pk, "threshold": "3.5", **support_inputs_stored().form,
        "prompt": "nosuch",
    })
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    assert not Run.objects.exists()

