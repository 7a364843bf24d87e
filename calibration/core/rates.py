"""A pass/fail judge's sensitivity and specificity against people, with Wilson intervals. No Django.

Positive is "pass". Every human label of an item is one comparison (as in the agreement figures), so an item
labelled by three people counts three times; an item whose judge reply gave no usable verdict is compared as
the opposite of each label (calibration/core/agreement.py: farthest_label), a miss whichever way it goes.
The intervals are statsmodels' Wilson score intervals (95%), which stay inside [0, 1] and keep their
coverage on the small counts a sample gives; they treat the labels as independent.
"""

from __future__ import annotations

from collections.abc import Sequence

from calibration.core.agreement import LabelPair
from judgeapp.judging.stats import wilson_interval

CONFIDENCE = 0.95


def _rate(successes: int, total: int) -> dict:
    return {
        "value": successes / total if total else None,
        "ci": wilson_interval(successes, total, confidence=CONFIDENCE),
        "successes": successes,
        "total": total,
    }


def pass_fail_rates(pairs: Sequence[LabelPair]) -> dict:
    """{tpr, tnr: {value, ci, successes, total}, counts: {tp, fn, tn, fp}, positive: "pass"}.

    tpr (sensitivity): of the labels a person gave "pass", the share the judge passed; tnr (specificity):
    of the labels "fail", the share the judge failed."""
    tp = sum(1 for p in pairs if p.human == "pass" and p.judge == "pass")
    fn = sum(1 for p in pairs if p.human == "pass" and p.judge != "pass")
    tn = sum(1 for p in pairs if p.human == "fail" and p.judge == "fail")
    fp = sum(1 for p in pairs if p.human == "fail" and p.judge != "fail")
    return {
        "positive": "pass",
        "counts": {"tp": tp, "fn": fn, "tn": tn, "fp": fp},
        "tpr": _rate(tp, tp + fn),
        "tnr": _rate(tn, tn + fp),
        "method": "Wilson score intervals, 95% (statsmodels proportion_confint); positive = pass",
    }
