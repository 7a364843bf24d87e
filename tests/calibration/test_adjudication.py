"""A lead resolves the items annotators disagree on: the margin rule, the resolved label kept beside the
annotators' own, the judge set against it wherever the people's one label of an item is used, the labels
version and the agreement task, roles, the audit log, and the page (htmx, bad input, hostile notes)."""

import pytest
from django.urls import reverse

from calibration.core import handling as handling_rules
from calibration.core.adjudication import disagrees
from calibration.models import Adjudication, AgreementResult, Assignment, CalibrationPolicy, Sample
from calibration.selectors.adjudication import adjudication_items_for_sample, open_adjudications_for_sample
from calibration.selectors.corrected import corrected_for_run, human_majority_for_run
from calibration.services.adjudication import adjudication_record, sample_margin_set
from calibration.services.agreement import agreement_compute
from calibration.services.labels import label_record
from calibration.services.samples import sample_draw
from judgeapp.judging.errors import InputError
from judgeapp.models import AuditLog
from tests.calibration.conftest import scores_for
from tests.calibration.test_web import assert_blind

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def test_the_margin_rule():
    assert disagrees(["2", "4"], label_kind="score")  # default margin 1: 4 − 2 = 2 > 1
    assert not disagrees(["3", "4"], label_kind="score")
    assert not disagrees(["2", "4"], label_kind="score", margin=2)
    assert disagrees(["1", "3", "3"], label_kind="score", margin=1)
    assert disagrees(["2", "3"], label_kind="score", margin=0)
    assert disagrees(["pass", "fail"], label_kind="pass_fail", margin=5)  # categories: any disagreement
    assert disagrees(["A", "A", "tie"], label_kind="pairwise")
    assert not disagrees(["B", "B"], label_kind="pairwise")
    assert not disagrees(["5"], label_kind="score")  # one label: nothing to disagree with


def test_a_resolved_label_is_the_majority_items_label_and_never_a_pooled_one():
    humans = {"x": {"ann": 1, "bob": 5}, "y": {"ann": 3, "bob": 3}}
    judged = {"x": 4, "y": 3}
    majority = handling_rules.Handling(annotators=handling_rules.MAJORITY)
    pairs, counts = handling_rules.handled_pairs(humans, judged, handling=majority, label_kind="score")
    assert [p.item for p in pairs] == ["y"] and counts["left_out"]["no_majority"] == 1
    pairs, counts = handling_rules.handled_pairs(humans, judged, handling=majority, label_kind="score", resolved={"x": 4})
    assert [(p.item, p.human) for p in pairs] == [("x", 4), ("y", 3)] and counts["left_out"]["no_majority"] == 0
    pooled, _ = handling_rules.handled_pairs(
        humans, judged, handling=handling_rules.Handling(), label_kind="score", resolved={"x": 4},
    )
    assert sorted((p.item, p.human) for p in pooled) == [("x", 1), ("x", 5), ("y", 3), ("y", 3)]


@pytest.fixture
def bob(make_user):
    return make_user("bob", "annotator")


@pytest.fixture
def labelled(planted_run, annotator, bob, lead, sent):
    """Six items labelled by ann and bob: both give the judge's score, but on the first item ann says 1 and
    bob 5 (apart by 4), and on the second ann gives one more than the judge (apart by 1: within the margin)."""
    run = planted_run(scores_for(10))
    sample = sample_draw(run=run, size=6, seed=2, overlap=2, annotators=[annotator, bob], created_by=lead)
    items = list(sample.items.order_by("position"))
    for index, item in enumerate(items):
        judge = int(item.stratum)
        ann_label, bob_label = judge, judge
        if index == 0:
            ann_label, bob_label = 1, 5
        elif index == 1:
            ann_label = judge + 1 if judge < 5 else judge - 1
        for user, value in ((annotator, ann_label), (bob, bob_label)):
            label_record(assignment=Assignment.objects.get(item=item, annotator=user), answer=str(value))
    sample.refresh_from_db()
    return sample


def test_only_items_apart_by_more_than_the_margin_are_to_resolve(labelled, lead):
    first = labelled.items.get(position=0)
    assert open_adjudications_for_sample(sample=labelled) == 1
    assert [row["item"] for row in adjudication_items_for_sample(sample=labelled)] == [first]
    sample_margin_set(sample=labelled, margin=0, actor=lead)
    assert open_adjudications_for_sample(sample=labelled) == 2
    sample_margin_set(sample=labelled, margin=4, actor=lead)
    assert open_adjudications_for_sample(sample=labelled) == 0
    with pytest.raises(InputError, match="nothing to resolve"):
        adjudication_record(item=first, answer="3", actor=lead)
    assert not Adjudication.objects.exists()
    entries = AuditLog.objects.filter(action=AuditLog.Action.MARGIN_SET).order_by("created_at")
    assert [(e.actor_label, e.detail["margin"], e.detail["previous"]) for e in entries] == [("leo", 0, 1), ("leo", 4, 0)]
    with pytest.raises(InputError, match="from 0 to 10"):
        sample_margin_set(sample=labelled, margin=11, actor=lead)


