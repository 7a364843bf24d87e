"""The ranker's pages: start a batch rank (uploads or a server directory), watch it, read every
comparison, insert one more, run a direct compare, resume after an outage. Celery is stood in for by
recording what is sent; the task bodies are then run in this process."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from fakejudge import Status
from judgeapp.judging import runs, selectors, taskqueue
from judgeapp.judging.errors import InputError
from judgeapp.judging.runkind import page_read
from judgeapp.models import Artifact, Insertion, InsertionStatus, Ranklist, Run, RunKind, RunStatus
from judgeapp.ranker import tasks as ranker_tasks
from judgeapp.ranker.services import candidates_in_dir, rank_run_create
from tests.helpers import rendered_without_queries
from tests.ranker.conftest import true_top

pytestmark = pytest.mark.django_db

GOAL = "depth of the incident analysis"


@pytest.fixture
def sent(monkeypatch):
    """What would have gone to Celery: (task name, args)."""
    calls = []
    monkeypatch.setattr(taskqueue, "send", lambda name, *args, **options: calls.append((name.rsplit(".", 1)[-1], args)))
    return calls


@pytest.fixture
def logged_in(client, reviewer):
    client.force_login(reviewer)
    return client


def uploads(oracle, tmp_path, n, seed=0):
    truth = oracle.write(tmp_path / "up", n, seed=seed)
    return truth, [SimpleUploadedFile(p.name, p.read_bytes()) for p in sorted((tmp_path / "up").iterdir())]


def rank_form(judge, **extra):
    return {"goal": GOAL, "judge": judge.pk, "set_name": "reports", "max_size": 10, **extra}


def finish_celery_run(run):
    """What the worker would do with the messages recorded in `sent`."""
    runs.run_start(run_pk=run.pk)
    runs.run_sequential_execute(run_pk=run.pk)
    run.refresh_from_db()
    return run


def test_ranker_pages_are_for_reviewers_and_leads(client, annotator, reviewer):
    assert client.get(reverse("ranker:index")).status_code == 302
    client.force_login(annotator)
    assert client.get(reverse("ranker:index")).status_code == 403
    client.force_login(reviewer)
    html = client.get(reverse("ranker:index")).content.decode()
    assert "Batch rank" in html and "Direct compare" in html and 'enctype="multipart/form-data"' in html


def test_batch_rank_from_uploads_runs_on_celery_and_shows_the_ranklist_with_every_rationale(
    logged_in, oracle_judge, oracle, tmp_path, sent, django_capture_on_commit_callbacks
):
    truth, files = uploads(oracle, tmp_path, 12)
    with django_capture_on_commit_callbacks(execute=True):
        response = logged_in.post(reverse("ranker:rank_new"), rank_form(oracle_judge, files=files))
    run = Run.objects.get(kind=RunKind.RANK)
    assert response.status_code == 302 and response["Location"] == reverse("run_detail", args=[run.run_id])
    assert run.executor == "celery" and run.status == RunStatus.QUEUED and sent == [("start_run", (run.pk,))]
    assert Artifact.objects.filter(artifact_set__run=run).count() == 12

    page = logged_in.get(response["Location"]).content.decode()
    assert 'id="progress-' in page and "hx-get" in page  # watches its progress while queued

    run = finish_celery_run(run)
    assert run.status == RunStatus.DONE
    page = logged_in.get(reverse("run_detail", args=[run.run_id])).content.decode()
    ranking = true_top(truth, 10)
    positions = [page.index(f'<tr data-artifact="{artifact_id}">') for artifact_id in ranking]
    assert positions == sorted(positions)
    ranklist = Ranklist.objects.get(run=run)
    assert ranklist.comparisons.exists()
    for comparison in ranklist.comparisons.select_related("judgment"):
        assert comparison.rationale in page
        assert reverse("judgment_detail", args=[run.run_id, comparison.judgment.uuid]) in page
    assert "Insert one more candidate" in page


def test_htmx_form_post_redirects_the_browser_with_a_header(logged_in, oracle_judge, oracle, tmp_path, sent):
    _truth, files = uploads(oracle, tmp_path, 3)
    response = logged_in.post(reverse("ranker:rank_new"), rank_form(oracle_judge, files=files), headers={"HX-Request": "true"})
    run = Run.objects.get(kind=RunKind.RANK)
    assert response.status_code == 200 and response["HX-Redirect"] == reverse("run_detail", args=[run.run_id])


@pytest.mark.parametrize("content, message", [(b"", "empty"), (b"\x00\x01binary", "binary")])
def test_a_bad_upload_is_a_form_error_and_nothing_is_stored(logged_in, oracle_judge, oracle, tmp_path, content, message):
    _truth, files = uploads(oracle, tmp_path, 3)
    files.append(SimpleUploadedFile("bad.md", content))
    full = logged_in.post(reverse("ranker:rank_new"), rank_form(oracle_judge, files=files))
    assert full.status_code == 400 and message in full.content.decode() and b"<html" in full.content
    for f in files:
        f.seek(0)
    partial = logged_in.post(reverse("ranker:rank_new"), rank_form(oracle_judge, files=files), headers={"HX-Request": "true"})
    # htmx swaps only 2xx answers: the form with its errors comes back 200, to replace the form in place.
    assert partial.status_code == 200 and b"<html" not in partial.content and b'id="rank-form"' in partial.content
    assert message in partial.content.decode()
    assert not Run.objects.exists() and not Artifact.objects.exists()


def test_an_over_long_upload_is_refused(logged_in, oracle_judge, settings):
    settings.ARTIFACT_MAX_BYTES = 100
    files = [SimpleUploadedFile("long.md", b"x" * 101)]
    response = logged_in.post(reverse("ranker:rank_new"), rank_form(oracle_judge, files=files))
    assert response.status_code == 400 and "over the limit" in response.content.decode() and not Run.objects.exists()


def test_batch_rank_from_a_server_directory_under_browse_roots(logged_in, oracle_judge, oracle, tmp_path, settings, sent):
    root = tmp_path / "inbox"
    oracle.write(root / "week-12", 4)
    settings.BROWSE_ROOTS = [root.resolve()]
    page = logged_in.get(reverse("ranker:rank_new")).content.decode()
    assert "inbox/week-12" in page
    response = logged_in.post(reverse("ranker:rank_new"), rank_form(oracle_judge, directory=str((root / "week-12").resolve())))
    assert response.status_code == 302
    run = Run.objects.get(kind=RunKind.RANK)
    assert sorted(Artifact.objects.filter(artifact_set__run=run).values_list("relative_path", flat=True)) == [
        f"cand-{i:03d}.md" for i in range(4)
    ]


def test_no_directory_outside_browse_roots_can_be_chosen(logged_in, oracle_judge, oracle, tmp_path, settings):
    root, outside = tmp_path / "inbox", tmp_path / "secret"
    oracle.write(outside, 2)
    root.mkdir()
    (root / "sneaky").symlink_to(outside, target_is_directory=True)
    (outside / "deeper").mkdir()
    settings.BROWSE_ROOTS = [root.resolve()]
    # A symbolic link out of the root is not followed: neither it nor what lies beyond it is offered.
    offered = logged_in.get(reverse("ranker:rank_new")).content.decode()
    assert "sneaky" not in offered and "deeper" not in offered and str(outside) not in offered
    for directory in (str(outside), str(root / "sneaky"), str(root / "sneaky" / "deeper")):
        response = logged_in.post(reverse("ranker:rank_new"), rank_form(oracle_judge, directory=directory))
        assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    # The service's own check still holds for a directory reached through a link.
    with pytest.raises(InputError, match="outside the folders"):
        candidates_in_dir(root / "sneaky", within=[root.resolve()])
    assert not Run.objects.exists()


@pytest.fixture
def ranked(oracle_judge, oracle, tmp_path):
    truth = oracle.write(tmp_path / "c", 6, seed=9)
    run = rank_run_create(
        candidates=candidates_in_dir(tmp_path / "c"), goal=GOAL, judge=oracle_judge, set_name="c", executor="inline",
    )
    runs.run_execute_inline(run=run)
    return Ranklist.objects.get(run=run), truth


def test_insert_from_the_browser_is_queued_and_placed_by_the_worker(
    logged_in, ranked, oracle, sent, django_capture_on_commit_callbacks
):
    ranklist, truth = ranked
    ranking = true_top(truth, 6)
    text = "a candidate between the first and the second"
    oracle.quality[text] = (truth[ranking[0]] + truth[ranking[1]]) / 2
    with django_capture_on_commit_callbacks(execute=True):
        response = logged_in.post(
            reverse("ranker:insert", args=[ranklist.uuid]), {"file": SimpleUploadedFile("new.md", text.encode())},
        )
    assert response.status_code == 302
    insertion = Insertion.objects.get(artifact__artifact_id="new.md")
    assert insertion.status == InsertionStatus.PENDING and sent == [("ranklist_work", (ranklist.pk,))]
    pending_state = logged_in.get(reverse("ranker:state", args=[ranklist.uuid]), headers={"HX-Request": "true"})
    assert pending_state.status_code == 200 and b'hx-trigger="every 2s"' in pending_state.content

    ranker_tasks.ranklist_work(ranklist.pk)  # the worker's task body

    assert json.loads(ranklist.path.read_text()) == [ranking[0], "new.md"] + ranking[1:]
    done_state = logged_in.get(reverse("ranker:state", args=[ranklist.uuid]), headers={"HX-Request": "true"})
    assert done_state.status_code == 286  # stops polling
    assert "inserted at 2" in done_state.content.decode()


def test_a_ranklists_page_renders_from_its_kinds_read_without_a_query(ranked):
    """The run page's ranklist and direct compares come from RankHandler.page_reads, in the context."""
    ranklist, truth = ranked
    run = selectors.run_get(run_id=ranklist.run.run_id)
    context = {"run": run, **page_read(run.kind, "run", run=run)}
    assert context["ranklist_state"].ranklist == ranklist and context["direct_comparisons"] == []
    html = rendered_without_queries("judgeapp/ranker/run_rank.html", context)
    assert 'id="insert-form"' in html and all(name in html for name in true_top(truth, 6))


