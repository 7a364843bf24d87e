"""The blind comparator's pages: start from server directories or uploads, the leakage page, the blinded
run page, the logged reveal, comparison.json; roles and CSRF."""

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from judgeapp.blind.core.comparator import comparison_errors
from judgeapp.judging import runs as run_services
from judgeapp.judging import selectors
from judgeapp.judging.runkind import page_read
from judgeapp.models import AuditLog, BlindComparison, BlindVersion, Run
from tests.blind.helpers import EXPECTATIONS, FAILED_RUN, MIDDLING, STRONG, TASK, WEAK, write_version
from tests.helpers import rendered_without_queries

pytestmark = pytest.mark.django_db

REAL_NAMES = ("alpha-terse", "beta-stepwise", "gamma-prose")


@pytest.fixture
def inbox(tmp_path, settings):
    root = tmp_path / "inbox"
    write_version(root, "alpha-terse", [MIDDLING, MIDDLING, FAILED_RUN])
    write_version(root, "team/beta-stepwise", [STRONG, STRONG])
    write_version(root, "gamma-prose", single=WEAK)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text("outside the roots")
    settings.BROWSE_ROOTS = [root]
    return root


@pytest.fixture
def no_celery(monkeypatch):
    """Runs started from the browser go to Celery; here they are executed in-process by the test."""
    from judgeapp.judging import taskqueue
    sent = []
    monkeypatch.setattr(taskqueue, "send", lambda name, pk, **options: sent.append(pk))
    return sent


def form_data(judge, directories, **extra):
    return {"directories": directories, "prompt": TASK, "expectations": "\n".join(EXPECTATIONS), "judge": judge.pk,
            "upload_rows": 2, **extra}


def keys(*names):
    return [f"0:{name}" for name in names]


def start(client, judge, directories, django_capture_on_commit_callbacks, **extra):
    with django_capture_on_commit_callbacks(execute=True):
        return client.post(reverse("blind:new"), form_data(judge, directories, **extra))


@pytest.mark.parametrize("name", ["blind:index", "blind:new"])
def test_blind_pages_are_for_reviewers_and_leads_only(client, annotator, reviewer, lead, name):
    assert client.get(reverse(name)).status_code == 302  # login first
    client.force_login(annotator)
    assert client.get(reverse(name)).status_code == 403
    for user in (reviewer, lead):
        client.force_login(user)
        assert client.get(reverse(name)).status_code == 200


def test_the_form_offers_directories_under_the_browse_roots_by_real_name(client, reviewer, judge, inbox):
    client.force_login(reviewer)
    html = client.get(reverse("blind:new")).content.decode()
    assert "alpha-terse (3 runs)" in html and "team/beta-stepwise (2 runs)" in html and "gamma-prose (1 run)" in html
    assert "secret" not in html and 'value="0:team"' not in html


@pytest.mark.parametrize("key", ["0:../outside", "0:/etc", "1:alpha-terse", "0:", "alpha-terse", "0:missing"])
def test_a_directory_outside_the_roots_is_refused_and_nothing_is_stored(client, reviewer, judge, inbox, key):
    client.force_login(reviewer)
    data = form_data(judge, keys("alpha-terse", "gamma-prose"))
    data["directories"] = [*data["directories"], key]
    response = client.post(reverse("blind:new"), data)
    assert response.status_code == 400  # a refused form
    assert response.context["form"].errors
    assert not BlindComparison.objects.exists() and not Run.objects.exists()


def test_a_symbolic_link_out_of_the_roots_is_refused(client, reviewer, judge, inbox, tmp_path):
    (inbox / "sneaky").symlink_to(tmp_path / "outside")
    client.force_login(reviewer)
    response = client.post(reverse("blind:new"), form_data(judge, keys("alpha-terse", "sneaky")))
    assert "symbolic link" in response.content.decode() or "not one of the available choices" in response.content.decode()
    assert not Run.objects.exists()


