"""The pointwise pages: start a run (pick from evals/ or upload), the report, judgments, exports, the gate
with the leads' decisions, releases. With and without htmx; roles and CSRF enforced."""

import io
import json

import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from judgeapp import models
from judgeapp.judging import runs
from judgeapp.models import AuditLog, Executor, GateDecision, Release, Run, RunStatus
from tests import factories
from tests.factories import BAD_REPLY, GOOD_REPLY, RUBRIC_ONE, RUBRIC_TWO, pointwise_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(judge, make_system):
    system = make_system("bot")
    run = pointwise_run(judge=judge, n=6, rubric=RUBRIC_TWO, run_id="pw-1", system=system, threshold=1.0)
    return runs.run_execute_inline(run=run)


def form_data(judge, **extra):
    return {"judge": judge.pk, "threshold": "3.5", **extra}


# --- Starting a run ------------------------------------------------------------------------------------


def test_the_form_offers_the_stored_test_sets_and_rubrics_the_demo_loads_from_evals(client, reviewer, judge, support_inputs):
    client.force_login(reviewer)
    html = client.get(reverse("pointwise:new")).content.decode()
    assert f'<option value="{support_inputs.testset.pk}" selected>support (v1, 24 cases)</option>' in html
    assert f'<option value="{support_inputs.rubric.pk}" selected>support-quality (v1)</option>' in html
    assert "evals/support/testset.jsonl" not in html  # files are datasets once loaded, not a second list
    assert 'enctype="multipart/form-data"' in html and "csrfmiddlewaretoken" in html


@pytest.mark.parametrize(
    "page", ["pointwise:new", "pairwise:new", "blind:new", "agent:home", "ranker:rank_new", "ranker:compare_new"],
)
def test_the_judge_preselected_is_the_default_one_not_the_first_name(client, reviewer, make_judge, page):
    """The judge a command without --judge would use (the judges file's `default`), as every form's choice."""
    make_judge("aaa-first-by-name")
    default = make_judge("small-a")
    models.Judge.objects.filter(pk=default.pk).update(is_default=True)
    client.force_login(reviewer)
    html = client.get(reverse(page)).content.decode()
    assert f'<option value="{default.pk}" selected>' in html


def test_picking_stored_inputs_queues_a_celery_run(
    client, reviewer, judge, support_inputs, monkeypatch, django_capture_on_commit_callbacks
):
    from judgeapp.judging import taskqueue
    sent = []
    monkeypatch.setattr(taskqueue, "send", lambda name, pk, **options: sent.append(pk))
    client.force_login(reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("pointwise:new"),
            form_data(judge, **support_inputs.form, title="nightly", run_id="nightly-1"),
        )
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("run_detail", args=[run.run_id])
    assert run.executor == Executor.CELERY and run.status == RunStatus.QUEUED and run.created_by == reviewer
    assert sent == [run.pk]
    assert run.testset.case_count == 24 and run.rubric.criteria.count() == 3
    assert run.testset == support_inputs.testset and run.run_id == "nightly-1"
    assert run.testset.source_path.endswith("evals/support/testset.jsonl")
    assert run.config["options"]["threshold"] == 3.5


def test_uploaded_files_are_stored_by_content_hash(client, reviewer, judge, monkeypatch):
    from judgeapp.judging import taskqueue
    monkeypatch.setattr(taskqueue, "send", lambda name, *args, **options: None)
    client.force_login(reviewer)
    response = client.post(
        reverse("pointwise:new"),
        form_data(
            judge,
            testset_file=SimpleUploadedFile("mine.jsonl", factories.testset_bytes(3)),
            rubric_file=SimpleUploadedFile("rubric.toml", RUBRIC_ONE),
        ),
    )
    assert response.status_code == 302
    run = Run.objects.get()
    assert run.testset.name == "mine" and run.testset.case_count == 3 and run.versions["testset"] == run.testset.version
    assert run.testset.git_commit == ""


