"""The human-corrected pass rate of a jury and win rate of a pairwise comparison (PPI++): equal to `ppi_py`
called directly on the same arrays, in the report, on the run page; and the agreement's TPR/TNR and
alternative annotator test as the task stores them."""

import numpy as np
import ppi_py
import pytest
from django.urls import reverse

from calibration.models import AgreementResult, Assignment
from calibration.selectors.corrected import corrected_rate_for_run
from calibration.services.agreement import agreement_compute
from calibration.services.labels import label_record, labels_import
from calibration.services.samples import sample_draw
from fakejudge import DemoBrain
from judgeapp.judging import runs
from tests.calibration.conftest import labels_csv
from tests.factories import GOOD_REPLY
from tests.pairwise.builders import jury_run

pytestmark = pytest.mark.django_db

PANEL = [("juror-llama", "llama-3.1-8b-instruct", "meta"), ("juror-mistral", "mistral-7b-instruct", "mistral"),
         ("juror-gemma", "gemma-2-9b-it", "google")]
N = 40


def oracle(reply: str, message: str = "") -> float:
    return 1.0 if GOOD_REPLY in reply else 0.0


def ppi(y, y_hat, y_hat_unlabelled, w=None):
    args = (np.asarray(y, float), np.asarray(y_hat, float), np.asarray(y_hat_unlabelled, float))
    mean = float(ppi_py.ppi_mean_pointestimate(*args, w=w)[0])
    low, high = ppi_py.ppi_mean_ci(*args, alpha=0.05, w=w)
    return mean, [float(low[0]), float(high[0])]


@pytest.fixture
def finished_jury(make_judge, fake_judge):
    fake_judge.action = DemoBrain(quality=oracle)
    judges = [make_judge(name, model=model, family=family) for name, model, family in PANEL]

    def make(**kwargs):
        run = jury_run(judges=judges, n=N, **kwargs)
        runs.run_execute_inline(run=run)
        run.refresh_from_db()
        assert run.status == "done", run.error
        return run

    return make


def people_on(run, cases, *, label_of):
    """Three annotators on each case: ann and bob as `label_of` says, cat the opposite on every fourth."""
    rows = []
    for i in cases:
        label = label_of(i)
        other = {"pass": "fail", "fail": "pass"}[label]
        rows += [(run.run_id, f"c{i:03d}", "", "ann", label), (run.run_id, f"c{i:03d}", "", "bob", label),
                 (run.run_id, f"c{i:03d}", "", "cat", other if i % 4 == 0 else label)]
    sample = labels_import(data=labels_csv(rows), name="labels.csv").samples[0]
    agreement_compute(sample_pk=sample.pk)  # the corrected figures read the agreement's snapshot of the labels
    return sample


def imported(rows) -> None:
    """People's labels imported and their agreement computed, as the task does once they commit."""
    for sample in labels_import(data=labels_csv(rows), name="pairs.csv").samples:
        agreement_compute(sample_pk=sample.pk)


def test_a_jurys_corrected_pass_rate_equals_ppi_py_and_is_in_the_next_runs_report_and_page(finished_jury, client, reviewer):
    first = finished_jury()
    # The jury passes the good replies (every even case); people also pass odd cases 1, 5, 9 …: the jury is
    # too strict, and the correction raises its pass rate.
    labelled = range(30)

    def human(i):
        return "pass" if i % 2 == 0 or i % 4 == 1 else "fail"

    people_on(first, labelled, label_of=human)
    second = finished_jury()
    corrected = second.report["corrected_pass_rate"]
    jury = {c["case_id"]: c["pooled"] for c in second.report["cases"]}
    y = [
        np.mean([1.0 if human(i) == "pass" else 0.0] * 2 + [1.0 if (human(i) == "pass") != (i % 4 == 0) else 0.0])
        for i in labelled
    ]
    y_hat = [1.0 if jury[f"c{i:03d}"] == "pass" else 0.0 for i in labelled]
    y_hat_unlabelled = [1.0 if jury[f"c{i:03d}"] == "pass" else 0.0 for i in range(N)]  # another run: all judged only
    rate, ci = ppi(y, y_hat, y_hat_unlabelled)
    assert corrected["rate"] == pytest.approx(rate, abs=1e-9)
    assert corrected["ci95"] == [pytest.approx(ci[0], abs=1e-9), pytest.approx(ci[1], abs=1e-9)]
    assert corrected["n_labelled"] == 30 and corrected["n_unlabelled"] == N and not corrected["same_run"]
    assert corrected["rate"] > second.report["pass_rate"]
    assert corrected["convention"] == "pass = 1, fail = 0"
    assert first.report["corrected_pass_rate"] is None  # no labels when it finished
    client.force_login(reviewer)
    page = client.get(reverse("run_detail", args=[second.run_id])).content.decode()
    assert 'id="corrected-rate"' in page and f'data-corrected-rate="{corrected["rate"]}"' in page