def test_one_version_is_not_a_comparison(client, reviewer, judge, inbox):
    client.force_login(reviewer)
    response = client.post(reverse("blind:new"), form_data(judge, keys("alpha-terse")))
    assert "at least two versions" in response.content.decode()
    assert not Run.objects.exists()


def test_starting_draws_labels_hides_the_mapping_and_judges_only_blinded_content(
    client, reviewer, judge, fake_judge, inbox, no_celery, django_capture_on_commit_callbacks
):
    client.force_login(reviewer)
    response = start(client, judge, keys("alpha-terse", "team/beta-stepwise", "gamma-prose"), django_capture_on_commit_callbacks)
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("run_detail", args=[run.run_id])
    assert no_celery == [run.pk]  # queued for a worker after commit
    comparison = run.blind_comparison
    mapping = {v.label: v.real_name for v in comparison.versions.all()}
    assert (
        sorted(mapping) == ["A", "B", "C"]
        and sorted(mapping.values()) == sorted(["alpha-terse", "team/beta-stepwise", "gamma-prose"])
    )
    assert all(v.source == BlindVersion.Source.BROWSE for v in comparison.versions.all())
    run_services.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == "done"
    # Nothing the judge saw names a real version.
    for request in fake_judge.chat_requests:
        for name in (*REAL_NAMES, "alpha", "beta", "gamma", "team/", str(inbox)):
            assert name not in request.all_text
    # The run page shows the blinded comparison and no real name until the reveal.
    html = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    for name in REAL_NAMES:
        assert name not in html
    assert "Reveal the mapping" in html and 'id="blind-rubric"' in html and 'id="blind-expectations"' in html
    assert 'id="version-A"' in html and 'id="version-C"' in html and "run-3" in html
    doc = run.report["comparison"]
    winner_label = {v: k for k, v in mapping.items()}["team/beta-stepwise"]
    assert doc["winner"] == winner_label
    flaky = {v: k for k, v in mapping.items()}["alpha-terse"]
    assert doc["rubric"][flaky]["run_consistency"] != "high"


def test_revealing_the_mapping_after_the_verdict_is_logged(client, reviewer, judge, fake_judge, inbox, no_celery,
                                                          django_capture_on_commit_callbacks):
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    page = client.get(reverse("blind:new"))
    token = str(page.context["csrf_token"])
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("blind:new"), {**form_data(judge, keys("alpha-terse", "gamma-prose")), "csrfmiddlewaretoken": token})
    run = Run.objects.get()
    reveal = reverse("blind:reveal", args=[run.run_id])
    # Before the verdict: refused, nothing logged.
    response = client.post(reveal, {"csrfmiddlewaretoken": token}, follow=True)
    assert "only after the verdict" in response.content.decode()
    assert not AuditLog.objects.filter(action="blind.mapping_revealed").exists()
    run_services.run_execute_inline(run=run)
    assert client.get(reveal).status_code == 405
    assert client.post(reveal).status_code == 403  # no CSRF token
    response = client.post(reveal, {"csrfmiddlewaretoken": token}, follow=True)
    html = response.content.decode()
    assert "alpha-terse" in html and "gamma-prose" in html and 'id="mapping-table"' in html
    # The page's reads are its kind's selector's (BlindHandler.page_reads): the panel, mapping included, renders
    # from them without a query.
    run = selectors.run_get(run_id=run.run_id)
    context = {"run": run, "judgments": [], **page_read("blind", "run", run=run)}
    panel = rendered_without_queries("judgeapp/blind/run.html", context)
    assert "alpha-terse" in panel and 'id="mapping-table"' in panel and 'id="version-A"' in panel
    entry = AuditLog.objects.get(action="blind.mapping_revealed")
    assert (
        entry.actor == reviewer and entry.run == run and set(entry.detail["mapping"].values()) == {"alpha-terse", "gamma-prose"}
    )
    client.post(reveal, {"csrfmiddlewaretoken": token})
    assert AuditLog.objects.filter(action="blind.mapping_revealed").count() == 1


