"""Small statistics more than one mode reads: the pairwise sign test (pairwise runs, imported verdicts,
the dashboard's one-word outcome). Plain Python and scipy, no Django."""

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