@pytest.mark.parametrize(
    "testset, rubric, message",
    [
        (b'{"id": "c1", "output": "x"}\n', RUBRIC_ONE, "missing column &#x27;input&#x27;"),
        (b'{"id": "c1", "input": "a", "output": "x"}\n{"id": "c1", "input": "b", "output": "y"}\n', RUBRIC_ONE, "duplicate id"),
        (b'{"id": "c1", "input": "a", "output": \n', RUBRIC_ONE, "not valid JSON"),
        (factories.testset_bytes(2), b'name = "r"\n[[criteria]]\nname = "h"\ndescription = "d"\n', "missing &#x27;scale&#x27;"),
    ],
    ids=["missing-column", "duplicate-ids", "invalid-json", "rubric-without-scale"],
)
def test_a_bad_upload_is_a_form_error_and_nothing_is_stored(client, reviewer, judge, testset, rubric, message):
    client.force_login(reviewer)
    response = client.post(
        reverse("pointwise:new"),
        form_data(judge, testset_file=SimpleUploadedFile("t.jsonl", testset), rubric_file=SimpleUploadedFile("r.toml", rubric)),
    )
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not (models.TestSet.objects.exists() or models.Rubric.objects.exists() or Run.objects.exists())


def test_a_test_set_and_rubric_must_each_be_picked_or_uploaded(client, reviewer, judge, support_inputs):
    client.force_login(reviewer)
    response = client.post(reverse("pointwise:new"), form_data(judge, testset="", rubric=support_inputs.rubric.pk))
    assert response.status_code == 400 and b"Choose a stored test set or upload one." in response.content
    assert not Run.objects.exists()


def test_an_upload_wins_over_the_preselected_picker_in_one_submit(client, reviewer, judge, support_inputs, monkeypatch):
    from judgeapp.judging import taskqueue

    monkeypatch.setattr(taskqueue, "send", lambda name, pk, **options: None)
    client.force_login(reviewer)
    testset = factories.testset_bytes(3, output=lambda i: GOOD_REPLY)
    response = client.post(reverse("pointwise:new"), form_data(
        judge, **support_inputs.form, testset_file=SimpleUploadedFile("ours.jsonl", testset),
        rubric_file=SimpleUploadedFile("ours.toml", RUBRIC_ONE),
    ))
    assert response.status_code == 302, response.content.decode()[:2000]
    run = Run.objects.get()
    assert (run.testset.name, run.testset.case_count) == ("ours", 3) and run.rubric.raw == RUBRIC_ONE.decode()


def test_the_pickers_name_stored_versions_and_leave_out_the_checkup_sets(client, reviewer, judge):
    from judgeapp.judging.content import testset_store

    testset_store(data=factories.testset_bytes(2), name="support.jsonl")
    testset_store(data=factories.testset_bytes(3), name="support.jsonl")
    public = testset_store(data=factories.testset_bytes(9), name="pandalm.jsonl")
    Run.objects.create(run_id="checkup-1", kind="checkup", testset=public)
    client.force_login(reviewer)
    html = client.get(reverse("pointwise:new")).content.decode()
    assert "support (v1, 2 cases)" in html and "support (v2, 3 cases)" in html
    assert "pandalm" not in html


def test_the_start_anyway_tick_survives_a_refresh_of_the_warnings(client, reviewer, make_judge, make_system):
    judge = make_judge("same-family", family="openai")
    system = make_system("bot", family="openai")
    client.force_login(reviewer)
    url = reverse("pointwise:new")
    query = {"preflight": "1", "judge": judge.pk, "system": system.pk, "confirm": "on"}
    html = client.get(url, query, headers={"HX-Request": "true"}).content.decode()
    assert 'id="preflight-confirm" hx-preserve="true"' in html
    assert (
        'name="confirm"' in html
        and "checked" in html.split('name="confirm"')[1].split(">")[0] + html.split('name="confirm"')[0].rsplit("<", 1)[1]
    )


def test_the_test_set_picker_starts_on_the_teams_newest_stored_test_set(client, reviewer, judge):
    from judgeapp.judging.content import testset_store

    testset_store(data=factories.testset_bytes(2), name="billing.jsonl")
    newest = testset_store(data=factories.testset_bytes(3), name="support-faq.jsonl")
    client.force_login(reviewer)
    html = client.get(reverse("pointwise:new")).content.decode()
    assert f'<option value="{newest.pk}" selected>support-faq (v1, 3 cases)</option>' in html


