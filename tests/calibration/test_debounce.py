"""Issue 30, item 2: labels arriving for a sample are counted by one agreement computation, sent a few seconds
after the first of them. The compare-and-set on Sample.agreement_queued_at decides which label sends it; the
task empties the mark before it reads the labels; a mark left by a lost task goes stale or is freed by the
catch-up."""

from datetime import timedelta

import pytest
from django.utils import timezone

from calibration.models import AgreementResult, Assignment, Sample
from calibration.services import agreement
from calibration.services.labels import label_record, label_skip
from calibration.services.samples import sample_draw
from calibration.tasks import compute_agreement, refresh_agreements
from judgeapp.judging import taskqueue
from tests.calibration.conftest import scores_for

pytestmark = pytest.mark.django_db

N = 8


@pytest.fixture
def sent(monkeypatch):
    """The agreement tasks sent, as (sample id, countdown)."""
    calls = []

    def send(name, *args, **options):
        if name == taskqueue.COMPUTE_AGREEMENT:
            calls.append((args[0], options.get("countdown")))

    monkeypatch.setattr(taskqueue, "send", send)
    return calls


@pytest.fixture
def drawn(planted_run, annotator, make_user):
    """A drawn sample of N items, each assigned to two annotators, and its assignments in queue order."""
    run = planted_run(scores_for(N))
    other = make_user("bea", "annotator")
    sample = sample_draw(run=run, size=N, seed=0, annotators=[annotator, other], overlap=2)
    assignments = list(Assignment.objects.filter(item__sample=sample).select_related("item", "item__sample").order_by("id"))
    assert len(assignments) == 2 * N
    return sample, assignments


def label(assignment, answer="3"):
    return label_record(assignment=assignment, answer=answer)


def test_a_whole_queue_of_labels_sends_one_task_with_the_debounce_countdown(
    drawn, sent, settings, django_capture_on_commit_callbacks
):
    settings.CALIBRATION_AGREEMENT_DEBOUNCE_SECONDS = 2.5
    sample, assignments = drawn
    with django_capture_on_commit_callbacks(execute=True):
        for assignment in assignments:
            label(assignment)
    assert sent == [(sample.pk, 2.5)]  # 16 labels, one computation
    sample.refresh_from_db()
    assert sample.labels_version == 2 * N and sample.agreement_queued_at is not None


def test_only_the_label_that_finds_the_mark_empty_sends(drawn):
    sample, _ = drawn
    assert agreement.agreement_enqueue(sample_id=sample.pk) is True
    assert agreement.agreement_enqueue(sample_id=sample.pk) is False
    Sample.objects.filter(pk=sample.pk).update(agreement_queued_at=None)
    assert agreement.agreement_enqueue(sample_id=sample.pk) is True


def test_the_task_empties_the_mark_and_the_next_label_sends_the_next_task(drawn, sent, django_capture_on_commit_callbacks):
    sample, assignments = drawn
    with django_capture_on_commit_callbacks(execute=True):
        for assignment in assignments[:5]:
            label(assignment)
    compute_agreement.apply(args=[sample.pk])
    sample.refresh_from_db()
    assert sample.agreement_queued_at is None and sample.agreement_version == 5
    with django_capture_on_commit_callbacks(execute=True):
        for assignment in assignments[5:]:
            label(assignment)
    assert [pk for pk, _ in sent] == [sample.pk, sample.pk]  # 16 labels, two computations


def test_a_label_during_the_computation_sends_the_next_one_which_counts_it(
    drawn, sent, monkeypatch, django_capture_on_commit_callbacks
):
    sample, assignments = drawn
    with django_capture_on_commit_callbacks(execute=True):
        for assignment in assignments[:-1]:
            label(assignment)
    assert len(sent) == 1
    real = agreement.handling_rules.measured
    arrived = []

    def a_label_arrives_while_computing(*args, **kwargs):
        if not arrived:
            arrived.append(label(assignments[-1]))
        return real(*args, **kwargs)

    monkeypatch.setattr(agreement.handling_rules, "measured", a_label_arrives_while_computing)
    with django_capture_on_commit_callbacks(execute=True):
        assert agreement.agreement_run(sample_pk=sample.pk) is False  # its figures are of older labels: thrown away
    assert len(sent) == 2  # the mark was empty when the label came: it sent the next computation
    monkeypatch.setattr(agreement.handling_rules, "measured", real)
    assert agreement.agreement_run(sample_pk=sample.pk) is True
    sample.refresh_from_db()
    assert sample.agreement_version == sample.labels_version == 2 * N
    assert len(sample.agreement_labels) == 2 * N