def test_comparison_json_downloads_in_the_seeds_format(client, reviewer, judge, fake_judge, inbox, no_celery,
                                                      django_capture_on_commit_callbacks):
    client.force_login(reviewer)
    start(client, judge, keys("alpha-terse", "gamma-prose"), django_capture_on_commit_callbacks)
    run = Run.objects.get()
    url = reverse("blind:comparison_json", args=[run.run_id])
    assert client.get(url).status_code == 404  # no result yet
    run_services.run_execute_inline(run=run)
    response = client.get(url)
    assert response["Content-Disposition"].startswith("attachment")
    doc = json.loads(response.content)
    assert comparison_errors(doc) == []
    run.refresh_from_db()
    assert json.loads((run.run_dir / "comparison.json").read_text()) == doc


def test_leaky_versions_stop_before_judging_and_the_leakage_page_lists_each_flag(
    client, reviewer, judge, fake_judge, inbox, make_system, django_capture_on_commit_callbacks
):
    make_system("support-bot-v2")
    leaky = write_version(inbox, "with-skill", ["# Runbook\nBy support-bot-v2, per skills/runbooks/SKILL.md.\n"])
    (leaky / "run-1" / "chat.md").write_text("User: go\nAssistant: ok\n")
    client.force_login(reviewer)
    response = start(client, judge, keys("with-skill", "gamma-prose"), django_capture_on_commit_callbacks)
    comparison = BlindComparison.objects.get()
    assert response["Location"] == reverse("blind:leakage", args=[comparison.uuid])
    assert comparison.status == "leaked" and comparison.run is None and not Run.objects.exists()
    assert fake_judge.chat_requests == []
    assert set(comparison.versions.values_list("label", flat=True)) == {""}  # no label survives a stop
    html = client.get(response["Location"]).content.decode()
    # The system's name, the skill path, the transcript, and "skill" (the distinctive word of the version's
    # own name, with-skill) in SKILL.md.
    assert "Stopped: 4 leakage flags" in html
    assert "version &#x27;with-skill&#x27;" in html and "run-1/runbook.md line 2" in html
    assert "configured system &#x27;support-bot-v2&#x27;" in html and "skill path" in html and "raw transcript" in html
    assert "By support-bot-v2, per skills/runbooks/SKILL.md." in html
    assert "How to re-run once sanitized" in html
    # Re-running after sanitizing: the form comes back filled in, and the clean inputs start a run.
    rerun = client.get(reverse("blind:new") + f"?from={comparison.uuid}")
    assert sorted(rerun.context["form"].initial["directories"]) == keys("gamma-prose", "with-skill")
    assert rerun.context["form"].initial["prompt"] == TASK
    (leaky / "run-1" / "runbook.md").write_text("# Runbook\n1. Notify the on-call engineer.\n")
    (leaky / "run-1" / "chat.md").unlink()
    response = start(client, judge, keys("with-skill", "gamma-prose"), django_capture_on_commit_callbacks)
    assert Run.objects.count() == 1 and response["Location"].startswith("/runs/")


def test_the_index_lists_runs_and_stopped_comparisons_without_real_names(
    client, reviewer, judge, fake_judge, inbox, make_system, no_celery, django_capture_on_commit_callbacks
):
    make_system("support-bot-v2")
    write_version(inbox, "leaky", ["support-bot-v2 wrote this"])
    client.force_login(reviewer)
    start(client, judge, keys("leaky", "gamma-prose"), django_capture_on_commit_callbacks)
    start(client, judge, keys("alpha-terse", "gamma-prose"), django_capture_on_commit_callbacks)
    html = client.get(reverse("blind:index")).content.decode()
    assert "stopped on leakage" in html and "1 leakage flag" in html and Run.objects.get().run_id in html
    assert "alpha-terse" not in html and "gamma-prose" not in html