def test_a_drawn_sample_is_weighted_back_to_the_runs_mix_of_verdicts(finished_jury, annotator):
    run = finished_jury(output=lambda i: GOOD_REPLY if i % 4 else "No idea, figure it out.")  # 30 pass, 10 fail
    jury = {c["case_id"]: c["pooled"] for c in run.report["cases"]}
    sample = sample_draw(run=run, size=10, seed=3, annotators=[annotator])  # 5 of each: equal allocation
    keys = sorted(sample.items.values_list("case_key", flat=True))
    # The annotator fails two of the jury's passes and passes four of its fails.
    passes, fails = [k for k in keys if jury[k] == "pass"], [k for k in keys if jury[k] == "fail"]
    human = {k: "fail" if k in passes[:2] else "pass" for k in passes} | {k: "pass" if k in fails[:4] else "fail" for k in fails}
    for assignment in Assignment.objects.filter(item__sample=sample).select_related("item").order_by("id"):
        label_record(assignment=assignment, answer=human[assignment.item.case_key])
    agreement_compute(sample_pk=sample.pk)
    corrected = corrected_rate_for_run(run=run)
    strata = {key: jury[key] for key in keys}
    share_run = {v: sum(1 for x in jury.values() if x == v) / N for v in ("pass", "fail")}
    share_sample = {v: sum(1 for x in strata.values() if x == v) / len(keys) for v in ("pass", "fail")}
    w = np.array([share_run[strata[k]] / share_sample[strata[k]] for k in keys])
    y_hat = [1.0 if strata[k] == "pass" else 0.0 for k in keys]
    y_hat_unlabelled = [1.0 if v == "pass" else 0.0 for k, v in sorted(jury.items()) if k not in keys]
    y = [1.0 if human[k] == "pass" else 0.0 for k in keys]
    rate, ci = ppi(y, y_hat, y_hat_unlabelled, w=w)
    assert corrected["weighted"] and corrected["rate"] == pytest.approx(rate, abs=1e-9)
    assert corrected["ci95"] == [pytest.approx(ci[0], abs=1e-9), pytest.approx(ci[1], abs=1e-9)]
    unweighted, _ = ppi(y, y_hat, y_hat_unlabelled)
    assert abs(corrected["rate"] - unweighted) > 0.01  # the weights matter here


def test_a_pairwise_corrected_win_rate_counts_ties_half_and_equals_ppi_py(small_pairwise_run):
    run = small_pairwise_run(n=30)  # the judge preferred A on even cases, B on odd ones
    people = {i: ("tie" if i % 5 == 0 else "B") for i in range(12)}
    rows = [(run.run_id, f"p{i}", "", name, label) for i, label in people.items() for name in ("ann", "bob")]
    imported(rows)
    corrected = corrected_rate_for_run(run=run)
    value = {"A": 0.0, "tie": 0.5, "B": 1.0}
    judge = {i: "A" if i % 2 == 0 else "B" for i in range(30)}
    rate, ci = ppi(
        [value[people[i]] for i in range(12)], [value[judge[i]] for i in range(12)], [value[judge[i]] for i in range(12, 30)],
    )
    assert corrected["rate"] == pytest.approx(rate, abs=1e-9) and corrected["same_run"]
    assert corrected["ci95"] == [pytest.approx(ci[0], abs=1e-9), pytest.approx(ci[1], abs=1e-9)]
    assert corrected["convention"] == "B = 1, tie = 0.5, A = 0"
    assert corrected["n_labelled"] == 12 and corrected["n_unlabelled"] == 18