def test_only_a_stored_version_can_be_picked_not_a_path(client, reviewer, judge, support_inputs):
    client.force_login(reviewer)
    response = client.post(
        reverse("pointwise:new"), form_data(judge, testset="../judgeapp/settings.py", rubric=support_inputs.rubric.pk),
    )
    assert response.status_code == 400 and not Run.objects.exists()
    assert "Select a valid choice" in response.content.decode()


def test_annotators_cannot_start_runs_or_read_gates(client, annotator, finished):
    client.force_login(annotator)
    for url in (reverse("pointwise:new"), reverse("releases:gate", args=["pw-1"]), reverse("releases:releases"),
                reverse("pointwise:judgments", args=["pw-1"]), reverse("pointwise:export", args=["pw-1", "csv"])):
        assert client.get(url).status_code == 403


# --- The report ----------------------------------------------------------------------------------------


def test_the_run_page_shows_scores_histogram_and_lowest_cases(client, reviewer, finished):
    client.force_login(reviewer)
    html = client.get(reverse("run_detail", args=["pw-1"])).content.decode()
    report = finished.report
    assert f'data-mean="{report["mean"]}"' in html and "95% CI" in html
    for point, count in report["histogram"].items():
        assert f'data-score="{point}" data-count="{count}"' in html
    lowest = report["lowest"][0]
    assert reverse("judgment_detail", args=["pw-1", lowest["judgment"]]) in html
    assert BAD_REPLY in html  # the reply beside its lowest score
    assert "helpfulness" in html and "tone" in html
    assert reverse("pointwise:export", args=["pw-1", "csv"]) in html
    # The gate and the judgments load by htmx, with links for pages without JavaScript.
    assert f'hx-get="{reverse("releases:gate", args=["pw-1"])}"' in html
    assert f'href="{reverse("pointwise:judgments", args=["pw-1"])}"' in html


def test_the_run_page_of_an_unfinished_run_waits_for_the_report(client, reviewer, judge):
    pointwise_run(judge=judge, n=2, executor="celery", run_id="pw-q")
    client.force_login(reviewer)
    html = client.get(reverse("run_detail", args=["pw-q"])).content.decode()
    assert "The report appears here when every case is scored." in html and 'hx-trigger="every 2s"' in html


def test_same_family_warning_is_on_the_page(client, reviewer, make_judge, make_system):
    judge = make_judge("gpt-judge", model="gpt-4o", family="openai")
    run = pointwise_run(judge=judge, n=2, run_id="pw-fam", system=make_system("bot"))
    runs.run_execute_inline(run=run)
    client.force_login(reviewer)
    html = client.get(reverse("run_detail", args=["pw-fam"])).content.decode()
    assert "same family (openai)" in html


def test_judgments_filter_by_score_and_page(client, reviewer, judge):
    run = pointwise_run(judge=judge, n=60, run_id="pw-big")
    runs.run_execute_inline(run=run)
    client.force_login(reviewer)
    url = reverse("pointwise:judgments", args=["pw-big"])
    page = client.get(url)
    assert page.context["page"].paginator.count == 60 and len(page.context["page"]) == 50
    assert b"<html" in page.content
    low_score = min(int(s) for s, c in run.report["histogram"].items() if c)
    partial = client.get(url, {"score": low_score}, headers={"HX-Request": "true"})
    assert b"<html" not in partial.content and b'id="judgment-list"' in partial.content
    html = partial.content.decode()
    rows = html.count('href="/runs/pw-big/judgments/')
    assert rows == run.report["histogram"][str(low_score)] > 0
    assert html.count(f'class="score s{low_score}"') == rows and 'class="score s5"' not in html
    second = client.get(url, {"page": 2})
    assert len(second.context["page"]) == 10


