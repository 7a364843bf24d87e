"""The annotator's blind queue and the reviewers' and leads' calibration pages, through the test client."""

import re
from html import escape

import pytest
from django.test import Client
from django.urls import reverse

from calibration.models import Assignment, AssignmentState, JudgeLock
from calibration.services.samples import sample_draw
from fakejudge import SCRIPTED_NOTE
from judgeapp.models import AuditLog
from tests.calibration.conftest import RUBRIC_TWO, SYSTEM_MODEL, SYSTEM_NAME, scores_for

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


@pytest.fixture
def bob(make_user):
    return make_user("bob", "annotator")


@pytest.fixture
def scored_sample(planted_run, annotator, bob, lead):
    run = planted_run(scores_for(10), rubric=RUBRIC_TWO)
    return sample_draw(run=run, size=6, seed=1, overlap=2, annotators=[annotator, bob], created_by=lead)


def current(response) -> str:
    match = re.search(r'id="queue-item"[^>]* data-assignment="([^"]*)"', response.content.decode())
    return match.group(1) if match else None


def forbidden_names(run) -> list[str]:
    """Everything that would tell an annotator which system, version, judge or configuration produced it."""
    names = [SYSTEM_NAME, SYSTEM_MODEL, run.run_id, run.title]
    for snapshot in run.config["judges"].values():
        names += [snapshot["name"], snapshot["model"], snapshot["version"], snapshot["base_url"]]
        names.append(snapshot["family"])
    names += [v for v in run.versions.values() if v]
    for judgment in run.judgments.all():
        names += [judgment.prompt.content_hash if judgment.prompt else "", (judgment.parsed or {}).get("reasoning", "")]
    names += [SCRIPTED_NOTE, run.testset.content_hash, run.rubric.content_hash if run.rubric else ""]
    return [n for n in names if n]


def assert_blind(html: str, run):
    leaked = [name for name in forbidden_names(run) if name.lower() in html.lower() or escape(name).lower() in html.lower()]
    assert not leaked, f"the annotator's page names {leaked}"
    assert "stratum" not in html and "swapped" not in html


def test_annotator_scores_every_item_blind_and_each_label_is_stored(client, scored_sample, annotator):
    run = scored_sample.run
    client.force_login(annotator)
    page = client.get(reverse("calibration:queue"))
    assert page.status_code == 200
    seen = 0
    while current(page):
        html = page.content.decode()
        assert_blind(html, run)
        assignment = Assignment.objects.get(uuid=current(page))
        assert escape(assignment.item.case.input) in html and escape(assignment.item.case.output) in html
        criterion = run.rubric.criteria.get(name=assignment.item.criterion)
        assert escape(criterion.description) in html and escape(criterion.examples["5"]) in html
        page = client.post(reverse("calibration:queue_label", args=[assignment.uuid]), {"answer": "4"}, headers=HTMX)
        assert page.status_code == 200 and "<html" not in page.content.decode()  # the htmx partial only
        assignment.refresh_from_db()
        assert assignment.state == AssignmentState.LABELLED and assignment.value == "4"
        seen += 1
    assert seen == Assignment.objects.filter(annotator=annotator).count() == 6
    assert "All done" in page.content.decode()


def test_without_javascript_a_label_redirects_to_the_next_item(client, scored_sample, annotator):
    client.force_login(annotator)
    first = current(client.get(reverse("calibration:queue")))
    response = client.post(reverse("calibration:queue_label", args=[first]), {"answer": "2"})
    assert response.status_code == 302 and response["Location"] == reverse("calibration:queue")
    assert current(client.get(reverse("calibration:queue"))) != first


def test_an_answer_off_the_scale_is_refused_and_nothing_is_stored(client, scored_sample, annotator):
    client.force_login(annotator)
    first = current(client.get(reverse("calibration:queue")))
    response = client.post(reverse("calibration:queue_label", args=[first]), {"answer": "9"}, headers=HTMX)
    assert response.status_code == 400 and "not an integer score from 1 to 5" in response.content.decode()
    assert Assignment.objects.get(uuid=first).state == AssignmentState.PENDING


