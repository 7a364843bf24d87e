"""The annotators' progress table on a sample's page: done, skipped, remaining and time per item, on a known
fixture (actions at set times), with the items held back on leakage counted apart."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from calibration.core.adjudication import duration_words, seconds_per_item
from calibration.models import Assignment, AssignmentState
from calibration.selectors.samples import progress_for_sample
from calibration.services.samples import sample_draw
from tests.calibration.conftest import scores_for

pytestmark = pytest.mark.django_db

T0 = timezone.now().replace(microsecond=0) - timedelta(days=1)


def test_time_per_item_is_the_median_gap_without_breaks():
    at = [T0, T0 + timedelta(seconds=30), T0 + timedelta(seconds=90), T0 + timedelta(seconds=1000)]
    assert seconds_per_item(at) == 45  # gaps 30 and 60; the 910 s one is a break
    assert seconds_per_item(list(reversed(at))) == 45  # the order of the actions, not of the list
    assert seconds_per_item([T0]) is None
    assert seconds_per_item([T0, T0 + timedelta(minutes=11)]) is None  # only a break: not measurable
    assert [
        duration_words(s) for s in (None, 0.3, 45, 59.6, 125, 120)
    ] == ["—", "under 1 s", "45 s", "1 min", "2 min 5 s", "2 min"]


@pytest.fixture
def bob(make_user):
    return make_user("bob", "annotator")


@pytest.fixture
def known_sample(planted_run, annotator, bob, lead):
    """Six items, each in both queues. ann: labelled at 0 s, 30 s, skipped at 90 s, labelled at 1000 s (after a
    break), two left. bob: one label (imported labels and a single answer give no time). One more item of the
    sample is held back on leakage, its pending assignments in no queue."""
    run = planted_run(scores_for(10))
    sample = sample_draw(run=run, size=7, seed=3, overlap=2, annotators=[annotator, bob], created_by=lead)
    items = list(sample.items.order_by("position"))
    held = items[-1]
    held.leakage_flags = [{"kind": "system_name", "location": "reply", "detail": "names the system", "snippet": "x"}]
    held.save(update_fields=["leakage_flags"])

    def act(user, item, state, seconds):
        Assignment.objects.filter(item=item, annotator=user).update(
            state=state, value="3" if state == AssignmentState.LABELLED else "", acted_at=T0 + timedelta(seconds=seconds)
        )

    act(annotator, items[0], AssignmentState.LABELLED, 0)
    act(annotator, items[1], AssignmentState.LABELLED, 30)
    act(annotator, items[2], AssignmentState.SKIPPED, 90)
    act(annotator, items[3], AssignmentState.LABELLED, 1000)
    act(bob, items[0], AssignmentState.LABELLED, 5)
    return sample


def test_each_annotator_done_skipped_remaining_and_time(known_sample):
    rows = {row.annotator: row for row in progress_for_sample(sample=known_sample)}
    ann, bob = rows["ann"], rows["bob"]
    assert (ann.assigned, ann.done, ann.skipped, ann.remaining) == (6, 3, 1, 2)  # the held-back item is not counted
    assert ann.seconds_per_item == 45 and ann.time_per_item == "45 s"
    assert (bob.assigned, bob.done, bob.skipped, bob.remaining) == (6, 1, 0, 5)
    assert bob.seconds_per_item is None and bob.time_per_item == "—"
    assert ann.done_words == "3 of 6 done"


def test_the_sample_page_shows_the_table_in_one_wording(client, known_sample, reviewer):
    client.force_login(reviewer)
    html = client.get(reverse("calibration:sample_detail", args=[known_sample.uuid])).content.decode()
    table = html[html.index('id="progress"'):html.index("</table>", html.index('id="progress"'))]
    assert (
        '<tr data-annotator="ann"><td>ann</td><td class="nowrap">3 of 6 done</td><td>1</td><td>2</td><td>45 s</td></tr>' in table
    )
    assert '<tr data-annotator="bob"><td>bob</td><td class="nowrap">1 of 6 done</td><td>0</td><td>5</td><td>—</td></tr>' in table
    assert "The 1 item held back on leakage is in no queue and not counted here." in html
    assert "/" not in table.replace("</", "")  # never "3/6" beside "3 of 6"
