"""The alternative annotator test and a pass/fail judge's TPR/TNR, checked against independent
recomputations: the paper's procedure written out here with scipy's paired t-test and statsmodels'
Benjamini–Yekutieli; hand counts with statsmodels' Wilson intervals."""

import numpy as np
import pytest
from scipy.stats import ttest_rel
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from calibration.core.agreement import LabelPair
from calibration.core.alt_test import alt_test_counts, alt_test_decide
from calibration.core.handling import DISAGREEMENT, KEPT, POOLED, Handling, handled_pairs
from calibration.core.labels import PAIRWISE, PASS_FAIL, SCORE
from calibration.core.rates import pass_fail_rates

ANNOTATORS = ["ann", "bob", "cat", "dan"]


def align(value, rest, scores):
    """The paper's alignment: minus the RMSE for scores, accuracy for categories."""
    return -np.sqrt(np.mean((float(value) - rest) ** 2)) if scores else np.mean(rest == value)


def paper_procedure(labels, judged, *, scores, epsilon, min_items=30):
    """The procedure as the paper states it, independently of calibration/core/alt_test.py."""
    results = {}
    for excluded in sorted({a for by in labels.values() for a in by}):
        w_f, w_h = [], []
        for item, by in labels.items():
            if excluded not in by or len(by) < 2 or item not in judged:
                continue
            rest = np.array([v for a, v in by.items() if a != excluded], dtype=float if scores else object)
            f = -np.inf if judged[item] is None else align(judged[item], rest, scores)
            h = align(by[excluded], rest, scores)
            w_f.append(1.0 if f >= h else 0.0)
            w_h.append(1.0 if h >= f else 0.0)
        if len(w_f) >= min_items:
            # H0: rho_f <= rho_h - epsilon, i.e. mean(W_h - W_f - epsilon) >= 0, tested one-sided ("less").
            p = ttest_rel(np.array(w_h) - epsilon, np.array(w_f), alternative="less").pvalue
            results[excluded] = (np.mean(w_f), np.mean(w_h), p)
    names = sorted(results)
    rejected, adjusted, _, _ = multipletests([results[n][2] for n in names], alpha=0.05, method="fdr_by")
    omega = float(np.mean(rejected))
    rho = float(np.mean([results[n][0] for n in names]))
    return names, results, rejected, adjusted, omega, rho


def planted_categorical(rng, *, n, judge_accuracy, human_accuracy, kinds=("A", "tie", "B")):
    truth = rng.choice(kinds, size=n)

    def noisy(accuracy):
        return [t if rng.random() < accuracy else rng.choice([k for k in kinds if k != t]) for t in truth]

    labels = {i: {} for i in range(n)}
    for name in ANNOTATORS:
        for i, value in enumerate(noisy(human_accuracy)):
            labels[i][name] = value
    judge = dict(enumerate(noisy(judge_accuracy)))
    return labels, judge


def assert_same(result, expected):
    names, results, rejected, adjusted, omega, rho = expected
    assert [row["annotator"] for row in result["annotators"]] == names
    for row, name, rej, adj in zip(result["annotators"], names, rejected, adjusted, strict=True):
        rho_f, rho_h, p = results[name]
        assert row["rho_f"] == pytest.approx(rho_f, abs=1e-9)
        assert row["rho_h"] == pytest.approx(rho_h, abs=1e-9)
        assert row["p_value"] == pytest.approx(p, abs=1e-9)
        assert row["p_adjusted"] == pytest.approx(adj, abs=1e-9)
        assert row["rejected"] is bool(rej)
    assert result["winning_rate"] == pytest.approx(omega, abs=1e-9)
    assert result["advantage_probability"] == pytest.approx(rho, abs=1e-9)
    assert result["passed"] is (omega >= 0.5)


@pytest.mark.parametrize("epsilon", [0.2, 0.1, 0.05])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alt_test_equals_the_papers_procedure_on_planted_pairwise_labels(seed, epsilon):
    rng = np.random.default_rng(seed)
    labels, judge = planted_categorical(rng, n=80, judge_accuracy=0.75, human_accuracy=0.7)
    result = alt_test_decide(alt_test_counts(labels, judge, label_kind=PAIRWISE), epsilon=epsilon)
    assert_same(result, paper_procedure(labels, judge, scores=False, epsilon=epsilon))


