"""A sample is drawn once per run, size and seed: drawn again — a double click, two reviewers at the same
moment — it is the sample drawn first, with no second set of items or assignments."""

import threading

import pytest
from django.db import connection
from django.urls import reverse

from calibration.models import Assignment, Sample, SampleItem
from calibration.services.samples import sample_draw
from tests.calibration.conftest import scores_for


@pytest.fixture
def bob(make_user):
    return make_user("bob", "annotator")


@pytest.mark.django_db
def test_the_same_run_size_and_seed_drawn_twice_is_one_sample(planted_run, annotator, bob):
    run = planted_run(scores_for(12))
    first = sample_draw(run=run, size=6, seed=7, overlap=2, annotators=[annotator, bob])
    again = sample_draw(run=run, size=6, seed=7, overlap=2, annotators=[annotator, bob])
    assert again.pk == first.pk
    assert Sample.objects.count() == 1 and SampleItem.objects.count() == 6 and Assignment.objects.count() == 12
    # Asked with other annotators, it is still the sample drawn first, as it was drawn.
    assert sample_draw(run=run, size=6, seed=7, overlap=1, annotators=[annotator]).pk == first.pk
    assert Assignment.objects.count() == 12
    # Another seed, or another size, is another sample.
    assert sample_draw(run=run, size=6, seed=8, annotators=[annotator]).pk != first.pk
    assert sample_draw(run=run, size=5, seed=7, annotators=[annotator]).pk != first.pk
    assert Sample.objects.count() == 3


@pytest.mark.django_db
def test_the_size_is_the_size_drawn(planted_run, annotator):
    run = planted_run(scores_for(8))
    everything = sample_draw(run=run, size=100, seed=1, annotators=[annotator])
    assert everything.size == 8
    assert sample_draw(run=run, size=8, seed=1, annotators=[annotator]).pk == everything.pk
    assert sample_draw(run=run, size=50, seed=1, annotators=[annotator]).pk == everything.pk


@pytest.mark.django_db
def test_the_form_sent_twice_shows_the_sample_drawn_first(client, planted_run, reviewer, annotator, bob):
    run = planted_run(scores_for(12))
    client.force_login(reviewer)
    fields = {"run": run.run_id, "size": 5, "seed": 3, "overlap": 1, "annotators": [annotator.pk, bob.pk]}
    first = client.post(reverse("calibration:sample_new"), fields)
    second = client.post(reverse("calibration:sample_new"), fields, follow=True)
    assert second.redirect_chain[-1][0] == first["Location"]
    assert "was drawn on" in second.content.decode() and Sample.objects.count() == 1
    assert Assignment.objects.count() == 5


@pytest.mark.django_db(transaction=True)
def test_two_draws_at_the_same_moment_make_one_sample(planted_run, annotator, bob):
    run = planted_run(scores_for(12))
    for seed in range(3):
        barrier, drawn, errors = threading.Barrier(2), [], []

        def draw(seed=seed, barrier=barrier, drawn=drawn, errors=errors):
            try:
                barrier.wait(10)
                drawn.append(sample_draw(run=run, size=6, seed=seed, overlap=2, annotators=[annotator, bob]).pk)
            except Exception as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=draw) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == [] and len(drawn) == 2 and drawn[0] == drawn[1]
        sample = Sample.objects.get(run=run, seed=seed)
        assert sample.items.count() == 6 and Assignment.objects.filter(item__sample=sample).count() == 12
