"""A jury run as the jury handler describes it (verdicts per juror and the pooled one under "jury", pass or
fail): samples, agreement per juror and for the pool, and the lock of each. The handler here is a stand-in
for the verdicts() interface, not the jury algorithm."""

import pytest
from django.urls import reverse

from calibration.models import AgreementResult
from calibration.selectors.agreement import agreement_for_run
from calibration.services.agreement import agreement_compute
from calibration.services.labels import labels_import
from calibration.services.samples import sample_draw
from judgeapp.judging import runkind as runkinds_base
from judgeapp.judging.content import rubric_store
from judgeapp.judging.content import testset_store as store_testset
from judgeapp.judging.runkind import RunHandler, Verdict
from judgeapp.judging.runs import run_create
from judgeapp.models import Output, RunKind, RunStatus
from tests import factories
from tests.calibration.conftest import RUBRIC_ONE, labels_csv, two_annotators
from tests.helpers import lock_reasons_for_run

pytestmark = pytest.mark.django_db

N = 24


def truth(i):
    return "pass" if i % 3 else "fail"


class StandInJury(RunHandler):
    kind = RunKind.JURY
    label_kind = "pass_fail"

    def verdicts(self, run):
        out = []
        for i in range(N):
            case = f"c{i:03d}"
            votes = {"juror-a": truth(i), "juror-b": truth(i), "juror-c": "pass"}  # juror-c always passes
            out += [Verdict(case, "", name, vote) for name, vote in votes.items()]
            out.append(Verdict(case, "", "jury", truth(i)))
        return out


@pytest.fixture
def jury_run(monkeypatch, make_judge):
    # The real handler registered first, so that the stand-in is undone to it: set while the jury's module
    # was not yet imported, the stand-in was undone to nothing, and a later test found no jury handler.
    runkinds_base.handler_for(RunKind.JURY)
    monkeypatch.setitem(runkinds_base._REGISTRY, RunKind.JURY, StandInJury())
    jurors = [
        make_judge(name, family=family) for name, family in (("juror-a", "qwen"), ("juror-b", "mistral"), ("juror-c", "google"))
    ]
    testset = store_testset(data=factories.testset_bytes(N), name="jury.jsonl")
    run = run_create(
        kind=RunKind.JURY, run_id="jury-run", judges=jurors, testset=testset, rubric=rubric_store(data=RUBRIC_ONE, name="r.toml"),
    )
    Output.objects.bulk_create(
        Output(run=run, case=c, slot="", text=c.output, source=Output.Source.TESTSET) for c in testset.cases.all()
    )
    run.status = RunStatus.DONE
    run.save()
    return run


def test_a_jury_sample_is_stratified_by_the_pooled_verdict(jury_run, annotator):
    sample = sample_draw(run=jury_run, size=8, seed=1, annotators=[annotator])
    assert sample.label_kind == "pass_fail" and sample.stratified_by == "jury"
    assert sorted(sample.items.values_list("stratum", flat=True)) == ["fail"] * 4 + ["pass"] * 4


def test_agreement_per_juror_and_for_the_pool_and_only_the_dissenting_juror_is_locked(jury_run):
    rows = [(jury_run.run_id, f"c{i:03d}", "", "ann", truth(i)) for i in range(N)]
    sample = labels_import(data=labels_csv(two_annotators(rows)), name="jury.csv").samples[0]
    agreement_compute(sample_pk=sample.pk)
    results = {r.judge_name: r for r in AgreementResult.objects.filter(sample=sample)}
    assert set(results) == {"juror-a", "juror-b", "juror-c", "jury"}
    assert results["jury"].kappa == pytest.approx(1.0) and results["juror-a"].agreement == 1.0
    assert results["juror-c"].agreement == pytest.approx(16 / 24) and results["juror-c"].kappa == pytest.approx(0.0)
    assert set(results["jury"].metrics) == {"percent", "kappa"}
    reasons = lock_reasons_for_run(run=jury_run)
    assert len(reasons) == 1 and reasons[0].startswith("judge locked: juror-c")
    assert agreement_for_run(run=jury_run)["judge"] == "jury"


def test_the_pooled_jury_has_a_scorecard_the_run_page_links_to(jury_run, client, reviewer):
    rows = [(jury_run.run_id, f"c{i:03d}", "", "ann", truth(i)) for i in range(N)]
    sample = labels_import(data=labels_csv(two_annotators(rows)), name="jury.csv").samples[0]
    agreement_compute(sample_pk=sample.pk)
    version = AgreementResult.objects.get(sample=sample, judge_name="jury").judge_version
    client.force_login(reviewer)
    page = client.get(reverse("judge_scorecard_version", args=["jury", version]))
    assert page.status_code == 200 and "jury" in page.content.decode()
    assert client.get(reverse("judge_scorecard_version", args=["jury", "0" * 12])).status_code == 404