def test_judgment_filters_that_do_not_fit_are_no_filter_and_the_links_swap_the_list_in_place(client, reviewer, finished):
    client.force_login(reviewer)
    url = reverse("pointwise:judgments", args=["pw-1"])
    everything = client.get(url).context["page"].paginator.count
    odd = client.get(url, {"score": "five", "status": "pending", "criterion": "tone"})
    assert odd.status_code == 200 and odd.context["filters"] == {"criterion": "tone", "score": "", "status": ""}
    assert odd.context["page"].paginator.count == everything // 2  # only the criterion holds: 6 cases x tone
    assert client.get(url, {"criterion": "speed"}).context["page"].paginator.count == 0  # not in the rubric
    assert client.get(url, {"score": "-1"}).context["page"].paginator.count == everything == 12
    html = client.get(url, headers={"HX-Request": "true"}).content.decode()
    # hx-target and hx-swap once, on the list; every link inherits them.
    assert html.count('hx-target="this" hx-swap="outerHTML"') == 1 and html.count("hx-get=") >= 5
    assert "hx-swap=\"outerHTML\"" not in html.split('id="judgment-list"', 1)[1].split(">", 1)[1]


def test_a_judgment_drills_down_to_prompt_raw_reply_score_and_attempts(client, reviewer, finished):
    client.force_login(reviewer)
    judgment = finished.judgments.get(key="c001/helpfulness")
    html = client.get(reverse("judgment_detail", args=["pw-1", judgment.uuid])).content.decode()
    assert "&lt;assistant_reply&gt;" in html and "Respond in JSON" in html  # the prompt sent
    assert "Raw reply" in html and "HTTP attempts" in html and "Parse attempts" in html
    assert f"<dt>score</dt><dd>{judgment.parsed['score']}</dd>" in html  # the parsed reply as fields, not a dict


def test_exports_csv_json_and_markdown(client, reviewer, finished):
    client.force_login(reviewer)
    csv = client.get(reverse("pointwise:export", args=["pw-1", "csv"]))
    assert csv["Content-Disposition"] == 'attachment; filename="pw-1.csv"'
    assert csv.streaming  # sent as it is read: a run of 100,000 judgments is never one string in memory
    frame = pd.read_csv(io.StringIO(b"".join(csv.streaming_content).decode()))
    assert len(frame) == 12 and set(frame.criterion) == {"helpfulness", "tone"}
    assert frame.score.dtype == "int64" and frame.score.between(1, 5).all()
    report = json.loads(client.get(reverse("pointwise:export", args=["pw-1", "json"])).content)
    assert report["run_id"] == "pw-1" and report["gate"]["passed"] is True and "agreement" in report
    markdown = client.get(reverse("pointwise:export", args=["pw-1", "md"])).content.decode()
    assert markdown.startswith("## Pointwise evaluation `pw-1`: gate PASSED")
    assert client.get(reverse("pointwise:export", args=["pw-1", "exe"])).status_code == 404


# --- The gate and the leads' decisions -----------------------------------------------------------------


def test_reviewers_see_the_gate_but_not_the_decision_forms(client, reviewer, finished):
    client.force_login(reviewer)
    html = client.get(reverse("releases:gate", args=["pw-1"])).content.decode()
    assert "PASSED" in html and "Only a lead approves, blocks or releases." in html
    assert reverse("releases:decide", args=["pw-1"]) not in html


def test_the_gate_panel_is_a_partial_for_htmx(client, reviewer, finished):
    client.force_login(reviewer)
    partial = client.get(reverse("releases:gate", args=["pw-1"]), headers={"HX-Request": "true"})
    assert b"<html" not in partial.content and b'id="gate-panel"' in partial.content and b'data-passed="true"' in partial.content


