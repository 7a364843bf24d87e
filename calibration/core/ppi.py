"""The human-corrected mean of a run's scores: prediction-powered inference (PPI++, Angelopoulos, Duchi and
Zrnic 2023) with the `ppi-python` package. No Django.

The judge scored every item; people labelled a few. PPI++ takes the judge's mean over the unlabelled items
and corrects it by the judge's error measured on the labelled ones (with a power-tuning weight λ that the
package estimates, so a useless judge costs nothing against the people's mean alone); its 95% interval
covers the people's mean even when the judge is biased, where the judge-only interval does not.

`ppi_py` imports numba and statsmodels (seconds): it is imported here, when a figure is computed, never
when a module that a command's --help loads is imported.
"""

from __future__ import annotations

from collections.abc import Sequence

from judgeapp.judging.lazy import LazyModule

np = LazyModule("numpy")  # imported by the first corrected figure, not by the selectors that name this module

METHOD = "PPI++ (prediction-powered inference, power-tuned; ppi-python ppi_mean_pointestimate / ppi_mean_ci)"
CONFIDENCE = 0.95


def stratum_weights(strata: Sequence[str], population: dict[str, int]) -> list[float] | None:
    """Weights that make a stratified sample stand for its run: each labelled item's stratum share in the
    run over its share in the sample. None when every weight is 1 (no strata, or proportional shares).

    A sample drawn with equal allocation over the judge's verdicts over-represents rare scores; unweighted,
    the judge's error on them would count as often as on the common ones.
    """
    if not strata or not population or not any(strata):
        return None
    total = sum(population.values())
    n = len(strata)
    in_sample: dict[str, int] = {}
    for stratum in strata:
        in_sample[stratum] = in_sample.get(stratum, 0) + 1
    weights = [(population.get(s, 0) / total) / (in_sample[s] / n) if total else 1.0 for s in strata]
    if all(abs(w - 1.0) < 1e-12 for w in weights):
        return None
    return weights


def corrected_mean(
    human: Sequence[float],
    judge_labelled: Sequence[float],
    judge_unlabelled: Sequence[float],
    *,
    weights: Sequence[float] | None = None,
) -> dict | None:
    """{mean, ci95: [lo, hi], n_labelled, n_unlabelled, method}; None with fewer than 2 labelled or 2
    unlabelled items (no interval can be formed).

    human: the people's label of each labelled item (the mean of its labels, with overlap); judge_labelled:
    the judge's score on the same items; judge_unlabelled: the judge's score on every other item.
    """
    if len(human) != len(judge_labelled):
        raise ValueError("each labelled item needs both a human label and the judge's score")
    if len(human) < 2 or len(judge_unlabelled) < 2:
        return None
    import ppi_py

    y = np.asarray(human, dtype=float)
    y_hat = np.asarray(judge_labelled, dtype=float)
    y_hat_unlabelled = np.asarray(judge_unlabelled, dtype=float)
    w = None if weights is None else np.asarray(weights, dtype=float)
    mean = ppi_py.ppi_mean_pointestimate(y, y_hat, y_hat_unlabelled, w=w)
    low, high = ppi_py.ppi_mean_ci(y, y_hat, y_hat_unlabelled, alpha=1 - CONFIDENCE, w=w)
    return {
        "mean": float(np.asarray(mean).ravel()[0]),
        "ci95": [float(np.asarray(low).ravel()[0]), float(np.asarray(high).ravel()[0])],
        "n_labelled": len(y),
        "n_unlabelled": len(y_hat_unlabelled),
        "method": METHOD + (", labelled items weighted by stratum" if w is not None else ""),
    }


# A verdict as a number whose mean is the rate: a pass/fail judge's pass rate, a pairwise judge's win rate
# of version B. A tie counts half a win for each side, so the win rate of B is 1 − the win rate of A and 0.5
# means "no difference" (the pairwise report's own `win_rate_a` leaves ties out instead: a person's tie is a
# label like any other here, and leaving it out would drop those items from the correction).
PASS_VALUES = {"pass": 1.0, "fail": 0.0}
WIN_VALUES = {"B": 1.0, "tie": 0.5, "A": 0.0}


def corrected_rate(
    human: Sequence[Sequence[str]],
    judge_labelled: Sequence[str],
    judge_unlabelled: Sequence[str],
    *,
    values: dict[str, float],
    weights: Sequence[float] | None = None,
) -> dict | None:
    """The human-corrected rate (PPI++ on the verdicts as 0/1, or 0/½/1 for pairwise): {rate, ci95, n_labelled,
    n_unlabelled, method, convention}; None as for corrected_mean.

    human: each labelled item's labels (an item labelled by several people stands for the mean of their
    values); judge_labelled: the judge's verdict on the same items; judge_unlabelled: its verdict on every
    other item; weights: as for corrected_mean (a sample drawn with equal allocation over the verdicts)."""
    result = corrected_mean(
        [sum(values[label] for label in labels) / len(labels) for labels in human],
        [values[v] for v in judge_labelled],
        [values[v] for v in judge_unlabelled],
        weights=weights,
    )
    if result is None:
        return None
    result["rate"] = result.pop("mean")
    result["convention"] = ", ".join(f"{label} = {value:g}" for label, value in values.items())
    return result
