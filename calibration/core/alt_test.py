"""The alternative annotator test (Calderon, Reichart and Dror, ACL 2025, "The Alternative Annotator Test for
LLM-as-a-Judge: How to Statistically Justify Replacing Human Annotators with LLMs"). No Django.

May the judge stand in for a person? Leave each annotator j out in turn. On every item j labelled (and at
least one other person did), score how well the judge's verdict and j's label each align with the other
people's labels of the item: accuracy (the share of the others they match) for categories, the negative
root mean squared error for scores (the paper's choice for ordinal scales). W_f = 1 where the judge is at
least as aligned as j, W_h = 1 where j is at least as aligned as the judge; ρ_f and ρ_h are their means.
A one-sided t-test of the per-item differences W_h − W_f against ε tests H0: ρ_f ≤ ρ_h − ε (ε is the lead's
cost-benefit allowance for the judge). The Benjamini–Yekutieli procedure controls the false discovery rate
over the annotators at α = 0.05; the winning rate ω is the share of annotators whose null is rejected, and
the judge passes when ω ≥ 0.5. The average advantage probability ρ (the mean of ρ_f) ranks judges.

The minimums are the paper's: three annotators (its recommendation: with two, the "others" are one person
and there is no consensus to represent) and 30 items for each (the t-test's normality; the paper's code
skips an annotator with fewer). Items need two or more labels, as in the paper's code.

Per item the difference W_h − W_f is −1 (the judge closer), 0 (as close) or +1 (the person closer), so an
annotator's test is fixed by three counts: they are what is stored, and `alt_test_decide` runs the test at
any ε from them (a lead who changes ε sees the verdict at once, without recomputing the agreement).

A judge reply with no usable verdict on an item loses that item outright (W_f = 0, W_h = 1): failing to
answer is never a way to look as good as a person.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable
from dataclasses import dataclass

from calibration.core.labels import PASS_FAIL, SCORE
from calibration.core.rates import pass_fail_rates
from judgeapp.judging.lazy import LazyModule

np = LazyModule("numpy")  # imported by the first test, not by the models that name DEFAULT_EPSILON

DEFAULT_EPSILON = 0.2
FDR_ALPHA = 0.05
PASS_WINNING_RATE = 0.5
MIN_ANNOTATORS = 3
MIN_ITEMS_PER_ANNOTATOR = 30
MIN_LABELS_PER_ITEM = 2
METHOD = (
    "alternative annotator test (Calderon, Reichart & Dror 2025): leave-one-annotator-out, one-sided t-test of "
    "W_h − W_f against ε, Benjamini–Yekutieli FDR at α = 0.05 (statsmodels fdr_by), passes when ω ≥ 0.5"
)


def accuracy(value, others: list) -> float:
    """The share of the other people's labels a value matches (the paper's score for categories)."""
    return float(np.mean([value == other for other in others]))


def neg_rmse(value, others: list) -> float:
    """Minus the root mean squared distance to the other people's scores (the paper's score for scales)."""
    return -float(np.sqrt(np.mean([(float(value) - float(other)) ** 2 for other in others])))


def scoring_for(label_kind: str):
    return neg_rmse if label_kind == SCORE else accuracy


@dataclass(frozen=True)
class AnnotatorCounts:
    """One left-out annotator's items: where the judge was closer to the others, as close, or farther."""

    annotator: str
    judge_closer: int
    as_close: int
    human_closer: int

    @property
    def n(self) -> int:
        return self.judge_closer + self.as_close + self.human_closer

    def differences(self) -> np.ndarray:
        """W_h − W_f per item (in count order: the test does not depend on the items' order)."""
        return np.repeat([-1.0, 0.0, 1.0], [self.judge_closer, self.as_close, self.human_closer])


def alt_test_counts(
    labels: dict[Hashable, dict[str, object]], judged: dict[Hashable, object], *, label_kind: str
) -> list[AnnotatorCounts]:
    """Each annotator's counts, on the items they labelled that another person labelled too and the judge
    was asked about. labels: {item: {annotator: label}}; judged: {item: the judge's verdict, or None for a
    reply with no usable verdict}. Items missing from `judged` are left out."""
    score = scoring_for(label_kind)
    tallies: dict[str, list[int]] = {}
    for item, by in labels.items():
        if len(by) < MIN_LABELS_PER_ITEM or item not in judged:
            continue
        verdict = judged[item]
        for annotator, label in by.items():
            others = [other for name, other in by.items() if name != annotator]
            tally = tallies.setdefault(annotator, [0, 0, 0])
            if verdict is None:
                tally[2] += 1  # no verdict: the person is closer
                continue
            judge_score, human_score = score(verdict, others), score(label, others)
            tally[0 if judge_score > human_score else 1 if judge_score == human_score else 2] += 1
    return [AnnotatorCounts(name, *tallies[name]) for name in sorted(tallies)]