def test_a_lead_approves_with_a_reason_and_it_is_audited(client, lead, finished):
    client.force_login(lead)
    page = client.get(reverse("releases:gate", args=["pw-1"])).content.decode()
    assert reverse("releases:decide", args=["pw-1"]) in page and reverse("releases:release", args=["pw-1"]) in page
    response = client.post(reverse("releases:decide", args=["pw-1"]), {"verdict": "approved", "reason": "Read the lowest cases."})
    assert response.status_code == 302
    decision = GateDecision.objects.get()
    assert decision.decided_by == lead and decision.reason == "Read the lowest cases."
    assert AuditLog.objects.get().action == AuditLog.Action.RELEASE_APPROVED
    html = client.get(reverse("releases:gate", args=["pw-1"])).content.decode()
    assert "Read the lowest cases." in html and "release.approved" in html


def test_a_lead_cannot_approve_a_blocked_gate(client, lead, judge):
    run = runs.run_execute_inline(run=pointwise_run(judge=judge, n=2, run_id="pw-low", threshold=4.5))
    assert run.report["gate"]["passed"] is False
    client.force_login(lead)
    response = client.post(reverse("releases:decide", args=["pw-low"]), {"verdict": "approved", "reason": "ship"})
    assert response.status_code == 400 and b"cannot be approved" in response.content
    assert not GateDecision.objects.exists()


def test_a_decision_without_a_reason_is_a_form_error(client, lead, finished):
    client.force_login(lead)
    response = client.post(reverse("releases:decide", args=["pw-1"]), {"verdict": "blocked", "reason": ""})
    assert response.status_code == 400 and not GateDecision.objects.exists()


def test_a_lead_blocks_and_the_gate_shows_it(client, lead, finished):
    client.force_login(lead)
    client.post(reverse("releases:decide", args=["pw-1"]), {"verdict": "blocked", "reason": "Tone regressed on refunds."})
    partial = client.get(reverse("releases:gate", args=["pw-1"]), headers={"HX-Request": "true"}).content.decode()
    assert 'data-passed="false"' in partial and "Tone regressed on refunds." in partial


def test_a_reviewer_cannot_decide_or_release(client, reviewer, finished):
    client.force_login(reviewer)
    assert client.post(reverse("releases:decide", args=["pw-1"]), {"verdict": "approved", "reason": "x"}).status_code == 403
    assert client.post(reverse("releases:release", args=["pw-1"]), {"label": "v1"}).status_code == 403
    assert not (GateDecision.objects.exists() or Release.objects.exists())


def test_decisions_need_post_and_csrf(lead, finished):
    client = Client(enforce_csrf_checks=True)
    client.force_login(lead)
    url = reverse("releases:decide", args=["pw-1"])
    assert client.get(url).status_code == 405
    assert client.post(url, {"verdict": "approved", "reason": "x"}).status_code == 403
    token = client.get(reverse("releases:gate", args=["pw-1"])).context["csrf_token"]
    assert client.post(url, {"verdict": "approved", "reason": "x", "csrfmiddlewaretoken": str(token)}).status_code == 302


def test_a_lead_marks_a_run_released_and_the_releases_page_lists_it(client, lead, finished):
    client.force_login(lead)
    response = client.post(reverse("releases:release", args=["pw-1"]), {"label": "v2.4.0", "note": "Tuesday"})
    assert response.status_code == 302
    release = Release.objects.get()
    assert release.run == finished and release.label == "v2.4.0" and release.released_by == lead
    html = client.get(reverse("releases:releases")).content.decode()
    assert "v2.4.0" in html and "release.marked_released" in html and "leo" in html
    again = client.post(reverse("releases:release", args=["pw-1"]), {"label": "v2.4.1"})
    assert again.status_code == 400 and b"already released" in again.content


def test_a_run_of_another_kind_has_no_pointwise_pages(client, reviewer, judge):
    run = pointwise_run(judge=judge, n=1, run_id="other")
    Run.objects.filter(pk=run.pk).update(kind="pairwise")
    client.force_login(reviewer)
    assert client.get(reverse("releases:gate", args=["other"])).status_code == 404


def test_good_and_bad_replies_are_told_apart_on_the_report(client, reviewer, judge):
    """Sanity of the whole chain: the test set's good replies score above its bad ones."""
    run = runs.run_execute_inline(run=pointwise_run(judge=judge, n=4, run_id="pw-sanity"))
    scores = {j.case.case_id: j.parsed["score"] for j in run.judgments.select_related("case")}
    assert scores["c000"] > scores["c001"]  # GOOD_REPLY on even cases, BAD_REPLY on odd ones
    assert GOOD_REPLY and run.report["lowest"][0]["case_id"] in {"c001", "c003"}


