"""The agent judge's pages: upload and start, watch the requirements resolve, open a transcript."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from judgeapp.judging import runs
from judgeapp.models import Run
from tests.agent.helpers import REQUIREMENTS_MD, TASK, TRACE, agent_run, make_workspace, tar_bytes, zip_bytes

pytestmark = pytest.mark.django_db


def workspace_zip() -> bytes:
    return zip_bytes({"train.py": b"print('test accuracy: 0.9')\n", "out/metrics.json": b'{"accuracy": 0.9}\n'})


def form_data(judge, **overrides):
    data = {
        "task": TASK,
        "requirements": REQUIREMENTS_MD.decode(),
        "workspace": SimpleUploadedFile("ws.zip", workspace_zip()),
        "trace": SimpleUploadedFile("trace.jsonl", TRACE),
        "judge": judge.pk,
        "run_id": "",
        "title": "from the browser",
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


@pytest.fixture
def finished_run(judge, tmp_path, settings):
    settings.AGENT_SANDBOX_ENABLED = False
    run = agent_run(judge, make_workspace(tmp_path / "ws", with_plot=False))
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    return run


def test_agent_pages_are_for_reviewers_and_leads(client, annotator, finished_run):
    urls = [
        reverse("agent:home"), reverse("agent:requirements", args=[finished_run.run_id]),
        reverse("agent:report", args=[finished_run.run_id]),
    ]
    for url in urls:
        assert client.get(url).status_code == 302  # to the login page
    client.force_login(annotator)
    for url in urls:
        assert client.get(url).status_code == 403


def test_upload_creates_a_celery_run_and_redirects_to_it(client, reviewer, judge, django_capture_on_commit_callbacks):
    client.force_login(reviewer)
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(reverse("agent:home"), form_data(judge))
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("run_detail", args=[run.run_id])
    assert run.kind == "agent" and run.executor == "celery" and run.created_by == reviewer
    assert len(callbacks) == 1  # the run is sent to the workers once the transaction commits
    assert [r["id"] for r in run.config["options"]["requirements"]] == ["1", "2", "3"]
    assert (run.run_dir / "workspace" / "train.py").exists() and (run.run_dir / "trace.jsonl").exists()
    assert run.config["options"]["trace"]["steps"] == 3


def test_checklist_can_be_uploaded_as_a_file(client, reviewer, judge, django_capture_on_commit_callbacks):
    client.force_login(reviewer)
    with django_capture_on_commit_callbacks():
        response = client.post(
            reverse("agent:home"),
            form_data(judge, requirements="", requirements_file=SimpleUploadedFile("req.md", b"1. writes out/metrics.json\n")),
        )
    assert response.status_code == 302, response.context["form"].errors
    assert Run.objects.get().config["options"]["requirements"] == [{"id": "1", "text": "writes out/metrics.json"}]


@pytest.mark.parametrize(
    "overrides, field, message",
    [
        ({"requirements": "saves the plot somewhere"}, "requirements", "expected a numbered requirement"),
        ({"task": ""}, "task", "Write the task or upload a file."),
        ({"workspace": SimpleUploadedFile("evil.tar.gz", tar_bytes({"../../etc/cron.d/x": b"* * * * * root sh"}))}, "workspace",
         "leads outside the workspace"),
        ({"workspace": SimpleUploadedFile("notes.txt", b"hello")}, "workspace", "not a zip or tar archive"),
        ({"trace": SimpleUploadedFile("trace.jsonl", b"{broken\n")}, "trace", "trace.jsonl line 1: not valid JSON"),
        ({"run_id": "bad id!"}, "run_id", "use letters, digits"),
    ],
)
def test_bad_uploads_are_form_errors_and_store_nothing(client, reviewer, judge, overrides, field, message):
    client.force_login(reviewer)
    response = client.post(reverse("agent:home"), form_data(judge, **overrides))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert field in errors and message in " ".join(errors[field])
    assert not Run.objects.exists()


def test_run_page_lists_each_requirement_and_polls_while_it_runs(client, reviewer, judge, tmp_path):
    run = agent_run(judge, make_workspace(tmp_path / "ws"), executor="celery")
    runs.run_start(run_pk=run.pk)
    client.force_login(reviewer)
    html = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    assert html.count('data-status="pending"') == 3 and "waiting" in html
    assert f'hx-get="{reverse("agent:requirements", args=[run.run_id])}"' in html
    partial = client.get(reverse("agent:requirements", args=[run.run_id]), headers={"HX-Request": "true"})
    assert partial.status_code == 200 and b"<html" not in partial.content and b'id="agent-requirements"' in partial.content


def test_finished_run_shows_verdicts_evidence_and_stops_polling(client, reviewer, finished_run):
    client.force_login(reviewer)
    html = client.get(reverse("run_detail", args=[finished_run.run_id])).content.decode()
    assert "Requirements met: 67%" in html
    assert 'data-verdict="not_met"' in html and html.count('data-verdict="met"') == 2
    assert "out/accuracy.png" in html and "Transcript" in html
    assert 'hx-trigger="every 2s"' not in html
    partial = client.get(reverse("agent:requirements", args=[finished_run.run_id]), headers={"HX-Request": "true"})
    assert partial.status_code == 286  # htmx: stop polling


def test_transcript_page_shows_the_prompt_every_tool_call_and_the_verdict(client, reviewer, finished_run):
    client.force_login(reviewer)
    judgment = finished_run.judgments.get(key="req/1")
    html = client.get(reverse("agent:transcript", args=[finished_run.run_id, judgment.uuid])).content.decode()
    assert "You are checking whether another agent&#x27;s work meets one requirement." in html
    assert "Tool call 1: <span class=\"mono\">read_file</span>" in html
    assert "no such file or directory in the workspace: out/accuracy.png" in html
    assert "evidence holds" in html and "not met" in html


def test_report_download_is_the_runs_report(client, reviewer, finished_run):
    client.force_login(reviewer)
    response = client.get(reverse("agent:report", args=[finished_run.run_id]))
    assert response["Content-Disposition"] == f'attachment; filename="{finished_run.run_id}.report.json"'
    assert json.loads(response.content) == finished_run.report


def test_scripted_demo_judge_is_announced_on_the_transcript(client, reviewer, make_judge, tmp_path, settings):
    settings.AGENT_SANDBOX_ENABLED = False
    demo = make_judge("demo", scripted_demo=True)
    run = agent_run(demo, make_workspace(tmp_path / "ws"), requirements=b"1. writes out/metrics.json\n")
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.report["notice"].startswith("These verdicts come from the repo's scripted demo judge server")
    client.force_login(reviewer)
    html = client.get(reverse("agent:transcript", args=[run.run_id, run.judgments.get().uuid])).content.decode()
    assert "Scripted demo judge." in html


def test_a_large_agent_run_names_the_most_calls_its_requirements_can_take_and_waits_for_the_tick(
    client, reviewer, judge, settings, django_capture_on_commit_callbacks
):
    import re

    settings.LARGE_RUN_CALLS = 20
    client.force_login(reviewer)
    # Three requirements, each at most 15 tool calls and a verdict: 48 calls at most.
    refused = client.post(reverse("agent:home"), form_data(judge))
    assert refused.status_code == 400 and not Run.objects.exists()
    assert re.search(
        r'name="large_run_confirm" value="48"[^>]*> Start this run of about 48 judge calls</label>', refused.content.decode(),
    )
    with django_capture_on_commit_callbacks():
        started = client.post(reverse("agent:home"), form_data(judge, large_run_confirm="48"))
    assert started.status_code == 302 and Run.objects.count() == 1


def test_a_budget_for_an_unpriced_judge_is_a_form_error_and_stores_nothing(client, reviewer, judge):
    client.force_login(reviewer)
    response = client.post(reverse("agent:home"), form_data(judge, budget="0.50"))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert "a budget needs prices for every judge, and judge judge-a has none" in " ".join(errors["budget"])
    assert not Run.objects.exists()
