"""Judge–human and human–human agreement, with bootstrap intervals. No Django.

The statistics are the libraries': scikit-learn's Cohen's kappa (quadratic-weighted for 1–5 scores),
scipy's Spearman's rho and bootstrap, the `krippendorff` package's alpha. What is ours is only which
labels are compared with which:

- judge–human: every human label of an item is compared with the judge's verdict on it (an item labelled
  by three people counts three times), so figures need no tie-breaking between annotators;
- intervals resample *items* (all of an item's labels together), since labels of one item are not
  independent;
- inter-annotator: items labelled by two or more people, Krippendorff's alpha over all of them (ordinal for
  scores, nominal otherwise) and Cohen's kappa for each pair of annotators on the items they share.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from calibration.core.labels import PAIRWISE, PASS_FAIL, SCORE
from judgeapp.judging.lazy import LazyModule

# Imported by the first figure, not by the models that name this module's constants (`--help`, `gate`).
np = LazyModule("numpy")
krippendorff = LazyModule("krippendorff")

CATEGORIES = {PASS_FAIL: ["fail", "pass"], PAIRWISE: ["A", "tie", "B"]}

DEFAULT_RESAMPLES = 1000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class LabelPair:
    """One human label of an item beside the judge's verdict on the same item."""

    item: Hashable
    annotator: str
    judge: int | str
    human: int | str


def farthest_label(human: int | str, *, label_kind: str, scale: tuple[int, int] = (1, 5)) -> int | str:
    """The judge value farthest from a person's label: what a judge reply with no usable verdict is compared
    as, so that it counts as a disagreement and never as a match. On a scale the far end (the low end when
    both are as far: 3 on 1–5 gives 1); pass/fail the opposite; A and B each other, a tie A."""
    if label_kind == SCORE:
        low, high = scale
        return low if int(human) - low >= high - int(human) else high
    if label_kind == PASS_FAIL:
        return "fail" if human == "pass" else "pass"
    return {"A": "B", "B": "A", "tie": "A"}[human]


def comparison_details(pairs: Sequence[LabelPair], *, unreadable: set, label_kind: str, scale: tuple[int, int] = (1, 5)) -> dict:
    """What a result shows beside its figures: the judge × human table and the items furthest apart, both of
    the verdicts the judge gave (an unusable reply has no verdict to put in a cell or a reasoning to show),
    and the items whose reply was unusable."""
    readable = [p for p in pairs if p.item not in unreadable]
    return {
        "confusion": confusion(readable, label_kind=label_kind, scale=scale),
        "disagreements": largest_disagreements(readable, label_kind=label_kind),
        "unreadable": sorted({p.item for p in pairs if p.item in unreadable}, key=str),
    }


def label_codes(label_kind: str, scale: tuple[int, int] = (1, 5)) -> list:
    """The possible labels, in order: scale points for scores, categories otherwise."""
    if label_kind == SCORE:
        return list(range(scale[0], scale[1] + 1))
    return CATEGORIES[label_kind]