def _p_value(counts: AnnotatorCounts, epsilon: float) -> float:
    from scipy.stats import ttest_1samp  # half a second to import: when a figure is computed

    # Constant differences (an annotator always as close as the judge, say) make scipy warn about precision;
    # the test is still defined (t = ±inf) and the warning would only be noise in a worker's log.
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        p = float(ttest_1samp(counts.differences(), epsilon, alternative="less").pvalue)
    # Undefined only when every difference equals ε exactly: no evidence either way.
    return 1.0 if math.isnan(p) else p


def alt_test_decide(
    counts: list[AnnotatorCounts],
    *,
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = FDR_ALPHA,
    min_annotators: int = MIN_ANNOTATORS,
    min_items: int = MIN_ITEMS_PER_ANNOTATOR,
) -> dict:
    """The test at ε: {status: passed|failed|not enough annotators|not enough items, passed (None when not
    decided), winning_rate, advantage_probability, epsilon, alpha, annotators: [{annotator, n, judge_closer,
    as_close, human_closer, rho_f, rho_h, p_value, p_adjusted, rejected}], skipped: [{annotator, n}], reason}."""
    tested = [c for c in counts if c.n >= min_items]
    skipped = [{"annotator": c.annotator, "n": c.n} for c in counts if c.n < min_items]
    result = {
        "epsilon": epsilon,
        "alpha": alpha,
        "min_annotators": min_annotators,
        "min_items": min_items,
        "skipped": skipped,
        "method": METHOD,
    }
    if len(tested) < min_annotators:
        status = "not enough annotators" if len(counts) < min_annotators else "not enough items"
        reason = (
            f"{len(counts)} annotator(s) share items with another person; the test needs {min_annotators}"
            if len(counts) < min_annotators
            else f"{len(tested)} annotator(s) labelled {min_items} or more shared items; the test needs {min_annotators}"
        )
        return {**result, "status": status, "passed": None, "winning_rate": None, "advantage_probability": None,
                "annotators": [], "reason": reason}
    from statsmodels.stats.multitest import multipletests

    p_values = [_p_value(c, epsilon) for c in tested]
    rejected, adjusted, _, _ = multipletests(p_values, alpha=alpha, method="fdr_by")
    rows = [
        {
            "annotator": c.annotator,
            "n": c.n,
            "judge_closer": c.judge_closer,
            "as_close": c.as_close,
            "human_closer": c.human_closer,
            "rho_f": (c.judge_closer + c.as_close) / c.n,
            "rho_h": (c.human_closer + c.as_close) / c.n,
            "p_value": p,
            "p_adjusted": float(p_adj),
            "rejected": bool(rej),
        }
        for c, p, p_adj, rej in zip(tested, p_values, adjusted, rejected, strict=True)
    ]
    winning_rate = sum(row["rejected"] for row in rows) / len(rows)
    passed = winning_rate >= PASS_WINNING_RATE
    return {
        **result,
        "status": "passed" if passed else "failed",
        "passed": passed,
        "winning_rate": winning_rate,
        "advantage_probability": float(np.mean([row["rho_f"] for row in rows])),
        "annotators": rows,
        "reason": f"the judge beats {sum(r['rejected'] for r in rows)} of {len(rows)} annotators at ε = {epsilon:g} "
        f"(ω = {winning_rate:.2f}; passing needs ω ≥ {PASS_WINNING_RATE:g})",
    }


def counts_as_dicts(counts: list[AnnotatorCounts]) -> list[dict]:
    return [
        {"annotator": c.annotator, "judge_closer": c.judge_closer, "as_close": c.as_close, "human_closer": c.human_closer}
        for c in counts
    ]


def counts_from_dicts(rows: list[dict]) -> list[AnnotatorCounts]:
    return [AnnotatorCounts(r["annotator"], int(r["judge_closer"]), int(r["as_close"]), int(r["human_closer"])) for r in rows]


def alt_test_line(result: dict | None) -> str:
    """One line for a page or a gate: 'passed: …', 'failed: …' or 'not decided: not enough annotators …'."""
    if not result:
        return "not run: no sample with three or more annotators per item"
    if result["passed"] is None:
        return f"not decided: {result['status']} ({result['reason']})"
    return f"{result['status']}: {result['reason']}"


def judge_beside_people(labels: dict, judged: dict, pairs: list, *, label_kind: str) -> dict:
    """What an agreement result keeps beside its figures: the test's per-annotator counts (`alt_test`, where
    two or more people labelled an item; decided at the lead's ε when read) and, for a pass/fail judge, its
    TPR and TNR (`rates`). labels and judged as for alt_test_counts; pairs: the result's label pairs."""
    extra = {}
    counts = alt_test_counts(labels, judged, label_kind=label_kind)
    if counts:
        extra["alt_test"] = {"counts": counts_as_dicts(counts), "label_kind": label_kind}
    if label_kind == PASS_FAIL:
        extra["rates"] = pass_fail_rates(pairs)
    return extra
