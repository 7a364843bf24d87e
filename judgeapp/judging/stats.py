"""Small statistics more than one mode reads: the pairwise sign test (pairwise runs, imported verdicts,
the dashboard's one-word outcome) and the Wilson interval of a share (check-ups, trials' noise, a pass/fail
judge's TPR and TNR). Plain Python, scipy and statsmodels, no Django."""

from __future__ import annotations

CONFIDENCE = 0.95


def sign_test(wins_a: int, wins_b: int, *, confidence: float = CONFIDENCE) -> dict:
    """Exact two-sided sign test of "A and B are equally good" on the decisive cases (ties excluded),
    with the Clopper-Pearson interval on A's win rate."""
    from scipy.stats import binomtest

    decisive = wins_a + wins_b
    if not decisive:
        return {"n": 0, "p_value": None, "ci_low": None, "ci_high": None, "confidence": confidence,
                "significant": False, "method": "exact binomial sign test, ties excluded"}
    result = binomtest(wins_a, decisive, 0.5, alternative="two-sided")
    interval = result.proportion_ci(confidence_level=confidence, method="exact")
    return {
        "n": decisive,
        "p_value": float(result.pvalue),
        "ci_low": float(interval.low),
        "ci_high": float(interval.high),
        "confidence": confidence,
        "significant": bool(result.pvalue < 1 - confidence),
        "method": "exact binomial sign test, ties excluded; Clopper-Pearson interval",
    }


def wilson_interval(successes: int, total: int, *, confidence: float = CONFIDENCE) -> list[float] | None:
    """The Wilson score interval of successes/total (statsmodels); None with no trial. It stays inside [0, 1]
    and keeps its coverage on the small counts a sample or a check-up gives."""
    if not total:
        return None
    from statsmodels.stats.proportion import proportion_confint  # seconds to import: only when computed

    low, high = proportion_confint(successes, total, alpha=1 - confidence, method="wilson")
    return [float(low), float(high)]
