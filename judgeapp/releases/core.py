"""The release gate's rule (seed: LLM-as-Judge, Pointwise, "Release gate"), plain Python."""

from __future__ import annotations

# The gate's threshold when none is given (CLI --threshold, the form's field).
DEFAULT_THRESHOLD = 3.5

def gate_decision(
    *,
    mean: float | None,
    threshold: float | None,
    baseline_mean: float | None,
    invalid: bool,
    extra_reasons=(),
    corrected_low: float | None = None,
) -> dict:
    """Pass only when the run is valid, its mean clears the threshold and is not below the last release;
    with `corrected_low` (a lead's policy), the human-corrected interval's lower bound must clear it too."""
    reasons = list(extra_reasons)
    if invalid:
        reasons.append("the run is invalid")
    if mean is None:
        reasons.append("no mean score")
    else:
        if threshold is not None and mean < threshold:
            reasons.append(f"mean {mean:.3f} is below the threshold {threshold:g}")
        if baseline_mean is not None and mean < baseline_mean:
            reasons.append(f"mean {mean:.3f} is below the last released mean {baseline_mean:.3f}")
    if corrected_low is not None and threshold is not None and corrected_low < threshold:
        reasons.append(f"the human-corrected mean's 95% lower bound {corrected_low:.3f} is below the threshold {threshold:g}")
    return {"passed": not reasons, "threshold": threshold, "baseline_mean": baseline_mean, "reasons": reasons}