def zipped(files):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def test_uploaded_versions_zip_with_runs_and_plain_files(client, reviewer, judge, fake_judge, inbox, no_celery,
                                                        django_capture_on_commit_callbacks):
    client.force_login(reviewer)
    data = form_data(
        judge, [],
        upload_name_0="upload-stepwise",
        upload_files_0=[SimpleUploadedFile("v.zip", zipped({"v/run-1/runbook.md": STRONG, "v/run-2/runbook.md": STRONG}))],
        upload_name_1="upload-plain",
        upload_files_1=[SimpleUploadedFile("runbook.md", MIDDLING.encode()), SimpleUploadedFile("notes.md", b"Extra notes.")],
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("blind:new"), data)
    assert response.status_code == 302, response.context["form"].errors
    comparison = Run.objects.get().blind_comparison
    by_name = {v.real_name: v for v in comparison.versions.all()}
    assert by_name["upload-stepwise"].runs.count() == 2 and by_name["upload-plain"].runs.count() == 1
    assert [f["path"] for f in by_name["upload-plain"].runs.get().files] == ["notes.md", "runbook.md"]


@pytest.mark.parametrize(
    "upload, message",
    [
        ({"upload_name_0": "", "upload_files_0": [SimpleUploadedFile("a.md", b"x")]}, "needs a name"),
        ({"upload_name_0": "named", "upload_files_0": []}, "no files uploaded"),
        (
            {"upload_name_0": "evil", "upload_files_0": [SimpleUploadedFile("e.zip", zipped({"../evil.md": "x"}))]},
            "points outside",
        ),
        ({"upload_name_0": "broken", "upload_files_0": [SimpleUploadedFile("e.zip", b"not a zip")]}, "not a valid zip"),
    ],
)
def test_bad_uploads_are_form_errors(client, reviewer, judge, inbox, upload, message):
    client.force_login(reviewer)
    response = client.post(reverse("blind:new"), {**form_data(judge, keys("alpha-terse")), **upload})
    assert response.status_code == 400 and message in response.content.decode()
    assert not BlindComparison.objects.exists()


def test_another_upload_row_with_and_without_htmx(client, reviewer, judge):
    client.force_login(reviewer)
    url = reverse("blind:upload_row") + "?uploads=3"
    partial = client.get(url, headers={"HX-Request": "true"})
    html = partial.content.decode()
    assert 'name="upload_name_2"' in html and 'name="upload_files_2"' in html and "<html" not in html
    assert 'id="upload-rows-count" value="3" hx-swap-oob="true"' in html and "uploads=4" in html
    plain = client.get(url)
    assert plain.status_code == 302 and plain["Location"] == reverse("blind:new") + "?uploads=3"
    page = client.get(plain["Location"]).content.decode()
    assert 'name="upload_name_2"' in page and 'href="/blind/new/?uploads=4"' in page


def test_a_large_comparison_names_its_calls_and_starts_only_once_that_figure_is_confirmed(
    client, reviewer, judge, inbox, settings, no_celery
):
    import re

    settings.LARGE_RUN_CALLS = 4
    client.force_login(reviewer)
    data = form_data(judge, keys("alpha-terse", "team/beta-stepwise"))
    # One call derives the rubric, then one scores each of the 3 + 2 runs.
    refused = client.post(reverse("blind:new"), data)
    page = refused.content.decode()
    assert refused.status_code == 400 and not Run.objects.exists()
    assert re.search(r'name="large_run_confirm" value="6"[^>]*> Start this run of about 6 judge calls</label>', page)
    started = client.post(reverse("blind:new"), {**data, "large_run_confirm": "6"})
    assert started.status_code == 302 and Run.objects.count() == 1


def test_a_budget_for_an_unpriced_judge_is_a_form_error_and_stores_nothing(client, reviewer, judge, inbox):
    client.force_login(reviewer)
    response = client.post(reverse("blind:new"), {**form_data(judge, keys("alpha-terse", "gamma-prose")), "budget": "0.50"})
    assert response.status_code == 400
    assert "a budget needs prices for every judge, and judge judge-a has none" in response.content.decode()
    assert not BlindComparison.objects.exists() and not Run.objects.exists()