@pytest.mark.parametrize("seed", [0, 3])
def test_alt_test_on_scores_uses_the_negative_rmse_and_equals_the_papers_procedure(seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=60)
    labels = {i: {a: int(np.clip(t + rng.integers(-1, 2), 1, 5)) for a in ANNOTATORS[:3]} for i, t in enumerate(truth)}
    judge = {i: int(np.clip(t + rng.integers(-1, 2), 1, 5)) for i, t in enumerate(truth)}
    judge[5] = None  # an unusable reply loses its item
    result = alt_test_decide(alt_test_counts(labels, judge, label_kind=SCORE), epsilon=0.2)
    assert_same(result, paper_procedure(labels, judge, scores=True, epsilon=0.2))


def test_a_judge_that_agrees_with_the_majority_plainly_passes():
    rng = np.random.default_rng(7)
    labels, _ = planted_categorical(rng, n=60, judge_accuracy=1.0, human_accuracy=0.7, kinds=("pass", "fail"))
    majority = {i: max(set(by.values()), key=list(by.values()).count) for i, by in labels.items()}
    result = alt_test_decide(alt_test_counts(labels, majority, label_kind=PASS_FAIL), epsilon=0.2)
    assert result["status"] == "passed" and result["winning_rate"] == 1.0
    assert all(row["rejected"] and row["rho_f"] > row["rho_h"] for row in result["annotators"])


def test_a_judge_that_guesses_plainly_fails():
    rng = np.random.default_rng(8)
    labels, _ = planted_categorical(rng, n=60, judge_accuracy=1.0, human_accuracy=0.9, kinds=("pass", "fail"))
    guesses = {i: rng.choice(["pass", "fail"]) for i in labels}
    result = alt_test_decide(alt_test_counts(labels, guesses, label_kind=PASS_FAIL), epsilon=0.1)
    assert result["status"] == "failed" and result["winning_rate"] == 0.0 and result["passed"] is False
    assert "beats 0 of 4 annotators" in result["reason"]


def test_a_judge_that_never_answers_loses_every_item():
    labels = {i: {a: "pass" for a in ANNOTATORS[:3]} for i in range(40)}
    counts = alt_test_counts(labels, dict.fromkeys(labels), label_kind=PASS_FAIL)
    assert all(c.human_closer == 40 and c.judge_closer == c.as_close == 0 for c in counts)
    assert alt_test_decide(counts)["passed"] is False


def test_below_the_papers_minimums_there_is_no_verdict():
    rng = np.random.default_rng(1)
    labels, judge = planted_categorical(rng, n=29, judge_accuracy=1.0, human_accuracy=0.9)
    few_items = alt_test_decide(alt_test_counts(labels, judge, label_kind=PAIRWISE))
    assert few_items["status"] == "not enough items" and few_items["passed"] is None
    assert [s["n"] for s in few_items["skipped"]] == [29] * 4
    two = {
        i: {a: v for a, v in by.items() if a in ("ann", "bob")} for i,
        by in planted_categorical(rng, n=50, judge_accuracy=1, human_accuracy=1)[0].items()
    }
    few_people = alt_test_decide(alt_test_counts(two, judge | {i: "A" for i in range(29, 50)}, label_kind=PAIRWISE))
    assert few_people["status"] == "not enough annotators" and few_people["winning_rate"] is None
    single = {i: {"ann": "A"} for i in range(50)}  # nobody to compare with: no item counts
    assert alt_test_counts(single, dict.fromkeys(single, "A"), label_kind=PAIRWISE) == []


def test_tpr_and_tnr_equal_hand_counts_with_wilson_intervals():
    judge = ["pass"] * 14 + ["fail"] * 3 + ["pass"] * 5 + ["fail"] * 8
    human = ["pass"] * 17 + ["fail"] * 13
    pairs = [LabelPair(i, "ann", j, h) for i, (j, h) in enumerate(zip(judge, human, strict=True))]
    # One unusable reply on a "fail" item is compared as "pass": a false positive (the non-answers counted as
    # disagreements, as the figures count them: calibration/core/handling.py).
    unusable, _ = handled_pairs(
        {99: {"ann": "fail", "bob": "pass"}}, {99: None}, handling=Handling(POOLED, KEPT, DISAGREEMENT), label_kind=PASS_FAIL
    )
    pairs += unusable
    rates = pass_fail_rates(pairs)
    assert rates["counts"] == {"tp": 14, "fn": 3 + 1, "tn": 8, "fp": 5 + 1}
    assert rates["tpr"]["value"] == pytest.approx(14 / 18) and rates["tnr"]["value"] == pytest.approx(8 / 14)
    for key, (k, n) in {"tpr": (14, 18), "tnr": (8, 14)}.items():
        low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
        assert rates[key]["ci"] == [pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12)]
    assert pass_fail_rates([LabelPair(1, "a", "pass", "pass")])["tnr"] == {"value": None, "ci": None, "successes": 0, "total": 0}