def test_skip_undo_and_resume_where_they_left_off(client, scored_sample, annotator):
    client.force_login(annotator)
    first = current(client.get(reverse("calibration:queue")))
    second = current(client.post(reverse("calibration:queue_label", args=[first]), {"answer": "5"}, headers=HTMX))
    third = current(client.post(reverse("calibration:queue_skip", args=[second]), headers=HTMX))
    assert len({first, second, third}) == 3
    # Undo takes back the skip, then the label.
    assert current(client.post(reverse("calibration:queue_undo"), headers=HTMX)) == second
    assert current(client.post(reverse("calibration:queue_undo"), headers=HTMX)) == first
    assert Assignment.objects.get(uuid=first).state == AssignmentState.PENDING
    client.post(reverse("calibration:queue_label", args=[first]), {"answer": "3"}, headers=HTMX)
    # A new session (next morning) resumes at the first item not yet scored.
    later = Client()
    later.force_login(annotator)
    assert current(later.get(reverse("calibration:queue"))) == second
    assert Assignment.objects.get(uuid=first).value == "3"


def test_skipped_items_come_back_when_the_rest_is_done(client, scored_sample, annotator):
    client.force_login(annotator)
    page = client.get(reverse("calibration:queue"))
    skipped = current(page)
    page = client.post(reverse("calibration:queue_skip", args=[skipped]), headers=HTMX)
    while current(page):
        page = client.post(reverse("calibration:queue_label", args=[current(page)]), {"answer": "1"}, headers=HTMX)
    assert "except the 1 you skipped" in page.content.decode()
    page = client.get(reverse("calibration:queue") + "?skipped=1")
    assert current(page) == skipped and "You skipped this item earlier" in page.content.decode()


def test_pairwise_replies_come_in_each_annotators_own_order_labelled_only_1_and_2(client, small_pairwise_run, annotator, bob):
    run = small_pairwise_run(n=16)
    sample_draw(run=run, size=16, seed=2, overlap=2, annotators=[annotator, bob])
    orders = {}
    for user in (annotator, bob):
        client.force_login(user)
        for assignment in Assignment.objects.filter(annotator=user):
            html = client.get(reverse("calibration:queue_item", args=[assignment.uuid])).content.decode()
            assert "Reply 1" in html and "Reply 2" in html and "pair-judge" not in html and "Secret judge reasoning" not in html
            assert_blind(html, run)
            first_shown = html.index("Version-one") < html.index("Version-two")
            orders[(user.username, assignment.item.case_key)] = first_shown
    differing = sum(orders[("ann", k)] != orders[("bob", k)] for k in {k for _, k in orders})
    assert 0 < differing < 16
    # "Reply 1" is whichever reply this annotator saw first: the label is stored as the version it was.
    client.force_login(annotator)
    assignment = Assignment.objects.filter(annotator=annotator).first()
    client.post(reverse("calibration:queue_label", args=[assignment.uuid]), {"answer": "1"})
    assignment.refresh_from_db()
    assert assignment.value == ("A" if orders[("ann", assignment.item.case_key)] else "B")


def test_an_annotator_cannot_open_a_report_another_annotators_queue_or_a_leads_page(client, scored_sample, annotator, bob):
    client.force_login(annotator)
    theirs = Assignment.objects.filter(annotator=bob).first()
    assert client.get(reverse("calibration:queue_item", args=[theirs.uuid])).status_code == 403
    assert client.post(reverse("calibration:queue_label", args=[theirs.uuid]), {"answer": "3"}).status_code == 403
    assert client.post(reverse("calibration:queue_skip", args=[theirs.uuid])).status_code == 403
    theirs.refresh_from_db()
    assert theirs.state == AssignmentState.PENDING
    for url in (
        reverse("run_detail", args=[scored_sample.run.run_id]),
        reverse("calibration:overview"),
        reverse("calibration:sample_new"),
        reverse("calibration:sample_detail", args=[scored_sample.uuid]),
    ):
        assert client.get(url).status_code == 403, url
    assert client.post(reverse("calibration:level_set"), {"metric": "kappa", "threshold": 0.1, "min_items": 1}).status_code == 403