def test_progress_polling_keeps_asking_to_reload_the_page_when_the_run_finishes(client, reviewer, judge):
    """The run page reloads once when its run finishes, to show the report: every poll must carry that."""
    run = pointwise_run(judge=judge, n=1, executor="celery", run_id="pw-poll")
    client.force_login(reviewer)
    url = reverse("run_progress", args=["pw-poll"])
    polling = client.get(url, {"reload": "1"}, headers={"HX-Request": "true"}).content.decode()
    assert f'hx-get="{url}?reload=1"' in polling
    runs.run_execute_inline(run=Run.objects.filter(pk=run.pk).update(executor="inline") and Run.objects.get(pk=run.pk))
    done = client.get(url, {"reload": "1"}, headers={"HX-Request": "true"})
    assert done.status_code == 286 and done["HX-Refresh"] == "true"


def test_the_form_judges_a_stored_system_version_and_refuses_a_system_without_outputs(
    client, reviewer, judge, make_system, support_inputs, monkeypatch
):
    from judgeapp.judging import taskqueue
    from judgeapp.judging.content import InputFile, testset_store
    from judgeapp.judging.outputs import output_set_save

    monkeypatch.setattr(taskqueue, "send", lambda name, pk, **options: None)
    system = make_system("support-bot")
    testset = testset_store(data=factories.testset_bytes(2, output=lambda i: BAD_REPLY), name="support.jsonl")
    client.force_login(reviewer)
    picked = {"testset": testset.pk, "rubric": support_inputs.rubric.pk}
    refused = client.post(reverse("pointwise:new"), form_data(judge, system=system.pk, **picked))
    assert refused.status_code == 400 and "support-bot has no outputs for this test set" in refused.content.decode()
    assert not Run.objects.exists()

    given = b"".join(json.dumps({"id": f"c{i:03d}", "output": GOOD_REPLY}).encode() + b"\n" for i in range(2))
    stored, _ = output_set_save(
        system=system, version_label="v2.1", testset=testset, outputs=InputFile(given, "v21.jsonl"), created_by=reviewer,
    )
    html = client.get(reverse("pointwise:new")).content.decode()
    assert "support-bot v2.1 — answers support, 2 outputs" in html
    started = client.post(reverse("pointwise:new"), form_data(judge, output_set=stored.pk, **picked))
    assert started.status_code == 302
    run = Run.objects.get()
    assert run.system == system and run.options["outputs"]["version"] == "v2.1"
    assert set(run.outputs.values_list("text", flat=True)) == {GOOD_REPLY}


def test_a_queued_runs_page_says_where_its_outputs_come_from(client, reviewer, judge, make_system, monkeypatch):
    from judgeapp.judging import taskqueue
    from judgeapp.judging.content import InputFile, testset_store
    from judgeapp.judging.outputs import output_set_save
    from judgeapp.pointwise.services import pointwise_run_create

    monkeypatch.setattr(taskqueue, "send", lambda name, pk, **options: None)
    system = make_system("support-bot")
    testset = testset_store(data=factories.testset_bytes(2), name="support.jsonl")
    given = b"".join(json.dumps({"id": f"c{i:03d}", "output": GOOD_REPLY}).encode() + b"\n" for i in range(2))
    stored, _ = output_set_save(
        system=system, version_label="v2.1", testset=testset, outputs=InputFile(given, "v21.jsonl"), created_by=reviewer,
    )
    from judgeapp.judging.content import rubric_store

    run = pointwise_run_create(
        testset=testset, rubric=rubric_store(data=RUBRIC_ONE, name="rubric.toml"), judge=judge, output_set=stored,
    )
    client.force_login(reviewer)
    html = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    day = stored.created_at
    assert f"Outputs: uploaded as support-bot v2.1 on {day.day} {day:%b %Y} by {reviewer.username}" in html