def test_insert_from_the_browser_of_a_registered_id_is_skipped(logged_in, ranked, sent):
    ranklist, _truth = ranked
    response = logged_in.post(
        reverse("ranker:insert", args=[ranklist.uuid]), {"file": SimpleUploadedFile("cand-001.md", b"other")}, follow=True,
    )
    assert "already registered" in response.content.decode() and sent == []


def test_insert_of_an_empty_file_from_the_browser_is_a_form_error(logged_in, ranked):
    ranklist, _truth = ranked
    response = logged_in.post(
        reverse("ranker:insert", args=[ranklist.uuid]), {"file": SimpleUploadedFile("e.md", b"")}, headers={"HX-Request": "true"},
    )
    assert response.status_code == 200 and b'id="insert-form"' in response.content and b"empty" in response.content
    assert Insertion.objects.count() == 6


def test_direct_compare_from_the_browser_shows_winner_rationale_and_both_texts(
    logged_in, oracle_judge, oracle, sent, django_capture_on_commit_callbacks, settings
):
    oracle.quality["the weaker one"] = 0.1
    oracle.quality["the stronger one"] = 0.9
    form = {"goal": GOAL, "judge": oracle_judge.pk, "both_orders": "on",
            "file_a": SimpleUploadedFile("a.md", b"the weaker one"), "file_b": SimpleUploadedFile("b.md", b"the stronger one")}
    with django_capture_on_commit_callbacks(execute=True):
        response = logged_in.post(reverse("ranker:compare_new"), form)
    run = Run.objects.get(kind=RunKind.COMPARE)
    assert response.status_code == 302 and sent == [("start_run", (run.pk,))]
    run = finish_celery_run(run)
    assert run.status == RunStatus.DONE and run.report["winner"] == "B" and run.report["comparator_calls"] == 2
    html = logged_in.get(reverse("run_detail", args=[run.run_id])).content.decode()
    assert '<strong class="winner">B</strong>' in html and run.report["rationale"] in html
    assert "the weaker one" in html and "the stronger one" in html
    assert (run.run_dir / "comparisons.jsonl").exists()
    run = selectors.run_get(run_id=run.run_id)  # the compare's body: its direct compares read by CompareHandler.page_reads
    body = rendered_without_queries("judgeapp/ranker/run_compare.html", {"run": run, **page_read(run.kind, "run", run=run)})
    assert '<strong class="winner">B</strong>' in body and "the stronger one" in body


