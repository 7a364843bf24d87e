"""PandaLM's real labels: imported as a finished pairwise run; the figures match an independent computation
(direct formulas on the raw files, not the libraries the app uses) and the published inter-annotator kappa."""

import itertools
import json
from collections import Counter

import numpy as np
import pytest

from calibration.selectors.agreement import agreement_for_run
from calibration.selectors.run_judges import judge_configurations_for_run
from calibration.services.agreement import agreement_compute
from calibration.services.pandalm import DEFAULT_DIR, RUN_ID, pandalm_import
from judgeapp.judging import selectors as judgeapp_selectors
from judgeapp.judging.errors import InputError

pytestmark = pytest.mark.django_db

HUMAN = {0: "tie", 1: "A", 2: "B"}
JUDGE = {"1": "A", "2": "B", "Tie": "tie"}


def raw():
    items = json.loads((DEFAULT_DIR / "testset-v1.json").read_text())
    verdicts = {row["idx"]: row["gpt_result"] for row in json.loads((DEFAULT_DIR / "gpt-3.5-turbo-testset-v1.json").read_text())}
    return items, verdicts


def cohen_kappa(a, b):
    """Cohen's kappa from its definition: (p_o - p_e) / (1 - p_e)."""
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[c] * cb[c] for c in set(ca) | set(cb)) / n**2
    return (p_o - p_e) / (1 - p_e)


def krippendorff_nominal(units):
    """Krippendorff's alpha (nominal) from the coincidence matrix, for units each labelled by m >= 2 coders."""
    coincidence = Counter()
    for values in units:
        m = len(values)
        for i, j in itertools.permutations(range(m), 2):
            coincidence[(values[i], values[j])] += 1 / (m - 1)
    totals = Counter()
    for (c, _), count in coincidence.items():
        totals[c] += count
    n = sum(totals.values())
    observed = sum(count for (c, k), count in coincidence.items() if c != k)
    expected = sum(totals[c] * totals[k] for c in totals for k in totals if c != k) / (n - 1)
    return 1 - observed / expected


@pytest.fixture
def pandalm(eager_tasks):
    run, sample = pandalm_import()
    agreement_compute(sample_pk=sample.pk)
    return run, sample


def test_pandalm_is_a_finished_pairwise_run_judged_by_gpt35_not_the_scripted_judge(pandalm):
    run, sample = pandalm
    assert run.run_id == RUN_ID and run.kind == "pairwise" and run.status == "done"
    assert run.judge.name == "gpt-3.5-turbo" and run.judge.effective_family == "openai" and not run.uses_scripted_judge
    assert judgeapp_selectors.outputs_for_run(run=run).count() == 2 * 999
    verdicts = judgeapp_selectors.verdicts_for_run(run=run)
    assert len(verdicts) == 974 and run.report["unjudged"] == 25  # 25 replies were neither 1, 2 nor Tie
    assert {v.value for v in verdicts} == {"A", "B", "tie"}
    assert run.report["wins_a"] + run.report["wins_b"] + run.report["ties"] == 974
    assert "single-order verdicts" in run.report["warnings"][0]
    assert sample.size == 999 and sample.items.count() == 999
    assert judge_configurations_for_run(run=run)["gpt-3.5-turbo"]["scripted_demo"] is False
    with pytest.raises(InputError):
        pandalm_import()  # once only


