"""Issue 30, item 2: every page and report reads one agreement snapshot. A report once said both "too few
labels — 4 of the 20" (the stored agreement) and "30 items labelled by people" (a corrected mean computed from
the labels as they were at that moment): the corrected figures now read the labels the stored agreement
counted, and say which labels version and time they stand on."""

import pytest
from django.urls import reverse

from calibration.models import Assignment, Sample
from calibration.selectors.agreement import agreement_reads_for_run, one_snapshot
from calibration.selectors.corrected import corrected_for_run
from calibration.services.agreement import agreement_compute
from calibration.services.labels import label_record
from calibration.services.samples import sample_draw
from judgeapp.pointwise.services import report_current
from tests.calibration.conftest import scores_for

pytestmark = pytest.mark.django_db

N = 30
FIRST = 24


@pytest.fixture
def half_computed(planted_run, annotator):
    """A pointwise run's sample: FIRST labels computed, the rest given since and not computed yet (their
    transaction committed, the task not run: a test's on_commit callbacks never run unless captured)."""
    run = planted_run(scores_for(N + 10))  # ten cases people never see: the judge-only part of the corrected mean
    sample = sample_draw(run=run, size=N, seed=0, annotators=[annotator])
    assignments = list(Assignment.objects.filter(item__sample=sample).select_related("item", "item__sample").order_by("id"))
    score = dict(zip([f"c{i:03d}" for i in range(N + 10)], scores_for(N + 10)))
    for assignment in assignments[:FIRST]:
        label_record(assignment=assignment, answer=str(score[assignment.item.case_key]))
    assert agreement_compute(sample_pk=sample.pk)
    computed = report_current(run=run)
    for assignment in assignments[FIRST:]:
        label_record(assignment=assignment, answer=str(6 - score[assignment.item.case_key]))
    return run, sample, computed


def test_a_report_read_between_a_label_and_its_computation_shows_one_snapshot(half_computed):
    run, sample, computed = half_computed
    report = report_current(run=run)
    versions = {report["agreement_snapshot"]["labels_version"], report["agreement"]["snapshot"]["labels_version"],
                report["corrected"]["snapshot"]["labels_version"]}
    assert versions == {FIRST}  # not the N labels given by now
    assert report["agreement"]["n_items"] == report["corrected"]["n_labelled"] == FIRST
    assert report["corrected"]["mean"] == computed["corrected"]["mean"]  # the later labels move nothing yet
    assert report["agreement_snapshot"]["pending"] and report["agreement"]["pending_labels"]
    sample.refresh_from_db()
    assert sample.labels_version == N and sample.agreement_version == FIRST

    assert agreement_compute(sample_pk=sample.pk)
    after = report_current(run=run)
    assert {after["agreement_snapshot"]["labels_version"], after["corrected"]["snapshot"]["labels_version"]} == {N}
    assert after["agreement"]["n_items"] == after["corrected"]["n_labelled"] == N
    assert after["corrected"]["mean"] != computed["corrected"]["mean"] and not after["agreement_snapshot"]["pending"]


def test_the_run_page_says_which_labels_its_agreement_and_corrected_mean_stand_on(half_computed, client, reviewer):
    run, sample, _ = half_computed
    client.force_login(reviewer)
    page = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    assert f'data-agreement-snapshot="{FIRST}"' in page and f'data-corrected-snapshot="{FIRST}"' in page
    assert f"agreement as of labels v{FIRST}, computed " in page and "newer labels are being counted" in page
    assert f"{FIRST} items labelled by people" in page and f"{N} items labelled by people" not in page


def test_a_read_that_a_computation_overtook_is_read_again(half_computed):
    """One computation committing between two reads of one report: the whole report is read again."""
    run, sample, _ = half_computed
    reads = []

    def read():
        reads.append(agreement_reads_for_run(run=run))
        if len(reads) == 1:
            agreement_compute(sample_pk=sample.pk)  # commits while the first read is under way
        return reads[-1]

    answer = one_snapshot(read)
    assert len(reads) == 2 and answer["snapshot"]["labels_version"] == N
    assert answer["corrected"]["snapshot"]["labels_version"] == answer["agreement"]["snapshot"]["labels_version"] == N


def test_a_sample_whose_agreement_was_never_computed_gives_no_corrected_mean(planted_run, annotator):
    run = planted_run(scores_for(N + 10))
    sample = sample_draw(run=run, size=N, seed=0, annotators=[annotator])
    for assignment in Assignment.objects.filter(item__sample=sample).select_related("item", "item__sample"):
        label_record(assignment=assignment, answer="3")
    assert Sample.objects.get(pk=sample.pk).agreement_stale
    assert corrected_for_run(run=run) is None  # until the agreement counts these labels
    agreement_compute(sample_pk=sample.pk)
    assert corrected_for_run(run=run)["n_labelled"] == N