def test_the_resolved_label_is_kept_beside_the_labels_bumps_the_version_and_is_audited(
    labelled, lead, sent, django_capture_on_commit_callbacks
):
    item = labelled.items.get(position=0)
    before = labelled.labels_version
    sent.clear()
    # The labels' computation has started (the task empties the mark): a resolve sends the next one.
    Sample.objects.filter(pk=labelled.pk).update(agreement_queued_at=None)
    with django_capture_on_commit_callbacks(execute=True):
        adjudication_record(item=item, answer="4", note="the reply answers the question; the refund time is right", actor=lead)
    assert sorted(
        Assignment.objects.filter(item=item).values_list("annotator__username", "value")
    ) == [("ann", "1"), ("bob", "5")]
    resolved = Adjudication.objects.get(item=item)
    assert (resolved.value, resolved.decided_by) == ("4", lead)
    assert Sample.objects.get(pk=labelled.pk).labels_version == before + 1
    assert sent == [labelled.pk]  # the agreement is enqueued as a label's change enqueues it
    entry = AuditLog.objects.get(action=AuditLog.Action.ITEM_RESOLVED)
    assert entry.actor_label == "leo" and entry.run == labelled.run
    assert entry.detail == {
        "sample": str(labelled.uuid), "item": 0, "value": "4", "previous": None, "labels": {"ann": "1", "bob": "5"},
    }
    assert open_adjudications_for_sample(sample=labelled) == 0

    # The same label with another note changes no figure: audited, no new version, nothing enqueued.
    with django_capture_on_commit_callbacks(execute=True):
        adjudication_record(item=item, answer="4", note="second look", actor=lead)
    assert Sample.objects.get(pk=labelled.pk).labels_version == before + 1 and sent == [labelled.pk]
    # Another label does (once the computation it was queued for has started).
    Sample.objects.filter(pk=labelled.pk).update(agreement_queued_at=None)
    with django_capture_on_commit_callbacks(execute=True):
        adjudication_record(item=item, answer="3", actor=lead)
    assert Sample.objects.get(pk=labelled.pk).labels_version == before + 2 and sent == [labelled.pk, labelled.pk]
    assert AuditLog.objects.filter(action=AuditLog.Action.ITEM_RESOLVED).count() == 3
    assert Adjudication.objects.get(item=item).value == "3"


def test_bad_answers_and_notes_are_refused_and_nothing_is_written(labelled, lead):
    item = labelled.items.get(position=0)
    for answer, note, message in (("9", "", "not an integer score from 1 to 5"), ("pass", "", "not an integer"),
                                  ("4", "x" * 2001, "at most 2000")):
        with pytest.raises(InputError, match=message):
            adjudication_record(item=item, answer=answer, note=note, actor=lead)
    assert not Adjudication.objects.exists() and not AuditLog.objects.filter(action=AuditLog.Action.ITEM_RESOLVED).exists()


def test_the_judges_agreement_uses_the_resolved_label_and_annotators_agreement_keeps_theirs(labelled, lead, make_user):
    CalibrationPolicy.objects.create(annotators=handling_rules.MAJORITY, set_by=lead)
    agreement_compute(sample_pk=labelled.pk)
    before = AgreementResult.objects.get(sample=labelled, criterion="")
    # Two labels that differ have no majority: the first item (1 beside 5) and the second (within the margin).
    assert before.n_items == 4 and before.handling["left_out"]["no_majority"] == 2

    item = labelled.items.get(position=0)
    other = "1" if item.stratum != "1" else "2"
    adjudication_record(item=item, answer=other, actor=lead)  # resolved against the judge's score
    agreement_compute(sample_pk=labelled.pk)
    after = AgreementResult.objects.get(sample=labelled, criterion="")
    assert after.labels_version == Sample.objects.get(pk=labelled.pk).labels_version
    assert after.n_items == 5 and after.handling["left_out"]["no_majority"] == 1
    assert (before.agreement, after.agreement) == (1.0, 0.8)  # the resolved item is the one the judge misses
    assert after.per_annotator == [{"annotator": "majority", "n": 5, "kappa": after.kappa, "agreement": 0.8}]
    assert after.inter_annotator == before.inter_annotator  # the people's own agreement: their labels only

    # Pooled (every label a pair with the judge): the individual labels, resolved or not.
    CalibrationPolicy.objects.create(annotators=handling_rules.POOLED, set_by=lead)
    agreement_compute(sample_pk=labelled.pk, force=True)
    pooled = AgreementResult.objects.get(sample=labelled, criterion="")
    assert pooled.n_labels == 12


