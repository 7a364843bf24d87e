"""The release gate's rule (seed: LLM-as-Judge, Pointwise, "Release gate") and the like-for-like comparison
with a baseline it rests on, plain Python.

The seed compares the mean with the threshold and with the last released version. A comparison with a
release means something only on the same cases judged the same way, so the baseline's side is the released
run's scores on the cases both test sets share, judged with this run's rubric, prompt and judge, and the two
are compared as paired scores (`paired_difference`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from judgeapp.judging.lazy import LazyModule

np = LazyModule("numpy")

# The gate's threshold when none is given (CLI --threshold, the form's field).
DEFAULT_THRESHOLD = 3.5

# The paired bootstrap: resamples of whole cases (a case's criteria are scored on one reply and move
# together), with a fixed seed so that the same scores always give the same interval.
BASELINE_RESAMPLES = 2000
BASELINE_SEED = 20240601
CONFIDENCE = 0.95
# Resamples drawn this many case indices at a time: the memory, not the figures, depends on it (numpy's
# generator gives the same indices drawn in pieces as drawn at once).
INDICES_AT_ONCE = 2_000_000
# The cases that got worse and better that a report lists (the comparison page lists every one).
CHANGED_SHOWN = 10

# How the baseline was compared (the report's `baseline.how`).
SAME = "same"  # judged the same way: the two runs' stored judgments, paired by case
REJUDGED = "rejudged"  # the baseline's replies judged again with this run's rubric, prompt and judge
SKIPPED = "skipped"  # no shared case, or no replies kept: no comparison, one sentence why
GIVEN = "given"  # a mean given by hand (--baseline-mean): the seed's plain comparison of two means

MEAN_RULE = "mean"
REGRESSION_RULE = "regression"


@dataclass(frozen=True)
class ScorePair:
    """One (case, criterion) scored on both sides: the candidate run's score and the baseline's."""

    case_id: str
    criterion: str
    candidate: float
    baseline: float


def _percentile_interval(values) -> list[float]:
    low, high = np.percentile(values, [100 * (1 - CONFIDENCE) / 2, 100 * (1 + CONFIDENCE) / 2])
    return [float(low), float(high)]


def paired_difference(
    pairs: Iterable[ScorePair], *, resamples: int = BASELINE_RESAMPLES, seed: int = BASELINE_SEED, shown: int = CHANGED_SHOWN
) -> dict:
    """The candidate's mean minus the baseline's on the same (case, criterion) pairs, with a paired
    percentile bootstrap 95% interval that resamples whole cases, and the cases that got worse and better.

    diff = (sum of candidate scores − sum of baseline scores) / pairs, so that diff < 0 exactly when the
    candidate's mean is below the baseline's mean on the same pairs. Each resample draws the cases with
    replacement (numpy's default_rng(seed).integers(0, cases), a resample's cases at a time) and takes the
    same ratio over the drawn cases; the interval is the 2.5th and 97.5th percentiles (numpy's linear rule).
    A case's change is the mean of its criteria's differences; worse ones are listed worst first.
    """
    cases: dict[str, dict] = {}
    for pair in pairs:
        case = cases.setdefault(pair.case_id, {"candidate": 0.0, "baseline": 0.0, "n": 0, "criteria": {}})
        case["candidate"] += pair.candidate
        case["baseline"] += pair.baseline
        case["n"] += 1
        case["criteria"][pair.criterion] = [pair.candidate, pair.baseline]
    n_pairs = sum(c["n"] for c in cases.values())
    if not n_pairs:
        return {"cases": 0, "pairs": 0, "candidate_mean": None, "mean": None, "diff": None, "ci95": None,
                "worse": [], "better": [], "n_worse": 0, "n_better": 0, "n_unchanged": 0}
    candidate_sum = sum(c["candidate"] for c in cases.values())
    baseline_sum = sum(c["baseline"] for c in cases.values())
    diff = (candidate_sum - baseline_sum) / n_pairs

    ci = None
    if len(cases) >= 2 and resamples > 0:
        differences = np.array([c["candidate"] - c["baseline"] for c in cases.values()], dtype=float)
        counts = np.array([c["n"] for c in cases.values()], dtype=float)
        rng = np.random.default_rng(seed)
        n = len(cases)
        per_draw = max(1, INDICES_AT_ONCE // n)
        estimates = []
        for start in range(0, resamples, per_draw):
            drawn = rng.integers(0, n, size=(min(per_draw, resamples - start), n))
            estimates.append(differences[drawn].sum(axis=1) / counts[drawn].sum(axis=1))
        ci = _percentile_interval(np.concatenate(estimates))

    changes = [
        {
            "case_id": case_id,
            "candidate": case["candidate"] / case["n"],
            "baseline": case["baseline"] / case["n"],
            "diff": (case["candidate"] - case["baseline"]) / case["n"],
            "criteria": case["criteria"],
        }
        for case_id, case in cases.items()
    ]
    worse = sorted((c for c in changes if c["diff"] < 0), key=lambda c: (c["diff"], c["case_id"]))
    better = sorted((c for c in changes if c["diff"] > 0), key=lambda c: (-c["diff"], c["case_id"]))
    return {
        "cases": len(cases),
        "pairs": n_pairs,
        "candidate_mean": candidate_sum / n_pairs,
        "mean": baseline_sum / n_pairs,
        "diff": diff,
        "ci95": ci,
        "worse": worse[:shown],
        "better": better[:shown],
        "n_worse": len(worse),
        "n_better": len(better),
        "n_unchanged": len(changes) - len(worse) - len(better),
    }


def _interval_text(ci: list[float] | None) -> str:
    return f", 95% interval [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""


def baseline_reasons(baseline: dict | None, *, rule: str = MEAN_RULE, skipped_blocks: bool = False) -> list[str]:
    """Why a run's comparison with its baseline blocks the release (empty: it does not).

    The seed's rule (the default): the run's mean on the shared cases is below the baseline's mean on the
    same cases. The regression rule (a lead's policy): the paired difference's 95% interval lies entirely
    below zero. A baseline that could not be compared blocks only under a lead's policy.
    """
    if not baseline:
        return []
    how = baseline.get("how")
    source = baseline.get("source") or "the baseline"
    if how == SKIPPED:
        return [f"no comparable baseline: {baseline.get('reason') or 'the comparison was skipped'}"] if skipped_blocks else []
    if how == GIVEN:
        mean, candidate = baseline.get("mean"), baseline.get("candidate_mean")
        if mean is not None and candidate is not None and candidate < mean:
            return [f"mean {candidate:.3f} is below {source} {mean:.3f}"]
        return []
    diff, ci = baseline.get("diff"), baseline.get("ci95")
    if diff is None:
        return []
    n = baseline["cases"]
    shared = f"{n} case{'s' if n != 1 else ''}"
    if rule == REGRESSION_RULE:
        if ci and ci[1] < 0:
            line = (
                f"a regression against {source}: the paired difference {diff:+.3f} on the {shared} both were judged on "
                f"has a 95% interval [{ci[0]:+.3f}, {ci[1]:+.3f}] entirely below zero"
            )
            return [line]
        return []
    if diff < 0:
        line = (
            f"mean {baseline['candidate_mean']:.3f} on the {shared} shared with {source} is below its "
            f"{baseline['mean']:.3f} on the same cases (difference {diff:+.3f}{_interval_text(ci)})"
        )
        return [line]
    return []


def gate_decision(
    *,
    mean: float | None,
    threshold: float | None,
    invalid: bool,
    baseline_mean: float | None = None,
    baseline_label: str = "the last released mean",
    baseline: dict | None = None,
    baseline_rule: str = MEAN_RULE,
    skipped_blocks: bool = False,
    extra_reasons=(),
    corrected_low: float | None = None,
) -> dict:
    """Pass only when the run is valid, its mean clears the threshold and it is not below its baseline;
    with `corrected_low` (a lead's policy), the human-corrected interval's lower bound must clear it too.

    The baseline is either a comparison (`baseline`, see `paired_difference` and `baseline_reasons`) or a
    bare mean (`baseline_mean`, the seed's "previous release mean"), compared with the run's whole mean.
    """
    reasons = list(extra_reasons)
    if invalid:
        reasons.append("the run is invalid")
    if mean is None:
        reasons.append("no mean score")
    else:
        if threshold is not None and mean < threshold:
            reasons.append(f"mean {mean:.3f} is below the threshold {threshold:g}")
        if baseline_mean is not None and mean < baseline_mean:
            reasons.append(f"mean {mean:.3f} is below {baseline_label} {baseline_mean:.3f}")
    reasons += baseline_reasons(baseline, rule=baseline_rule, skipped_blocks=skipped_blocks)
    if corrected_low is not None and threshold is not None and corrected_low < threshold:
        reasons.append(f"the human-corrected mean's 95% lower bound {corrected_low:.3f} is below the threshold {threshold:g}")
    return {"passed": not reasons, "threshold": threshold, "baseline_mean": baseline_mean, "reasons": reasons}


def injection_line(report: dict | None) -> str:
    """The report's injection flags as one line of the gate ("" when the judged texts are clean)."""
    summary = (report or {}).get("flags_summary") or {}
    flags = (report or {}).get("flags") or []
    if not summary.get("flagged"):
        return ""
    shown = ", ".join(f"{f['case_id']} ({f['place']}: {f['rule'].replace('_', ' ')})" for f in flags[:3])
    more = summary["flagged"] - min(3, len(flags))
    return (
        f"judged content addresses the judge (prompt injection) in {summary['flagged']} place(s) of {summary['cases']} case(s): "
        f"{shown}{f' and {more} more' if more > 0 else ''}"
    )


def releases_trend(rows: list[dict]) -> dict | None:
    """SVG geometry of the released mean across releases, oldest first: a dot per release with its interval
    as a bar and a line per system through its releases."""
    points = [row for row in reversed(rows) if row["release"].mean is not None]
    if not points:
        return None
    width, height, pad, left = 640, 220, 30, 44
    values = [v for row in points for v in (row["release"].mean, *(row["ci"] or []))]
    low, high = min(values), max(values)
    margin = max(0.25, (high - low) * 0.1)
    low, high = low - margin, high + margin
    span = high - low

    def y(value: float) -> float:
        return round(height - pad - (value - low) / span * (height - 2 * pad), 1)

    step = (width - left - pad) / max(len(points), 1)
    shapes, lines = [], {}
    for i, row in enumerate(points):
        release = row["release"]
        x = round(left + (i + 0.5) * step, 1)
        shape = {"x": x, "y": y(release.mean), "mean": release.mean, "label": release.label or release.run.run_id,
                 "system": release.system.name, "passed": row["gate"]["passed"] if row["gate"] else None,
                 "y_low": y(row["ci"][0]) if row["ci"] else None, "y_high": y(row["ci"][1]) if row["ci"] else None}
        shapes.append(shape)
        lines.setdefault(release.system.name, []).append(f"{x},{shape['y']}")
    ticks = [{"value": round(low + span * k / 4, 2), "y": y(low + span * k / 4)} for k in range(5)]
    return {"width": width, "height": height, "left": left, "pad": pad, "points": shapes, "ticks": ticks,
            "lines": [{"system": name, "points": " ".join(coords)} for name, coords in lines.items() if len(coords) > 1]}