def test_a_stale_mark_counts_as_empty_and_a_fresh_one_does_not(drawn, sent, settings, django_capture_on_commit_callbacks):
    settings.CALIBRATION_AGREEMENT_QUEUED_STALE_SECONDS = 600
    sample, assignments = drawn
    Sample.objects.filter(pk=sample.pk).update(agreement_queued_at=timezone.now() - timedelta(seconds=60))
    with django_capture_on_commit_callbacks(execute=True):
        label(assignments[0])
    assert sent == []  # a task sent a minute ago is still due
    Sample.objects.filter(pk=sample.pk).update(agreement_queued_at=timezone.now() - timedelta(seconds=601))
    with django_capture_on_commit_callbacks(execute=True):
        label(assignments[1])
    assert [pk for pk, _ in sent] == [sample.pk]  # one left by a killed worker: the next label sends again


def test_a_broker_that_cannot_be_reached_leaves_the_mark_empty(drawn, monkeypatch, django_capture_on_commit_callbacks):
    sample, assignments = drawn

    def down(name, *args, **options):
        raise taskqueue.BrokerDown("the broker cannot be reached (refused)")

    monkeypatch.setattr(taskqueue, "send", down)
    with django_capture_on_commit_callbacks(execute=True):
        label(assignments[0])
    sample.refresh_from_db()
    assert sample.agreement_queued_at is None and sample.agreement_stale  # the next label tries again


def test_a_skip_of_an_unlabelled_item_sends_nothing(drawn, sent, django_capture_on_commit_callbacks):
    sample, assignments = drawn
    with django_capture_on_commit_callbacks(execute=True):
        label_skip(assignment=assignments[0])
    assert sent == []


def test_the_catch_up_computes_a_lost_task_and_frees_its_mark(drawn, sent, django_capture_on_commit_callbacks):
    """A worker killed while it held the task: the labels are pending and the sample still marked. The
    catch-up (a worker's start-up, `manage.py agreement`) computes it and frees the mark, so the next label
    sends at once rather than after the mark goes stale."""
    sample, assignments = drawn
    with django_capture_on_commit_callbacks(execute=True):
        for assignment in assignments[:-1]:
            label(assignment)
    assert len(sent) == 1  # ... and lost with the worker
    refresh_agreements.apply()
    sample.refresh_from_db()
    assert not sample.agreement_stale and sample.agreement_queued_at is None
    assert AgreementResult.objects.filter(sample=sample).exists()
    with django_capture_on_commit_callbacks(execute=True):
        label(assignments[-1])
    assert len(sent) == 2


def test_the_catch_up_frees_a_mark_left_on_a_sample_with_nothing_to_compute(drawn, sent, django_capture_on_commit_callbacks):
    """The computation that counted the last label started before it (so that label marked the sample), and
    the task the label sent was lost: nothing is pending, but the mark would hold back the next label."""
    sample, assignments = drawn
    with django_capture_on_commit_callbacks(execute=True):
        label(assignments[0])
    agreement.agreement_compute(sample_pk=sample.pk)  # computed, the mark left as a lost task leaves it
    sample.refresh_from_db()
    assert not sample.agreement_stale and sample.agreement_queued_at is not None
    agreement.agreements_refresh()
    sample.refresh_from_db()
    assert sample.agreement_queued_at is None
    with django_capture_on_commit_callbacks(execute=True):
        label(assignments[1])
    assert len(sent) == 2
