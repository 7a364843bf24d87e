"""The agreement task: sent when labels arrive (web or import) once they commit, idempotent, never stale;
and a real worker process computing it."""

import pytest
from django.urls import reverse

from calibration.models import AgreementResult, Sample
from calibration.services import agreement
from calibration.services.labels import labels_import
from calibration.services.samples import sample_draw
from calibration.tasks import compute_agreement
from judgeapp.models import AuditLog
from tests.calibration.conftest import labels_csv, scores_for, two_annotators
from tests.helpers import wait_for


@pytest.mark.django_db
def test_labels_from_the_queue_send_the_task_only_when_they_commit(
    client, planted_run, annotator, sent, django_capture_on_commit_callbacks
):
    run = planted_run(scores_for(5))
    sample = sample_draw(run=run, size=5, seed=0, annotators=[annotator])
    client.force_login(annotator)
    first = client.get(reverse("calibration:queue")).context["assignment"]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        client.post(reverse("calibration:queue_label", args=[first.uuid]), {"answer": "2"})
    assert sent == [] and len(callbacks) == 1  # nothing sent before the label is committed
    callbacks[0]()
    assert sent == [sample.pk]
    sample.refresh_from_db()
    assert sample.labels_version == 1 and sample.agreement_version == 0


@pytest.mark.django_db
def test_an_import_sends_one_task_per_sample(planted_run, sent, django_capture_on_commit_callbacks):
    run = planted_run(scores_for(5))
    rows = [(run.run_id, f"c{i:03d}", "helpfulness", who, s) for i, s in enumerate(scores_for(5)) for who in ("ann", "bob")]
    with django_capture_on_commit_callbacks(execute=True):
        summary = labels_import(data=labels_csv(rows), name="l.csv")
    assert sent == [summary.samples[0].pk]


@pytest.mark.django_db
def test_the_task_is_idempotent_and_a_repeat_changes_nothing(planted_run, django_capture_on_commit_callbacks):
    run = planted_run(scores_for(25))
    rows = [(run.run_id, f"c{i:03d}", "helpfulness", "ann", 6 - s) for i, s in enumerate(scores_for(25))]
    sample = labels_import(data=labels_csv(two_annotators(rows)), name="l.csv").samples[0]
    assert agreement.agreement_compute(sample_pk=sample.pk) is True
    before = list(AgreementResult.objects.values_list("pk", "updated_at", "kappa"))
    assert agreement.agreement_compute(sample_pk=sample.pk) is False
    compute_agreement.apply(args=[sample.pk])
    assert list(AgreementResult.objects.values_list("pk", "updated_at", "kappa")) == before
    assert AuditLog.objects.filter(action="calibration.locked").count() == 1


@pytest.mark.django_db
def test_figures_computed_on_labels_that_changed_meanwhile_are_thrown_away(planted_run, monkeypatch):
    run = planted_run(scores_for(25))
    rows = [(run.run_id, f"c{i:03d}", "helpfulness", "ann", s) for i, s in enumerate(scores_for(25))]
    sample = labels_import(data=labels_csv(rows), name="l.csv").samples[0]
    real = agreement.handling_rules.measured

    def label_arrives_while_computing(*args, **kwargs):
        Sample.objects.filter(pk=sample.pk).update(labels_version=sample.labels_version + 1)
        return real(*args, **kwargs)

    monkeypatch.setattr(agreement.handling_rules, "measured", label_arrives_while_computing)
    assert agreement.agreement_compute(sample_pk=sample.pk) is False
    assert not AgreementResult.objects.exists()
    sample.refresh_from_db()
    assert sample.agreement_stale  # the newer label's own task computes it


@pytest.mark.slow
def test_a_real_worker_computes_the_agreement_when_labels_arrive(transactional_db, planted_run, worker_factory):
    run = planted_run(scores_for(25))
    worker_factory(concurrency=1)
    rows = [(run.run_id, f"c{i:03d}", "helpfulness", "ann", 6 - s) for i, s in enumerate(scores_for(25))]
    sample = labels_import(data=labels_csv(two_annotators(rows)), name="l.csv").samples[0]
    wait_for(lambda: not Sample.objects.get(pk=sample.pk).agreement_stale, timeout=90, message="the worker's agreement")
    result = AgreementResult.objects.get(sample=sample, criterion="")
    assert result.kappa == pytest.approx(-1.0) and result.n_items == 25
    assert AuditLog.objects.filter(action="calibration.locked").count() == 1