def _clean(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _quiet(function: Callable[[], float]) -> float:
    # Undefined statistics (one category only, constant input) come back as NaN, reported as null; the
    # libraries' warnings about them would only be noise in a worker's log.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return float(function())
        except ValueError:
            return math.nan


def _cohen_kappa_score(y1: np.ndarray, y2: np.ndarray, *, labels: Sequence, weights: str | None = None) -> float:
    """Cohen's kappa exactly as scikit-learn's `cohen_kappa_score(y1, y2, labels=labels, weights=weights)`
    computes it (the confusion matrix over `labels`, pairs with a value outside them left out; NaN where it
    is undefined; a ValueError when no label is in y1), in plain numpy. The bootstrap calls it a thousand
    times per figure, and scikit-learn's argument checks cost about 10 ms a call: a 20-item sample's agreement
    took 30 s of a worker, this one a fraction of a second (tests/calibration/test_agreement_core.py holds
    it equal to scikit-learn's)."""
    points = np.asarray(labels, dtype=float)
    n_classes = len(points)
    match1 = np.asarray(y1, dtype=float)[:, None] == points[None, :]
    match2 = np.asarray(y2, dtype=float)[:, None] == points[None, :]
    in1, in2 = match1.any(axis=1), match2.any(axis=1)
    if not in1.any():
        raise ValueError("At least one label specified must be in y_true")
    both = in1 & in2
    confusion = np.zeros((n_classes, n_classes))
    np.add.at(confusion, (match1[both].argmax(axis=1), match2[both].argmax(axis=1)), 1.0)
    sum0, sum1 = confusion.sum(axis=0), confusion.sum(axis=1)
    total = sum0.sum()
    if total == 0:
        return math.nan
    expected = np.outer(sum0, sum1) / total
    if weights is None:
        w_mat = np.ones((n_classes, n_classes))
        np.fill_diagonal(w_mat, 0)
    else:
        w_mat = np.zeros((n_classes, n_classes)) + np.arange(n_classes)
        w_mat = np.abs(w_mat - w_mat.T) if weights == "linear" else (w_mat - w_mat.T) ** 2
    denominator = np.sum(w_mat * expected)
    if denominator == 0:
        return math.nan
    return float(1 - np.sum(w_mat * confusion) / denominator)


def _stats():
    from scipy import stats  # half a second to import: loaded when a figure is computed, not at --help

    return stats


def _metric_functions(label_kind: str, scale: tuple[int, int]) -> dict[str, Callable[[np.ndarray, np.ndarray], float]]:
    """Each figure as a function of (judge, human) arrays: scores as numbers, categories as their codes."""
    if label_kind == SCORE:
        points = label_codes(label_kind, scale)
        return {
            "exact": lambda j, h: float(np.mean(j == h)),
            "within_one": lambda j, h: float(np.mean(np.abs(j - h) <= 1)),
            "quadratic_kappa": lambda j, h: _quiet(lambda: _cohen_kappa_score(j, h, weights="quadratic", labels=points)),
            "spearman": lambda j, h: _quiet(lambda: _stats().spearmanr(j, h).statistic),
        }
    codes = list(range(len(CATEGORIES[label_kind])))
    return {
        "percent": lambda j, h: float(np.mean(j == h)),
        "kappa": lambda j, h: _quiet(lambda: _cohen_kappa_score(j, h, labels=codes)),
    }


# The two figures every result carries, whatever the label kind: the kappa and the plain agreement.
KAPPA_METRIC = {SCORE: "quadratic_kappa", PASS_FAIL: "kappa", PAIRWISE: "kappa"}
AGREEMENT_METRIC = {SCORE: "exact", PASS_FAIL: "percent", PAIRWISE: "percent"}


def _as_array(values: Sequence, label_kind: str) -> np.ndarray:
    """Scores as numbers; categories as their index in CATEGORIES (integer arrays keep the libraries fast)."""
    if label_kind == SCORE:
        return np.asarray(values, dtype=float)
    code_of = {c: i for i, c in enumerate(CATEGORIES[label_kind])}
    return np.asarray([code_of[v] for v in values], dtype=int)


def _item_bootstrap(
    groups: list[np.ndarray], statistic: Callable[[np.ndarray], np.ndarray], *, n_resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """95% percentile intervals of a vector statistic, resampling items (each a group of row indices)."""
    if len(groups) < 2 or n_resamples < 1:
        return None
    # The rows of a resample of items, without a Python loop over the items: the groups laid end to end
    # in `order`, each item's slice found from its start and length.
    order = np.concatenate(groups)
    counts = np.array([len(g) for g in groups])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])

    def on_items(item_indices: np.ndarray) -> np.ndarray:
        lengths = counts[item_indices]
        ends = np.cumsum(lengths)
        within = np.arange(ends[-1]) - np.repeat(ends - lengths, lengths)
        return statistic(order[np.repeat(starts[item_indices], lengths) + within])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = _stats().bootstrap(
            (np.arange(len(groups)),),
            on_items,
            vectorized=False,
            n_resamples=n_resamples,
            confidence_level=CONFIDENCE,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    return np.atleast_1d(result.confidence_interval.low), np.atleast_1d(result.confidence_interval.high)


def judge_human(
    pairs: Sequence[LabelPair],
    *,
    label_kind: str,
    scale: tuple[int, int] = (1, 5),
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict:
    """Agreement of a judge's verdicts with people's labels of the same items.

    Returns {n_items, n_labels, metrics: {name: {value, ci}}, kappa, agreement, per_annotator}.
    """
    functions = _metric_functions(label_kind, scale)
    names = list(functions)
    judge = _as_array([p.judge for p in pairs], label_kind)
    human = _as_array([p.human for p in pairs], label_kind)
    rows_of: dict[Hashable, list[int]] = defaultdict(list)
    for row, pair in enumerate(pairs):
        rows_of[pair.item].append(row)
    groups = [np.asarray(rows, dtype=int) for rows in rows_of.values()]

    def statistic(rows: np.ndarray) -> np.ndarray:
        j, h = judge[rows], human[rows]
        return np.array([functions[name](j, h) for name in names], dtype=float)

    if pairs:
        point = statistic(np.arange(len(pairs)))
        interval = _item_bootstrap(groups, statistic, n_resamples=n_resamples, seed=seed)
    else:
        point, interval = np.full(len(names), math.nan), None
    metrics = {}
    for i, name in enumerate(names):
        ci = None
        if interval is not None:
            low, high = _clean(interval[0][i]), _clean(interval[1][i])
            ci = [low, high] if low is not None and high is not None else None
        metrics[name] = {"value": _clean(point[i]), "ci": ci}

    per_annotator = []
    by_annotator: dict[str, list[int]] = defaultdict(list)
    for row, pair in enumerate(pairs):
        by_annotator[pair.annotator].append(row)
    for annotator in sorted(by_annotator):
        rows = np.asarray(by_annotator[annotator])
        per_annotator.append(
            {
                "annotator": annotator,
                "n": len(rows),
                "kappa": _clean(functions[KAPPA_METRIC[label_kind]](judge[rows], human[rows])),
                "agreement": _clean(functions[AGREEMENT_METRIC[label_kind]](judge[rows], human[rows])),
            }
        )
    return {
        "n_items": len(groups),
        "n_labels": len(pairs),
        "metrics": metrics,
        "kappa": metrics[KAPPA_METRIC[label_kind]]["value"],
        "agreement": metrics[AGREEMENT_METRIC[label_kind]]["value"],
        "per_annotator": per_annotator,
    }


def _alpha(matrix: np.ndarray, level: str) -> float:
    return _quiet(lambda: krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))


def inter_annotator(
    labels: dict[Hashable, dict[str, int | str]],
    *,
    label_kind: str,
    scale: tuple[int, int] = (1, 5),
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict | None:
    """Agreement among people on the items two or more of them labelled; None when no item overlaps.

    labels: {item: {annotator: label}}. Returns {n_items, annotators, level, alpha: {value, ci}, pairs}.
    """
    overlapping = {item: by for item, by in labels.items() if len(by) >= 2}
    if not overlapping:
        return None
    codes = label_codes(label_kind, scale)
    code_of = {c: i for i, c in enumerate(codes)}
    annotators = sorted({a for by in overlapping.values() for a in by})
    items = list(overlapping)
    # Reliability data: one row per annotator, one column per item, NaN where that person did not label it.
    # Scores keep their values (ordinal alpha); categories become their index (nominal alpha).
    matrix = np.full((len(annotators), len(items)), np.nan)
    for col, item in enumerate(items):
        for row, annotator in enumerate(annotators):
            if annotator in overlapping[item]:
                value = overlapping[item][annotator]
                matrix[row, col] = float(value) if label_kind == SCORE else code_of[value]
    level = "ordinal" if label_kind == SCORE else "nominal"
    value = _alpha(matrix, level)
    interval = None
    if len(items) >= 2 and n_resamples > 0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = _stats().bootstrap(
                (np.arange(len(items)),),
                lambda cols: _alpha(matrix[:, cols], level),
                vectorized=False,
                n_resamples=n_resamples,
                confidence_level=CONFIDENCE,
                method="percentile",
                rng=np.random.default_rng(seed),
            )
        low, high = _clean(result.confidence_interval.low), _clean(result.confidence_interval.high)
        interval = [low, high] if low is not None and high is not None else None

    pairs = []
    weights = "quadratic" if label_kind == SCORE else None
    for a, b in itertools.combinations(annotators, 2):
        shared = [item for item in items if a in overlapping[item] and b in overlapping[item]]
        if not shared:
            continue
        first = _as_array([overlapping[i][a] for i in shared], label_kind)
        second = _as_array([overlapping[i][b] for i in shared], label_kind)
        labels_of_kind = codes if label_kind == SCORE else list(range(len(codes)))
        pairs.append(
            {
                "annotators": [a, b],
                "n": len(shared),
                "kappa": _clean(_quiet(lambda: _cohen_kappa_score(first, second, weights=weights, labels=labels_of_kind))),
                "agreement": _clean(float(np.mean(first == second))),
            }
        )
    return {
        "n_items": len(items),
        "annotators": annotators,
        "per_annotator": annotator_agreement(labels, label_kind=label_kind, scale=scale),
        "level": level,
        "alpha": {"value": _clean(value), "ci": interval},
        "kappa_weights": weights or "none",
        "pairs": pairs,
    }


METRIC_LABELS = {
    "exact": "exact agreement",
    "within_one": "within one point",
    "quadratic_kappa": "quadratic-weighted kappa",
    "spearman": "Spearman's rho",
    "percent": "percent agreement",
    "kappa": "Cohen's kappa",
}


def format_figure(figure: dict | None) -> str:
    """'0.712 [0.650, 0.770]' from {value, ci}; '—' when undefined."""
    if not figure or figure.get("value") is None:
        return "—"
    text = f"{figure['value']:.3f}"
    if figure.get("ci"):
        text += f" [{figure['ci'][0]:.3f}, {figure['ci'][1]:.3f}]"
    return text


def confusion(pairs: Sequence[LabelPair], *, label_kind: str, scale: tuple[int, int] = (1, 5)) -> dict:
    """The judge × human table: {codes, rows: [[count of (judge = row code, human = column code)]]}."""
    codes = label_codes(label_kind, scale)
    index = {code: i for i, code in enumerate(codes)}
    rows = [[0] * len(codes) for _ in codes]
    for pair in pairs:
        if pair.judge in index and pair.human in index:
            rows[index[pair.judge]][index[pair.human]] += 1
    return {"codes": [str(c) for c in codes], "rows": rows, "total": sum(map(sum, rows))}


def _distance(label_kind: str, judge, human) -> float:
    if label_kind == SCORE:
        return abs(float(judge) - float(human))
    return 0.0 if judge == human else 1.0


def largest_disagreements(pairs: Sequence[LabelPair], *, label_kind: str, limit: int = 10) -> list[dict]:
    """The items where the judge is furthest from the people: [{item, judge, humans {annotator: label},
    distance}] — distance from the people's mean score (or the share of people who chose otherwise)."""
    by_item: dict[Hashable, list[LabelPair]] = defaultdict(list)
    for pair in pairs:
        by_item[pair.item].append(pair)
    rows = []
    for item, group in by_item.items():
        distance = sum(_distance(label_kind, p.judge, p.human) for p in group) / len(group)
        if distance > 0:
            rows.append(
                {"item": item, "judge": group[0].judge, "humans": {p.annotator: p.human for p in group}, "distance": distance}
            )
    rows.sort(key=lambda r: (-r["distance"], str(r["item"])))
    return rows[:limit]


def annotator_agreement(
    labels: dict[Hashable, dict[str, int | str]], *, label_kind: str, scale: tuple[int, int] = (1, 5)
) -> list[dict]:
    """Each annotator against the others, on the items they share with at least one other person:
    Cohen's kappa (quadratic-weighted for scores) of their label against each other label of the item,
    exact agreement, and Krippendorff's alpha of the others without them. A careless annotator has a low
    kappa, and the others' alpha rises without them."""
    overlapping = {item: by for item, by in labels.items() if len(by) >= 2}
    if not overlapping:
        return []
    annotators = sorted({a for by in overlapping.values() for a in by})
    codes = label_codes(label_kind, scale)
    kappa_labels = codes if label_kind == SCORE else list(range(len(codes)))
    weights = "quadratic" if label_kind == SCORE else None
    level = "ordinal" if label_kind == SCORE else "nominal"
    code_of = {c: i for i, c in enumerate(codes)}
    rows = []
    for annotator in annotators:
        mine, theirs = [], []
        for by in overlapping.values():
            if annotator not in by:
                continue
            for other, label in by.items():
                if other != annotator:
                    mine.append(by[annotator])
                    theirs.append(label)
        if not mine:
            continue
        first, second = _as_array(mine, label_kind), _as_array(theirs, label_kind)
        others = [a for a in annotators if a != annotator]
        alpha_without = None
        if len(others) >= 2:
            items = [item for item, by in overlapping.items() if sum(a in by for a in others) >= 2]
            if items:
                matrix = np.full((len(others), len(items)), np.nan)
                for col, item in enumerate(items):
                    for row, other in enumerate(others):
                        if other in overlapping[item]:
                            value = overlapping[item][other]
                            matrix[row, col] = float(value) if label_kind == SCORE else code_of[value]
                alpha_without = _clean(_alpha(matrix, level))
        rows.append(
            {
                "annotator": annotator,
                "items": sum(1 for by in overlapping.values() if annotator in by),
                "n": len(mine),
                "kappa": _clean(_quiet(lambda: _cohen_kappa_score(first, second, weights=weights, labels=kappa_labels))),
                "agreement": _clean(float(np.mean(first == second))),
                "alpha_without": alpha_without,
            }
        )
    return rows