def test_the_agreement_task_stores_the_jurys_tpr_tnr_and_alt_test_and_the_pages_show_them(finished_jury, client, reviewer):
    run = finished_jury()

    def human(i):
        return "pass" if i % 2 == 0 or i % 4 == 1 else "fail"

    sample = people_on(run, range(N), label_of=human)
    result = AgreementResult.objects.get(sample=sample, judge_name="jury", criterion="")
    jury = {c["case_id"]: c["pooled"] for c in run.report["cases"]}
    labels = [(jury[f"c{i:03d}"], label) for i in range(N) for label in
              (human(i), human(i), {"pass": "fail", "fail": "pass"}[human(i)] if i % 4 == 0 else human(i))]
    tp = sum(j == h == "pass" for j, h in labels)
    positives = sum(h == "pass" for _, h in labels)
    tn = sum(j == h == "fail" for j, h in labels)
    assert result.rates["tpr"]["successes"] == tp and result.rates["tpr"]["total"] == positives
    assert result.rates["tnr"]["successes"] == tn and result.rates["tnr"]["total"] == len(labels) - positives
    test = result.alt_test_at(0.2)
    assert [row["annotator"] for row in test["annotators"]] == ["ann", "bob", "cat"]
    assert all(row["n"] == N for row in test["annotators"]) and test["status"] in ("passed", "failed")
    client.force_login(reviewer)
    tpr = f'data-tpr="{result.rates["tpr"]["value"]}"'
    for url in (reverse("calibration:overview"), reverse("calibration:sample_detail", args=[sample.uuid]),
                reverse("judge_scorecard_version", args=["jury", result.judge_version])):
        page = client.get(url).content.decode()
        assert tpr in page and f"({tp} of {positives} “pass” labels)" in page, url


def test_the_api_report_carries_the_corrected_win_rate_from_the_labels_as_they_are_now(small_pairwise_run, reviewer):
    from judgeapp.api.services import api_token_create
    from tests.api.conftest import ApiClient

    run = small_pairwise_run(n=12)
    api = ApiClient(api_token_create(user=reviewer, name="ci")[1])
    before = api.get(f"/api/v1/runs/{run.run_id}/report").json()
    assert before["corrected_win_rate"] is None
    rows = [(run.run_id, f"p{i}", "", name, "B") for i in range(6) for name in ("ann", "bob")]
    imported(rows)
    after = api.get(f"/api/v1/runs/{run.run_id}/report").json()
    now = corrected_rate_for_run(run=run)
    assert (
        after["corrected_win_rate"]["rate"] == pytest.approx(now["rate"])
        and after["corrected_win_rate"]["ci95"] == pytest.approx(now["ci95"])
    )
    assert after["corrected_win_rate"]["n_labelled"] == 6


def test_a_pairwise_run_page_shows_its_corrected_win_rate_and_a_draw_link_without_labels(judge, fake_judge, client, reviewer):
    from judgeapp.judging import runs as run_services
    from tests.pairwise.builders import good_and_bad, pairwise_run

    fake_judge.action = DemoBrain(quality=oracle)
    a, b = good_and_bad(10, a_better=lambda i: i % 3 == 0)  # B better on 6 of 10
    run = pairwise_run(judge=judge, a=a, b=b, n=10)
    run_services.run_execute_inline(run=run)
    run.refresh_from_db()
    client.force_login(reviewer)
    page = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    assert "Human-corrected</a> win rate of B" in page and "No labelled sample for this judge configuration yet" in page
    rows = [(run.run_id, f"c{i:03d}", "", "ann", "tie" if i < 2 else "B") for i in range(5)]
    imported(rows)
    corrected = corrected_rate_for_run(run=run)
    assert corrected["n_labelled"] == 5 and corrected["n_unlabelled"] == 5
    page = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    assert f'data-corrected-rate="{corrected["rate"]}"' in page and "counted as B = 1, tie = 0.5, A = 0" in page


def test_agreement_prints_a_pass_fail_judges_tpr_and_tnr(finished_jury):
    from tests.calibration.test_cli import run_command

    run = finished_jury()
    sample = people_on(run, range(N), label_of=lambda i: "pass")
    rates = AgreementResult.objects.get(sample=sample, judge_name="jury", criterion="").rates
    code, out, _ = run_command("agreement", "--judge", "jury")
    assert code == 0
    for key, name in (("tpr", "sensitivity (TPR)"), ("tnr", "specificity (TNR)")):
        rate = rates[key]
        assert rate["total"] > 0
        assert (
            f"{name:<26} {rate['value']:.3f} [{rate['ci'][0]:.3f}, {rate['ci'][1]:.3f}] ({rate['successes']} of {rate['total']} "
            "labels" in out
        )