def test_only_a_lead_opens_or_posts_to_the_adjudication_page(client, labelled, reviewer, annotator):
    page = reverse("calibration:adjudication", args=[labelled.uuid])
    post = reverse("calibration:adjudication_resolve", args=[labelled.uuid, 0])
    margin = reverse("calibration:adjudication_margin", args=[labelled.uuid])
    for user in (reviewer, annotator):
        client.force_login(user)
        assert client.get(page).status_code == 403
        assert client.post(post, {"answer": "3"}, headers=HTMX).status_code == 403
        assert client.post(margin, {"margin": "0"}).status_code == 403
    assert not Adjudication.objects.exists() and Sample.objects.get(pk=labelled.pk).adjudication_margin == 1


def test_a_lead_resolves_an_item_on_the_page_with_htmx(client, labelled, lead):
    client.force_login(lead)
    detail = client.get(reverse("calibration:sample_detail", args=[labelled.uuid])).content.decode()
    url = reverse("calibration:adjudication", args=[labelled.uuid])
    assert f'<a href="{url}">1 item to resolve</a>' in detail

    html = client.get(url).content.decode()
    assert_blind(html, labelled.run)  # the item as the annotators saw it: no system, version or judge
    assert "1 item to resolve" in html and 'id="item-0"' in html and 'id="item-1"' not in html
    assert "<td>ann</td><td>1</td>" in html and "<td>bob</td><td>5</td>" in html

    post = reverse("calibration:adjudication_resolve", args=[labelled.uuid, 0])
    refused = client.post(post, {"answer": "7", "note": ""}, headers=HTMX)
    assert refused.status_code == 400 and "<html" not in refused.content.decode()
    assert "label &#x27;7&#x27; is not an integer score from 1 to 5" in refused.content.decode()
    assert not Adjudication.objects.exists()

    hostile = '<script>alert("x")</script>'
    answer = client.post(post, {"answer": "4", "note": hostile}, headers=HTMX)
    body = answer.content.decode()
    assert answer.status_code == 200 and "<html" not in body
    assert "resolved: 4" in body and "0 items to resolve" in body and 'hx-swap-oob="true"' in body
    assert hostile not in body and "&lt;script&gt;" in body
    assert Adjudication.objects.get().note == hostile  # stored as written, shown escaped

    # Without JavaScript: a redirect back to the item, the same service.
    plain = client.post(post, {"answer": "3"})
    assert plain.status_code == 302 and plain.url.endswith("#item-0")
    assert Adjudication.objects.get().value == "3"
    detail = client.get(reverse("calibration:sample_detail", args=[labelled.uuid])).content.decode()
    assert f'<a href="{url}">0 items to resolve</a>' in detail


def test_a_pairwise_item_is_resolved_in_the_leads_own_reply_order(client, small_pairwise_run, lead, annotator, bob):
    run = small_pairwise_run(n=4)
    sample = sample_draw(run=run, size=4, seed=1, overlap=2, annotators=[annotator, bob], created_by=lead)
    item = sample.items.order_by("position").first()
    for user, label in ((annotator, "A"), (bob, "B")):
        assignment = Assignment.objects.get(item=item, annotator=user)
        shown = {"A": "2", "B": "1"}[label] if assignment.swapped else {"A": "1", "B": "2"}[label]
        label_record(assignment=assignment, answer=shown)
    client.force_login(lead)
    html = client.get(reverse("calibration:adjudication", args=[sample.uuid])).content.decode()
    assert "<td>ann</td><td>Reply 1</td>" in html and "<td>bob</td><td>Reply 2</td>" in html
    assert "Version-one reply" in html.split("Reply 1</h3>")[1].split("</pre>")[0]  # reply 1 is A's for the lead
    client.post(reverse("calibration:adjudication_resolve", args=[sample.uuid, item.position]), {"answer": "2"}, headers=HTMX)
    assert Adjudication.objects.get(item=item).value == "B"
    assert human_majority_for_run(run=run)[item.case_key] == "B"  # the people's one label on the run's page


def test_the_human_corrected_mean_takes_the_resolved_label_as_the_items_score(labelled, lead):
    from calibration.services.agreement import agreement_compute

    agreement_compute(sample_pk=labelled.pk)  # the corrected mean reads the agreement's snapshot of the labels
    before = corrected_for_run(run=labelled.run)
    adjudication_record(item=labelled.items.get(position=0), answer="1", actor=lead)  # ann 1, bob 5: their mean was 3
    agreement_compute(sample_pk=labelled.pk)
    after = corrected_for_run(run=labelled.run)
    assert after["n_labelled"] == before["n_labelled"] == 6
    assert after["human_mean_labelled"] == pytest.approx(before["human_mean_labelled"] - 2 / 6)