def test_a_batch_failed_by_a_judge_outage_resumes_from_the_browser(
    logged_in, oracle_judge, oracle, tmp_path, fake_judge, sent, django_capture_on_commit_callbacks
):
    truth = oracle.write(tmp_path / "c", 6, seed=21)
    brain = fake_judge.action
    fake_judge.action = Status(401, message="bad key")
    run = rank_run_create(
        candidates=candidates_in_dir(tmp_path / "c"), goal=GOAL, judge=oracle_judge, set_name="c", run_id="outage",
        executor="inline",
    )
    run = runs.run_execute_inline(run=run)
    assert run.status == RunStatus.FAILED and "401" in run.error
    ranklist = Ranklist.objects.get(run=run)
    page = logged_in.get(reverse("run_detail", args=["outage"])).content.decode()
    assert "Resume" in page

    fake_judge.action = brain
    with django_capture_on_commit_callbacks(execute=True):
        logged_in.post(reverse("ranker:resume", args=[ranklist.uuid]))
    assert sent == [("execute_sequential_run", (run.pk,))]
    runs.run_sequential_execute(run_pk=run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.report["ranking"] == true_top(truth, 10)


def test_artifact_page_shows_the_content_of_its_own_runs_artifacts_only(logged_in, ranked, oracle_judge):
    ranklist, _truth = ranked
    artifact = Artifact.objects.filter(artifact_set__run=ranklist.run).first()
    page = logged_in.get(reverse("ranker:artifact", args=[ranklist.run.run_id, artifact.pk]))
    assert page.status_code == 200 and artifact.content.strip() in page.content.decode()
    other = Run.objects.create(run_id="other", kind=RunKind.RANK)
    assert logged_in.get(reverse("ranker:artifact", args=[other.run_id, artifact.pk])).status_code == 404


def test_a_demo_judges_ranklist_says_it_is_a_scripted_demo(logged_in, fake_judge, tmp_path, oracle):
    from judgeapp.demo import demo_endpoints

    judges, _systems = demo_endpoints(fake_judge.url)
    oracle.write(tmp_path / "c", 3)
    run = rank_run_create(
        candidates=candidates_in_dir(tmp_path / "c"), goal=GOAL, judge=judges[0], set_name="c", run_id="demo-like",
        executor="inline",
    )
    runs.run_execute_inline(run=run)
    html = logged_in.get(reverse("run_detail", args=["demo-like"])).content.decode()
    assert "Scripted demo judge." in html and "scripted demo, not a model" in html


def test_the_rank_form_starts_a_tournament_with_its_budget(logged_in, oracle_judge, oracle, tmp_path, sent):
    _truth, files = uploads(oracle, tmp_path, 4)
    response = logged_in.post(reverse("ranker:rank_new"), rank_form(oracle_judge, files=files, strategy="tournament", budget=25))
    assert response.status_code == 302
    ranklist = Ranklist.objects.get()
    assert ranklist.strategy == "tournament" and ranklist.strategy_options["budget"] == 25


def test_the_rank_form_refuses_a_budget_for_the_seed(logged_in, oracle_judge, oracle, tmp_path):
    _truth, files = uploads(oracle, tmp_path, 3)
    response = logged_in.post(reverse("ranker:rank_new"), rank_form(oracle_judge, files=files, strategy="seed", budget=25))
    assert response.status_code == 400 and "--budget is a limit of --strategy tournament" in response.content.decode()
    assert not Run.objects.exists()


def test_the_ranklist_page_says_what_is_unplaced_and_how_well_the_order_is_supported_and_retries(
    logged_in, oracle_judge, oracle, tmp_path, fake_judge, sent, django_capture_on_commit_callbacks
):
    from fakejudge import When, prompt_contains

    truth = oracle.write(tmp_path / "c", 5, seed=12)
    broken = sorted(truth)[1]
    brain = fake_judge.action
    fake_judge.action = When(
        prompt_contains((tmp_path / "c" / broken).read_text().strip()), Status(400, message="context length exceeded"), brain,
    )
    run = rank_run_create(
        candidates=candidates_in_dir(tmp_path / "c"), goal=GOAL, judge=oracle_judge, set_name="c", run_id="up", strategy="robust",
        executor="inline",
    )
    run = runs.run_execute_inline(run=run)
    assert run.status == RunStatus.INVALID
    html = logged_in.get(reverse("run_detail", args=["up"])).content.decode()
    assert 'id="unplaced"' in html and broken in html and "context length exceeded" in html
    assert "every adjacent pair supported" in html and html.count('data-support="supported"') == 3
    assert "<strong>robust (gate in both orders" in html and "Retry the 1 unplaced candidate" in html

    fake_judge.action = brain
    ranklist = Ranklist.objects.get(run=run)
    with django_capture_on_commit_callbacks(execute=True):
        logged_in.post(reverse("ranker:resume", args=[ranklist.uuid]))
    assert sent == [("ranklist_work", (ranklist.pk,))]
    ranker_tasks.ranklist_work(ranklist.pk)
    assert json.loads(ranklist.path.read_text()) == true_top(truth, 10)
    assert 'id="unplaced"' not in logged_in.get(reverse("run_detail", args=["up"])).content.decode()


def test_the_rank_form_refuses_a_spend_cap_for_an_unpriced_judge_and_stores_one_for_a_priced_judge(
    logged_in, oracle_judge, oracle, tmp_path, sent
):
    from decimal import Decimal

    _truth, files = uploads(oracle, tmp_path, 3)
    response = logged_in.post(reverse("ranker:rank_new"), rank_form(oracle_judge, files=files, spend_budget="0.50"))
    assert (
        response.status_code == 400
        and "a budget needs prices for every judge, and judge oracle has none" in response.content.decode()
    )

    assert not Run.objects.exists()
    oracle_judge.input_price_per_million, oracle_judge.output_price_per_million = Decimal("0.20"), Decimal("0.60")
    oracle_judge.save()
    _truth, files = uploads(oracle, tmp_path / "again", 3)
    response = logged_in.post(reverse("ranker:rank_new"), rank_form(oracle_judge, files=files, spend_budget="0.50"))
    assert response.status_code == 302 and Run.objects.get().budget == Decimal("0.5")