def test_pandalm_agreement_matches_an_independent_computation_and_the_published_kappa(pandalm):
    run, sample = pandalm
    items, verdicts = raw()
    result = sample.results.get(criterion="")

    # Inter-annotator: the published figure is about 0.85-0.88 Cohen's kappa.
    labels = {f"annotator{i}": [HUMAN[item[f"annotator{i}"]] for item in items] for i in (1, 2, 3)}
    stored_pairs = {tuple(p["annotators"]): p["kappa"] for p in result.inter_annotator["pairs"]}
    for a, b in itertools.combinations(sorted(labels), 2):
        expected = cohen_kappa(labels[a], labels[b])
        assert 0.85 <= expected <= 0.88
        assert stored_pairs[(f"pandalm-{a}", f"pandalm-{b}")] == pytest.approx(expected, abs=0.001)
    alpha = krippendorff_nominal([[HUMAN[item[f"annotator{i}"]] for i in (1, 2, 3)] for item in items])
    assert result.inter_annotator["alpha"]["value"] == pytest.approx(alpha, abs=0.001)
    assert result.inter_annotator["n_items"] == 999

    # GPT-3.5 against every human label of the items it judged.
    judge, human = [], []
    per_annotator = {}
    for i in (1, 2, 3):
        pairs = [(JUDGE[verdicts[item["idx"]]], HUMAN[item[f"annotator{i}"]]) for item in items if verdicts[item["idx"]] in JUDGE]
        per_annotator[f"pandalm-annotator{i}"] = cohen_kappa(*zip(*pairs))
        judge += [p[0] for p in pairs]
        human += [p[1] for p in pairs]
    assert result.n_items == 974 and result.n_labels == len(judge) == 2922
    assert result.agreement == pytest.approx(np.mean(np.array(judge) == np.array(human)), abs=0.001)
    assert result.kappa == pytest.approx(cohen_kappa(judge, human), abs=0.001)
    assert len(result.per_annotator) == 3 and {person["annotator"] for person in result.per_annotator} == set(per_annotator)
    for person in result.per_annotator:
        assert person["kappa"] == pytest.approx(per_annotator[person["annotator"]], abs=0.001)
    low, high = result.metrics["kappa"]["ci"]
    assert low < result.kappa < high and high - low < 0.15

    # What a report on this judge shows; GPT-3.5 agrees with people far less than they agree with each other.
    report = agreement_for_run(run=run)
    assert report["kappa"] == pytest.approx(result.kappa) and report["status"] == "below level" and report["locked"] is True


def test_the_imported_run_and_its_judgments_open_on_the_web(client, reviewer, pandalm):
    run, sample = pandalm
    client.force_login(reviewer)
    page = client.get(f"/runs/{run.run_id}/")
    assert (
        page.status_code == 200 and "gpt-3.5-turbo" in page.content.decode()
        and "Scripted demo judge" not in page.content.decode()
    )
    judgment = run.judgments.get(key="0/ab")
    detail = client.get(f"/runs/{run.run_id}/judgments/{judgment.uuid}/")
    assert detail.status_code == 200 and judgment.parsed["reasoning"][:40] in detail.content.decode()
    assert client.get(f"/calibration/samples/{sample.uuid}/").status_code == 200


@pytest.mark.parametrize("epsilon", [0.2, 0.1])
def test_pandalm_alternative_annotator_test_equals_the_papers_procedure_on_the_raw_files(pandalm, epsilon):
    """The figure in docs/calibration.md §10: GPT-3.5 fails the test (ω = 0) at ε = 0.2 and at 0.1."""
    from tests.calibration.test_alt_test_core import paper_procedure

    _, sample = pandalm
    items, verdicts = raw()
    labels = {item["idx"]: {f"pandalm-annotator{i}": HUMAN[item[f"annotator{i}"]] for i in (1, 2, 3)} for item in items}
    judged = {item["idx"]: JUDGE[verdicts[item["idx"]]] for item in items if verdicts[item["idx"]] in JUDGE}
    names, results, _, adjusted, omega, rho = paper_procedure(labels, judged, scores=False, epsilon=epsilon)
    test = sample.results.get(criterion="").alt_test_at(epsilon)
    assert test["status"] == "failed" and test["winning_rate"] == omega == 0.0
    assert test["advantage_probability"] == pytest.approx(rho, abs=1e-9) and round(rho, 3) == 0.758
    for row, name, adj in zip(test["annotators"], names, adjusted, strict=True):
        assert row["annotator"] == name and row["n"] == 974
        assert (
            row["rho_f"] == pytest.approx(results[name][0], abs=1e-9)
            and row["rho_h"] == pytest.approx(results[name][1], abs=1e-9)
        )
        assert row["p_value"] == pytest.approx(results[name][2], abs=1e-9) and row["p_adjusted"] == pytest.approx(adj, abs=1e-9)
