"""The pairwise pages: start a run from the browser, read the report, open a case side by side."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from fakejudge import DemoBrain, When
from judgeapp.judging import runs
from judgeapp.judging.content import rubric_store
from judgeapp.models import Executor, Run, RunStatus
from tests import factories
from tests.factories import GOOD_REPLY, RUBRIC_ONE
from tests.pairwise.builders import good_and_bad, jsonl, pairwise_run

pytestmark = pytest.mark.django_db


def oracle(reply: str, message: str = "") -> float:
    return 1.0 if GOOD_REPLY in reply else 0.0


def upload(name: str, replies: dict) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, jsonl({"id": k, "output": v} for k, v in replies.items()), content_type="application/jsonl")


@pytest.fixture
def stored_inputs(db):
    from judgeapp.judging.content import testset_store

    return testset_store(
        data=factories.testset_bytes(4, output=None), name="support.jsonl",
    ), rubric_store(data=RUBRIC_ONE, name="rubric.toml")


@pytest.fixture
def finished(judge, fake_judge):
    # Case 1: a judge that prefers whatever is shown first there, so the two orders disagree.
    fake_judge.action = When(lambda r: "(case 1)" in r.prompt, DemoBrain(position_bias=1.0), DemoBrain(quality=oracle))
    a, b = good_and_bad(4, a_better=lambda i: i != 3)
    run = pairwise_run(judge=judge, a=a, b=b, n=4, run_id="ab-web")
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    return run


def test_only_readers_may_start_a_pairwise_run(client, annotator):
    url = reverse("pairwise:new")
    assert client.get(url)["Location"].startswith("/login/")
    client.force_login(annotator)
    assert client.get(url).status_code == 403


def test_reviewer_starts_a_run_with_uploaded_outputs_and_it_goes_to_celery(
    client, reviewer, judge, stored_inputs, django_capture_on_commit_callbacks
):
    testset, rubric = stored_inputs
    a, b = good_and_bad(4)
    client.force_login(reviewer)
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(reverse("pairwise:new"), {
            "testset": testset.pk, "rubric": rubric.pk, "judge": judge.pk, "a_file": upload("a.jsonl", a),
            "b_file": upload("b.jsonl", b), "sample": 3, "seed": 5, "run_id": "ab-from-web",
        })
    assert response.status_code == 302 and response["Location"] == reverse("run_detail", args=["ab-from-web"])
    run = Run.objects.get(run_id="ab-from-web")
    assert run.executor == Executor.CELERY and run.status == RunStatus.QUEUED and run.created_by == reviewer
    assert run.outputs.count() == 6 and len(run.config["options"]["case_ids"]) == 3
    assert len(callbacks) == 1  # the run is sent to the workers once the transaction commits


def test_htmx_post_redirects_the_page_on_success(
    client, reviewer, judge, make_system, stored_inputs, django_capture_on_commit_callbacks
):
    testset, rubric = stored_inputs
    one, two = make_system("bot-1"), make_system("bot-2")
    client.force_login(reviewer)
    with django_capture_on_commit_callbacks():
        response = client.post(
            reverse("pairwise:new"),
            {"testset": testset.pk, "rubric": rubric.pk, "judge": judge.pk, "system_a": one.pk, "system_b": two.pk},
            headers={"HX-Request": "true"},
        )
    run = Run.objects.get()
    assert response.status_code == 200 and response["HX-Redirect"] == reverse("run_detail", args=[run.run_id])
    assert run.config["options"]["versions"]["A"]["system"] == "bot-1"


def test_bad_input_is_a_form_error_and_nothing_is_stored(client, reviewer, judge, stored_inputs):
    testset, rubric = stored_inputs
    a, b = good_and_bad(4)
    del a["c001"]
    client.force_login(reviewer)
    data = {
        "testset": testset.pk, "rubric": rubric.pk, "judge": judge.pk, "a_file": upload("a.jsonl", a),
        "b_file": upload("b.jsonl", b),
    }
    response = client.post(reverse("pairwise:new"), data)
    assert response.status_code == 400  # a refused form
    assert "a.jsonl: no output for case(s) c001 of the test set (version A)" in response.content.decode()
    assert Run.objects.count() == 0
    # Through htmx only the form is swapped, with the same message.
    data.update(a_file=upload("a.jsonl", a), b_file=upload("b.jsonl", b))
    swapped = client.post(reverse("pairwise:new"), data, headers={"HX-Request": "true"})
    assert swapped.status_code == 200  # htmx swaps only a 2xx reply
    partial = swapped.content.decode()
    assert partial.lstrip().startswith('<div id="run-form">') and "<html" not in partial
    assert "no output for case(s) c001" in partial


def test_a_version_needs_exactly_one_source(client, reviewer, judge, make_system, stored_inputs):
    testset, rubric = stored_inputs
    a, b = good_and_bad(4)
    client.force_login(reviewer)
    response = client.post(reverse("pairwise:new"), {
        "testset": testset.pk, "rubric": rubric.pk, "judge": judge.pk, "system_a": make_system().pk,
        "a_file": upload("a.jsonl", a),
    })
    html = response.content.decode()
    assert "Version A: choose a system, a system version&#x27;s stored outputs, or upload its outputs (one of them)." in html
    assert "Version B: choose a system, a system version&#x27;s stored outputs, or upload its outputs (one of them)." in html
    assert Run.objects.count() == 0


def test_starting_needs_csrf(reviewer, judge, stored_inputs):
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(reviewer)
    assert csrf_client.post(reverse("pairwise:new"), {}).status_code == 403


def test_the_run_page_shows_the_report_with_disagreements_highlighted(client, reviewer, finished):
    client.force_login(reviewer)
    html = client.get(reverse("run_detail", args=["ab-web"])).content.decode()
    assert "Version A wins" in html
    assert "orders disagreed" in html and 'class="dissent" data-case="c001"' in html
    assert reverse("pairwise:case", args=["ab-web", "c000"]) in html
    assert 'id="length-split"' in html and "win rate A, ties excluded" in html


def test_an_inconclusive_run_says_so_and_names_no_winner(client, reviewer, judge, fake_judge):
    fake_judge.action = DemoBrain(position_bias=1.0)
    run = pairwise_run(judge=judge, n=3, run_id="ab-biased")
    runs.run_execute_inline(run=run)
    client.force_login(reviewer)
    html = client.get(reverse("run_detail", args=["ab-biased"])).content.decode()
    assert "Inconclusive: no winner named." in html and "wins</strong>" not in html


def test_a_case_shows_both_replies_side_by_side_and_both_verdicts_with_reasoning(client, reviewer, finished):
    client.force_login(reviewer)
    html = client.get(reverse("pairwise:case", args=["ab-web", "c001"])).content.decode()
    a, b = good_and_bad(4, a_better=lambda i: i != 3)
    assert escape(a["c001"]) in html and escape(b["c001"]) in html
    assert "A's reply shown first (Reply 1 = A)" in html and "B's reply shown first (Reply 1 = B)" in html
    assert "Tie: the two orders disagreed." in html
    assert html.count('class="reasoning"') == 2 and "Reply 1 answers the request better." in html
    unit = finished.judgments.get(key="c001/ab")
    assert reverse("judgment_detail", args=["ab-web", unit.uuid]) in html
    agreed = client.get(reverse("pairwise:case", args=["ab-web", "c003"])).content.decode()
    assert "B wins</strong> in both orders" in agreed


def test_an_unknown_case_is_404(client, reviewer, finished):
    client.force_login(reviewer)
    assert client.get(reverse("pairwise:case", args=["ab-web", "nope"])).status_code == 404


def test_a_polled_progress_bar_keeps_asking_for_the_reload_that_shows_the_report(client, reviewer, judge):
    # Foundation fix: the partial swapped in by a poll lost `?reload=1`, so a run page opened before the
    # run finished showed "done" but never reloaded to show its report.
    run = pairwise_run(judge=judge, n=2, run_id="ab-polled", executor=Executor.CELERY)
    client.force_login(reviewer)
    url = reverse("run_progress", args=[run.run_id])
    polled = client.get(url + "?reload=1", headers={"HX-Request": "true"}).content.decode()
    assert f'hx-get="{url}?reload=1"' in polled
    Run.objects.filter(pk=run.pk).update(status=RunStatus.DONE)
    done = client.get(url + "?reload=1", headers={"HX-Request": "true"})
    assert done.status_code == 286 and done["HX-Refresh"] == "true"


def test_a_side_can_be_a_system_versions_stored_outputs(
    client, reviewer, judge, make_system, stored_inputs, django_capture_on_commit_callbacks
):
    from judgeapp.judging.content import InputFile
    from judgeapp.judging.outputs import output_set_save

    testset, rubric = stored_inputs
    a, b = good_and_bad(4)
    system = make_system("support-bot")
    stored, _ = output_set_save(
        system=system, version_label="v2.1", testset=testset,
        outputs=InputFile(jsonl({"id": k, "output": v} for k, v in a.items()), "v21.jsonl"), created_by=reviewer,
    )
    client.force_login(reviewer)
    assert "support-bot v2.1 — answers support" in client.get(reverse("pairwise:new")).content.decode()
    with django_capture_on_commit_callbacks():
        response = client.post(reverse("pairwise:new"), {
            "testset": testset.pk, "rubric": rubric.pk, "judge": judge.pk, "a_stored": stored.pk,
            "b_file": upload("b.jsonl", b), "run_id": "ab-stored",
        })
    assert response.status_code == 302, response.content.decode()[:3000]
    run = Run.objects.get(run_id="ab-stored")
    assert run.options["versions"]["A"]["source"] == "uploaded" and run.options["versions"]["A"]["version"] == "v2.1"
    assert dict(run.outputs.filter(slot="A").values_list("case__case_id", "text")) == a
    assert not run.judgments.filter(purpose="generate").exists()
