"""Issue 30, item 2: the gate reflects the last label within 10 s on the embedded broker. Two annotators label
a whole sample through the queue's views while a real worker runs; the labels are counted by a handful of
agreement computations, not one per label, and the lock appears within seconds of the last label."""

import time

import pytest
from django.urls import reverse

from calibration.models import Assignment, Sample
from calibration.services.samples import sample_draw
from judgeapp.judging import taskqueue
from tests.calibration.conftest import planted_run, planted_server, scores_for  # noqa: F401  (the fixtures)
from tests.helpers import lock_reasons_for_run, wait_for

pytestmark = pytest.mark.slow

N = 20  # the default level's minimum: the sample reaches it with the very last label


def test_the_lock_follows_the_last_label_of_a_sample_within_ten_seconds(
    transactional_db, planted_run, worker_factory, annotator, make_user, client, monkeypatch, capsys
):
    run = planted_run(scores_for(N))
    other = make_user("bea", "annotator")
    sample = sample_draw(run=run, size=N, seed=0, annotators=[annotator, other], overlap=2)
    worker = worker_factory(concurrency=2)
    sends = []
    real_send = taskqueue.send

    def counting_send(name, *args, **options):
        if name == taskqueue.COMPUTE_AGREEMENT:
            sends.append(time.monotonic())
        return real_send(name, *args, **options)

    monkeypatch.setattr(taskqueue, "send", counting_send)

    score = dict(zip([f"c{i:03d}" for i in range(N)], scores_for(N)))
    mine = {
        user.pk: list(
            Assignment.objects.filter(item__sample=sample, annotator=user).select_related("item").order_by("item__position")
        )
        for user in (annotator, other)
    }
    # Both people score every item the reverse of the judge (they agree with each other: a reliable sample
    # that must lock the judge). The item both leave to the end is the one that brings the sample to the
    # level's minimum of items, so the lock can come only after the very last label.
    last = mine[annotator.pk][-1]
    order = [(annotator, a) for a in mine[annotator.pk][:-1]] + [(other, a) for a in mine[other.pk][:-1]] + [(annotator, last)]
    for user, assignment in order:
        client.force_login(user)
        answer = str(6 - score[assignment.item.case_key])
        response = client.post(reverse("calibration:queue_label", args=[assignment.uuid]), {"answer": answer})
        assert response.status_code in (200, 302), response.content[:300]
    labelled_at = time.monotonic()
    assert lock_reasons_for_run(run=run) == []  # not yet: too few items until the last label counts

    reasons = wait_for(
        lambda: lock_reasons_for_run(run=run), timeout=60, interval=0.05, message="the lock",
        explain=lambda: f"sample {Sample.objects.filter(pk=sample.pk).values().first()}\n{worker.log()[-3000:]}",
    )
    took = time.monotonic() - labelled_at
    computations = worker.log().count("calibration.tasks.compute_agreement[") // 2  # "received" and "succeeded" lines
    with capsys.disabled():
        print(f"\nlast label -> lock: {took:.2f} s; {len(order)} labels -> {len(sends)} agreement tasks sent, "
              f"{computations} computed by the worker")
    assert reasons[0].startswith("judge locked")
    assert took < 10
    assert 1 <= len(sends) <= len(order) // 4  # a handful, not one per label
