"""The judges file is loaded by commands, `up`, workers and the "Reload the judges file" button; a GET page
only reads, and says when the file differs from what was last loaded."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judgeapp.judging import runs
from judgeapp.judging.audit import cli_actor
from judgeapp.judging.judges import judges_file_status, judges_sync
from judgeapp.judging.tasks import load_judges_file
from judgeapp.models import AuditLog, Judge, System
from judgeapp.ranker.services import candidates_in_dir, rank_run_create
from tests.factories import pointwise_run

pytestmark = pytest.mark.django_db

FILE = '[judges.small-a]\nmodel = "qwen2.5-7b-instruct"\n\n[systems.bot-v2]\nmodel = "gpt-4o-mini"\nfamily = "openai"\n'
WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


@pytest.fixture
def judges_file(tmp_path, settings):
    path = tmp_path / "judges.toml"
    path.write_text(FILE)
    settings.JUDGES_FILE = str(path)
    return path


@pytest.fixture
def form_pages(judge, tmp_path):
    """Every page with a form, by URL (and whether it lists judges or systems)."""
    run = pointwise_run(judge=judge, n=2, run_id="pw-1")
    runs.run_execute_inline(run=run)
    (tmp_path / "c").mkdir()
    for name in ("a.md", "b.md"):
        (tmp_path / "c" / name).write_text(f"candidate {name}\n")
    rank = rank_run_create(
        candidates=candidates_in_dir(tmp_path / "c"), goal="quality", judge=judge, set_name="c", executor="inline"
    )
    runs.run_execute_inline(run=rank)
    ranklist = rank.ranklists.get()
    return {
        reverse("pointwise:new"): True,
        reverse("pairwise:new"): True,
        reverse("jury:new"): True,
        reverse("agent:home"): True,
        reverse("blind:new"): True,
        reverse("judges"): True,
        reverse("ranker:index"): False,
        reverse("ranker:rank_new"): True,
        reverse("ranker:compare_new"): True,
        reverse("ranker:insert", args=[ranklist.uuid]): False,
        reverse("releases:gate", args=["pw-1"]): False,
        reverse("calibration:overview"): False,
        reverse("calibration:sample_new"): False,
    }


def writes_of(client, url) -> tuple[list[str], object]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    return [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith(WRITES)], response


def test_a_get_of_every_form_page_writes_nothing_even_when_the_judges_file_changed(client, lead, judges_file, form_pages):
    client.force_login(lead)
    judges_before = list(Judge.objects.values_list("name", "updated_at"))
    for url, lists_judges in form_pages.items():
        writes, response = writes_of(client, url)
        assert response.status_code == 200, url
        assert writes == [], (url, writes)
        page = response.content.decode()
        # The file names a judge and a system nobody loaded: the page says so and offers the reload.
        assert ("Reload the judges file" in page and "has not been loaded yet" in page) is lists_judges, url
    assert list(Judge.objects.values_list("name", "updated_at")) == judges_before
    assert not System.objects.exists() and not AuditLog.objects.exists()


def test_an_annotators_queue_page_writes_nothing(client, annotator):
    client.force_login(annotator)
    writes, response = writes_of(client, reverse("calibration:queue"))
    assert response.status_code == 200 and writes == []


def test_a_reviewer_reloads_the_file_and_the_notice_goes_away(client, reviewer, judges_file):
    client.force_login(reviewer)
    response = client.post(reverse("judges_reload"), {"next": reverse("pointwise:new")})
    assert response.status_code == 302 and response["Location"] == reverse("pointwise:new")
    assert Judge.objects.get(name="small-a").model == "qwen2.5-7b-instruct" and System.objects.filter(name="bot-v2").exists()
    entry = AuditLog.objects.get(action=AuditLog.Action.JUDGES_LOADED)
    assert entry.actor == reviewer and entry.actor_label == "rita" and entry.subject == str(judges_file)
    assert entry.detail["judges"] == ["small-a"] and entry.detail["systems"] == ["bot-v2"]
    page = client.get(reverse("pointwise:new")).content.decode()
    assert "Judges file loaded: small-a, bot-v2." in page and "Reload the judges file" not in page
    # The judges page keeps the button, and lists the load.
    page = client.get(reverse("judges")).content.decode()
    assert 'id="reload-judges"' in page and "judges.loaded" in page and "rita" in page

    judges_file.write_text(FILE.replace("qwen2.5-7b-instruct", "qwen2.5-14b-instruct"))
    page = client.get(reverse("jury:new")).content.decode()
    assert "changed since it was last loaded" in page and "by rita" in page and "Reload the judges file" in page
    assert Judge.objects.get(name="small-a").model == "qwen2.5-7b-instruct"  # the page did not load it


def test_a_bad_file_is_shown_on_the_page_and_a_reload_keeps_the_last_good_judges(client, lead, judges_file):
    judges_sync()
    judges_file.write_text('[judges.small-a]\nmodel = "m"\napi_key = "sk-123"\n')
    client.force_login(lead)
    page = client.get(reverse("pairwise:new")).content.decode()
    assert "As it is now it does not load" in page and "api_key_env" in page
    response = client.post(reverse("judges_reload"), {"next": "https://elsewhere.example/"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("judges")  # never off the site
    assert "Judges file not loaded" in response.content.decode()
    assert Judge.objects.get(name="small-a").model == "qwen2.5-7b-instruct"
    assert AuditLog.objects.filter(action=AuditLog.Action.JUDGES_LOADED).count() == 1


def test_reloading_is_for_reviewers_and_leads_and_only_by_post(client, annotator, reviewer, judges_file):
    client.force_login(annotator)
    assert client.post(reverse("judges_reload")).status_code == 403
    client.force_login(reviewer)
    assert client.get(reverse("judges_reload")).status_code == 405
    assert not Judge.objects.filter(name="small-a").exists()


def test_a_load_is_audited_only_when_what_it_loads_changed(judges_file, settings):
    judges_sync(actor=cli_actor())
    judges_sync(actor=cli_actor())
    assert AuditLog.objects.filter(action=AuditLog.Action.JUDGES_LOADED).count() == 1
    assert AuditLog.objects.get().actor is None and AuditLog.objects.get().actor_label.startswith("cli:")
    assert judges_file_status().changed is False
    settings.JUDGE_MODEL = "gpt-4o"  # the default judge from the environment is part of what is loaded
    assert judges_file_status().changed is True
    judges_sync()
    assert AuditLog.objects.filter(action=AuditLog.Action.JUDGES_LOADED).count() == 2
    assert AuditLog.objects.order_by("-id").first().actor_label == "system"


def test_a_worker_starting_loads_the_file(judges_file):
    load_judges_file()
    assert Judge.objects.filter(name="small-a").exists()
    assert AuditLog.objects.get(action=AuditLog.Action.JUDGES_LOADED).actor_label == "system"


def test_a_worker_starting_with_a_bad_file_logs_it_and_keeps_the_rows(judges_file, caplog):
    judges_sync()
    judges_file.write_text("[judges.x\n")
    load_judges_file()
    assert "judges file not loaded" in caplog.text and Judge.objects.filter(name="small-a").exists()


def test_no_file_and_no_default_judge_is_nothing_to_load_and_nothing_to_say(settings, tmp_path):
    settings.JUDGES_FILE = str(tmp_path / "none.toml")
    assert judges_file_status().changed is False
    assert judges_sync() == [] and not AuditLog.objects.exists()
