"""The agreement statistics, checked against direct formulas (not the libraries they call)."""

import numpy as np
import pytest

from calibration.core.agreement import LabelPair, inter_annotator, judge_human
from calibration.core.labels import pairwise_label_from_shown, parse_label


def direct_weighted_kappa(a, b, categories, weights):
    """Cohen's kappa from its definition: 1 - sum(w*O) / sum(w*E)."""
    k = len(categories)
    index = {c: i for i, c in enumerate(categories)}
    observed = np.zeros((k, k))
    for x, y in zip(a, b):
        observed[index[x], index[y]] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.indices((k, k))
    w = (i - j) ** 2 if weights == "quadratic" else (i != j).astype(float)
    return 1 - (w * observed).sum() / (w * expected).sum()


def average_ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def pairs_of(judge, human, annotator="ann"):
    return [LabelPair(i, annotator, j, h) for i, (j, h) in enumerate(zip(judge, human))]


def test_perfect_agreement_on_scores_is_one_everywhere():
    scores = [1, 2, 3, 4, 5] * 6
    result = judge_human(pairs_of(scores, scores), label_kind="score", n_resamples=100)
    for name in ("exact", "within_one", "quadratic_kappa", "spearman"):
        assert result["metrics"][name]["value"] == pytest.approx(1.0)
    assert result["n_items"] == result["n_labels"] == 30


def test_score_figures_match_their_definitions_and_intervals_hold_the_estimate():
    rng = np.random.default_rng(4)
    judge = list(rng.integers(1, 6, 120))
    human = [int(min(5, max(1, j + rng.integers(-2, 3)))) for j in judge]
    result = judge_human(pairs_of(judge, human), label_kind="score", n_resamples=300)
    m = result["metrics"]
    assert m["exact"]["value"] == pytest.approx(np.mean(np.array(judge) == np.array(human)))
    assert m["within_one"]["value"] == pytest.approx(np.mean(np.abs(np.array(judge) - np.array(human)) <= 1))
    assert m["quadratic_kappa"]["value"] == pytest.approx(
        direct_weighted_kappa(judge, human, [1, 2, 3, 4, 5], "quadratic"), abs=1e-9,
    )
    # Spearman's rho is Pearson's correlation of the (average, for ties) ranks.
    assert m["spearman"]["value"] == pytest.approx(np.corrcoef(average_ranks(judge), average_ranks(human))[0, 1], abs=1e-9)
    for figure in m.values():
        low, high = figure["ci"]
        assert low <= figure["value"] <= high and high - low < 0.5


def test_pass_fail_and_pairwise_report_percent_agreement_and_cohens_kappa():
    judge = ["pass"] * 10 + ["fail"] * 10
    human = ["pass"] * 8 + ["fail"] * 2 + ["fail"] * 9 + ["pass"]
    result = judge_human(pairs_of(judge, human), label_kind="pass_fail", n_resamples=100)
    assert set(result["metrics"]) == {"percent", "kappa"}
    assert result["agreement"] == pytest.approx(17 / 20)
    assert result["kappa"] == pytest.approx(direct_weighted_kappa(judge, human, ["fail", "pass"], None))
    pairwise = judge_human(pairs_of(["A", "B", "tie", "A"], ["A", "B", "A", "A"]), label_kind="pairwise", n_resamples=50)
    assert pairwise["agreement"] == pytest.approx(0.75)


def test_undefined_kappa_is_reported_as_null_not_a_crash():
    result = judge_human(pairs_of(["pass"] * 5, ["pass"] * 5), label_kind="pass_fail", n_resamples=50)
    assert result["agreement"] == 1.0 and result["kappa"] is None


def test_an_item_labelled_by_three_people_counts_three_times_and_is_resampled_whole():
    pairs = [LabelPair("x", a, 5, 5) for a in ("a", "b", "c")] + [LabelPair("y", "a", 1, 2)]
    result = judge_human(pairs, label_kind="score", n_resamples=50)
    assert result["n_items"] == 2 and result["n_labels"] == 4
    assert result["metrics"]["exact"]["value"] == pytest.approx(0.75)
    assert [p["annotator"] for p in result["per_annotator"]] == ["a", "b", "c"]


def test_inter_annotator_alpha_only_where_items_overlap():
    assert inter_annotator({"x": {"a": 3}, "y": {"b": 4}}, label_kind="score") is None
    labels = {f"i{n}": {"a": 1 + n % 5, "b": 1 + n % 5} for n in range(20)}
    result = inter_annotator(labels, label_kind="score", n_resamples=50)
    assert result["alpha"]["value"] == pytest.approx(1.0) and result["level"] == "ordinal"
    assert result["pairs"] == [{"annotators": ["a", "b"], "n": 20, "kappa": pytest.approx(1.0), "agreement": 1.0}]


@pytest.mark.parametrize("raw, kind, expected", [("4", "score", "4"), (" 5 ", "score", "5"), ("PASS", "pass_fail", "pass"),
                                                  ("f", "pass_fail", "fail"), ("1", "pairwise", "A"), ("b", "pairwise", "B"),
                                                  ("Tie", "pairwise", "tie")])
def test_labels_are_read_in_every_accepted_spelling(raw, kind, expected):
    assert parse_label(raw, label_kind=kind) == expected


@pytest.mark.parametrize(
    "raw, kind", [("6", "score"), ("0", "score"), ("3.5", "score"), ("", "score"), ("maybe", "pass_fail"), ("3", "pairwise")],
)
def test_labels_off_the_scale_are_refused(raw, kind):
    with pytest.raises(ValueError):
        parse_label(raw, label_kind=kind)


def test_reply_1_and_2_map_back_to_a_and_b_in_the_order_the_annotator_saw():
    assert pairwise_label_from_shown("1", swapped=False) == "A"
    assert pairwise_label_from_shown("1", swapped=True) == "B"
    assert pairwise_label_from_shown("tie", swapped=True) == "tie"
    for label in ("A", "B", "tie"):
        for swapped in (False, True):
            shown = "tie" if label == "tie" else ("1" if label == ("B" if swapped else "A") else "2")
            assert pairwise_label_from_shown(shown, swapped=swapped) == label


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_the_numpy_kappa_equals_scikit_learns_on_random_and_degenerate_labels(weights):
    """The bootstrap's kappa is computed in numpy (scikit-learn's checks cost 10 ms a call); it must be
    scikit-learn's figure: values outside the labels left out, NaN where undefined, an error without labels."""
    import math
    import warnings

    from sklearn.metrics import cohen_kappa_score

    from calibration.core.agreement import _cohen_kappa_score

    rng = np.random.default_rng(7)
    labels = [1, 2, 3, 4, 5]
    cases = [
        (rng.integers(1, 6, n).astype(float), rng.integers(1, 6, n).astype(float)) for n in (2, 5, 20, 60) for _ in range(25)
    ]
    cases += [
        (np.array([3.0, 3.0, 3.0]), np.array([3.0, 3.0, 3.0])),  # one category only: undefined
        (np.array([1.0, 2.0, 9.0]), np.array([1.0, 7.0, 2.0])),  # values outside the labels
        (np.array([1.0, 5.0]), np.array([8.0, 9.0])),  # no pair inside the labels
    ]
    for y1, y2 in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = cohen_kappa_score(y1, y2, labels=labels, weights=weights)
        got = _cohen_kappa_score(y1, y2, labels=labels, weights=weights)
        assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected, abs=1e-12), (y1, y2)
    with pytest.raises(ValueError):
        _cohen_kappa_score(np.array([8.0, 9.0]), np.array([1.0, 2.0]), labels=labels, weights=weights)
