"""Pointwise scoring: aggregation into the report and the release gate (seed: LLM-as-Judge, Pointwise)."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass

# Stop rule: more than 5% of judge replies still unparseable after one retry each -> the run is invalid.
PARSE_FAILURE_LIMIT = 0.05


@dataclass
class ScoredItem:
    case_id: str
    criterion: str
    score: int | None
    reasoning: str = ""
    parse_error: str = ""
    error: str = ""  # the judge never answered (after its retries)


def summarize(items: list[ScoredItem], *, scale: tuple[int, int] = (1, 5), lowest_n: int = 5) -> dict:
    scored = [i for i in items if i.score is not None]
    parse_failures = [i for i in items if i.score is None and i.parse_error and not i.error]
    errors = [i for i in items if i.score is None and i.error]
    replies = len(items) - len(errors)
    parse_failure_rate = len(parse_failures) / replies if replies else 0.0
    unjudged_rate = (len(parse_failures) + len(errors)) / len(items) if items else 1.0

    by_criterion: dict[str, list[int]] = defaultdict(list)
    for item in scored:
        by_criterion[item.criterion].append(item.score)
    histogram = Counter(i.score for i in scored)
    low, high = scale
    lowest = sorted(scored, key=lambda i: (i.score, i.case_id, i.criterion))[:lowest_n]

    reasons = []
    if parse_failure_rate > PARSE_FAILURE_LIMIT:
        reasons.append(
            f"{len(parse_failures)} of {replies} judge replies failed to parse after a retry "
            f"({parse_failure_rate:.1%} > {PARSE_FAILURE_LIMIT:.0%})"
        )
    if errors and unjudged_rate > PARSE_FAILURE_LIMIT:
        reasons.append(f"{len(errors)} of {len(items)} judgments got no reply from the judge")
    if not scored:
        reasons.append("no judgment was scored")
    return {
        "mean": statistics.fmean(i.score for i in scored) if scored else None,
        "per_criterion": {name: statistics.fmean(scores) for name, scores in by_criterion.items()},
        "histogram": {str(point): histogram.get(point, 0) for point in range(low, high + 1)},
        "lowest": [
            {"case_id": i.case_id, "criterion": i.criterion, "score": i.score, "reasoning": i.reasoning} for i in lowest
        ],
        "judged": len(scored),
        "total": len(items),
        "parse_failures": len(parse_failures),
        "parse_failure_rate": parse_failure_rate,
        "judge_errors": len(errors),
        "invalid": bool(reasons),
        "invalid_reasons": reasons,
    }


def gate_decision(
    *, mean: float | None, threshold: float | None, baseline_mean: float | None, invalid: bool, extra_reasons=()
) -> dict:
    """Pass only when the run is valid, its mean clears the threshold and is not below the last release."""
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
    return {"passed": not reasons, "threshold": threshold, "baseline_mean": baseline_mean, "reasons": reasons}