def test_a_reviewer_cannot_change_the_level_or_unlock(
    client, planted_run, reviewer, eager_tasks, django_capture_on_commit_callbacks
):
    from calibration.services.labels import labels_import
    from tests.calibration.conftest import labels_csv, two_annotators

    run = planted_run(scores_for(25))
    rows = [(run.run_id, f"c{i:03d}", "helpfulness", "ann", 6 - s) for i, s in enumerate(scores_for(25))]
    with django_capture_on_commit_callbacks(execute=True):
        labels_import(data=labels_csv(two_annotators(rows)), name="l.csv")
    lock = JudgeLock.objects.get(locked=True)
    client.force_login(reviewer)
    assert client.get(reverse("calibration:overview")).status_code == 200
    assert client.post(reverse("calibration:level_set"), {"metric": "kappa", "threshold": -1, "min_items": 1}).status_code == 403
    unlock = reverse("calibration:lock_unlock", args=[lock.judge_name, lock.judge_version])
    assert client.post(unlock, {"reason": "trust me"}).status_code == 403
    lock.refresh_from_db()
    assert lock.locked and not AuditLog.objects.filter(action__in=["calibration.level_set", "calibration.unlocked"]).exists()


def test_a_lead_sets_the_level_and_unlocks_with_a_reason_both_audited(
    client, planted_run, lead, eager_tasks, django_capture_on_commit_callbacks
):
    from calibration.services.labels import labels_import
    from tests.calibration.conftest import labels_csv, two_annotators

    run = planted_run(scores_for(25))
    rows = [(run.run_id, f"c{i:03d}", "helpfulness", "ann", 6 - s) for i, s in enumerate(scores_for(25))]
    with django_capture_on_commit_callbacks(execute=True):
        labels_import(data=labels_csv(two_annotators(rows)), name="l.csv")
    client.force_login(lead)
    page = client.get(reverse("calibration:overview")).content.decode()
    assert "locked" in page and "planted-judge" in page and 'id="level-form"' in page
    lock = JudgeLock.objects.get(locked=True)
    assert f'name="rubric_version" value="{lock.rubric_version}"' in page  # the form names the lock's scope
    unlock = reverse("calibration:lock_unlock", args=[lock.judge_name, lock.judge_version])
    scope = {"prompt_version": lock.prompt_version, "rubric_version": lock.rubric_version}
    assert client.post(unlock, {"reason": "", **scope}).status_code == 302
    lock.refresh_from_db()
    assert lock.locked  # no reason, no unlock
    assert client.post(unlock, {"reason": "x", **scope, "rubric_version": "another-rubric"}).status_code == 404
    client.post(unlock, {"reason": "annotator misread the scale", **scope})
    lock.refresh_from_db()
    assert not lock.locked and lock.overridden
    client.post(reverse("calibration:level_set"), {"metric": "agreement", "threshold": 0.5, "min_items": 10, "reason": "pilot"})
    entries = list(AuditLog.objects.filter(actor=lead).values_list("action", flat=True))
    assert sorted(entries) == ["calibration.level_set", "calibration.unlocked"]


def test_a_reviewer_draws_a_sample_from_the_form(client, planted_run, reviewer, annotator, bob):
    run = planted_run(scores_for(12))
    client.force_login(reviewer)
    form = client.get(reverse("calibration:sample_new"))
    assert run.run_id in form.content.decode()
    bad = client.post(
        reverse("calibration:sample_new"),
        {"run": run.run_id, "size": 5, "seed": 3, "overlap": 3, "annotators": [annotator.pk, bob.pk]},
    )
    assert bad.status_code == 400 and "at most the 2 annotator(s)" in bad.content.decode()
    response = client.post(
        reverse("calibration:sample_new"),
        {"run": run.run_id, "size": 5, "seed": 3, "overlap": 2, "annotators": [annotator.pk, bob.pk]},
    )
    assert response.status_code == 302
    assert Assignment.objects.filter(annotator=annotator).count() == Assignment.objects.filter(annotator=bob).count() == 5
    detail = client.get(response["Location"]).content.decode()
    assert "draw number 3" in detail and "ann" in detail and "bob" in detail


def test_posts_need_the_csrf_token(scored_sample, annotator):
    client = Client(enforce_csrf_checks=True)
    client.force_login(annotator)
    page = client.get(reverse("calibration:queue"))
    first = current(page)
    assert client.post(reverse("calibration:queue_label", args=[first]), {"answer": "3"}).status_code == 403
    assert "hx-headers='{\"X-CSRFToken\": \"" in page.content.decode()
    token = page.context["csrf_token"]
    assert client.post(
        reverse("calibration:queue_label", args=[first]), {"answer": "3"}, headers={"X-CSRFToken": str(token), **HTMX},
    ).status_code == 200
