"""A judge's run-to-run noise (`--trials K`): every judgment asked K times, the verdict used, and what the
trials say about the judge. Plain Python (numpy, statsmodels, scikit-learn, loaded on first use), no Django.

An item is one judgment a run asks K times: a (case, criterion) of a pointwise run, an order of a pair, a
juror's vote. Its trials' verdicts are a list with None where a trial gave no usable verdict.

- The verdict used: the majority of the trials for categorical verdicts (pairwise, pass/fail), with a tied
  majority giving `tie` (pairwise) or `fail` (pass/fail); the mean of the trials for 1-5 scores.
- `changed_share`: the share of items (with two or more usable trials) whose trials did not all agree, with
  a Wilson 95% interval.
- `retest_agreement`: Fleiss' kappa across the K trials (statsmodels) for categorical verdicts; for scores,
  the mean quadratic-weighted Cohen's kappa over every pair of trials (scikit-learn). Over the items with
  every trial usable.
- `band`: the lowest and highest per-trial figure (the mean score of trial t over the items, or the share of
  the first category: pass, A): the range the headline figure moved in across trials.
- `interval`: the headline figure's 95% interval with the trials' spread folded in: a two-level percentile
  bootstrap that resamples cases, then each drawn item's trials.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from judgeapp.judging.errors import InputError
from judgeapp.judging.lazy import LazyModule
from judgeapp.judging.stats import wilson_interval

np = LazyModule("numpy")

MAX_TRIALS = 10
MEAN = "mean"
MAJORITY = "majority"
# What a tied majority gives: the verdict that claims the least.
TIE_PAIRWISE = "tie"
TIE_PASS_FAIL = "fail"
CONFIDENCE = 0.95
NOISE_RESAMPLES = 2000
NOISE_SEED = 20240601
# Above this many (item, trial) values a resample costs too much on the run's tail: fewer resamples.
NOISE_VALUES_FULL = 200_000
NOISE_RESAMPLES_LARGE = 200
INTERVAL_METHOD = (
    "two-level percentile bootstrap: cases resampled, then each drawn item's trials, "
    f"{NOISE_RESAMPLES} resamples (fewer past {NOISE_VALUES_FULL:,} trial verdicts)"
)
CATEGORICAL_AGREEMENT = "Fleiss' kappa across the trials (statsmodels)"
SCORE_AGREEMENT = "mean quadratic-weighted Cohen's kappa over every pair of trials (scikit-learn)"


def trials_check(trials: int | None) -> int:
    """The trials asked for, 1 when not given; an InputError (one line) outside 1..MAX_TRIALS."""
    if trials is None:
        return 1
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= MAX_TRIALS:
        raise InputError(f"--trials must be a whole number from 1 to {MAX_TRIALS}, not {trials!r}")
    return trials


def majority(values: Sequence, *, tie) -> object | None:
    """The most frequent of the usable values (None skipped); `tie` when two or more share the top count;
    None when no value is usable."""
    counts = Counter(v for v in values if v is not None).most_common()
    if not counts:
        return None
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return tie
    return counts[0][0]


def trials_mean(values: Sequence) -> float | None:
    usable = [v for v in values if v is not None]
    return round(sum(usable) / len(usable), 4) if usable else None


def verdict_used(values: Sequence, *, rule: str, tie=None):
    return trials_mean(values) if rule == MEAN else majority(values, tie=tie)


@dataclass
class NoiseItem:
    """One judgment asked K times: its case (the bootstrap's cluster), its criterion, each trial's verdict."""

    case_id: str
    criterion: str
    verdicts: list
    judge: str = ""


def wilson(successes: int, n: int) -> list[float] | None:
    interval = wilson_interval(successes, n, confidence=CONFIDENCE)
    return [round(bound, 4) for bound in interval] if interval else None


def changed_share(items: Sequence[NoiseItem]) -> dict:
    """The share of items whose usable trials (two or more) did not all give the same verdict."""
    compared = [[v for v in item.verdicts if v is not None] for item in items]
    compared = [values for values in compared if len(values) >= 2]
    changed = sum(1 for values in compared if len(set(values)) > 1)
    n = len(compared)
    return {"changed": changed, "items": n, "share": round(changed / n, 4) if n else None, "ci95": wilson(changed, n)}


def complete_rows(items: Sequence[NoiseItem]) -> list[list]:
    return [list(item.verdicts) for item in items if item.verdicts and all(v is not None for v in item.verdicts)]


def fleiss(rows: list[list]) -> float | None:
    """Fleiss' kappa of items (rows) by trials (columns), statsmodels' own; None when undefined."""
    if len(rows) < 2 or len(rows[0]) < 2:
        return None
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    categories = sorted({str(v) for row in rows for v in row})
    coded = np.array([[categories.index(str(v)) for v in row] for row in rows])
    table, _ = aggregate_raters(coded)
    value = float(fleiss_kappa(table, method="fleiss"))
    return None if math.isnan(value) else round(value, 4)


def pairwise_weighted_kappa(rows: list[list]) -> float | None:
    """The mean quadratic-weighted Cohen's kappa over every pair of trials (columns); None when undefined."""
    if len(rows) < 2 or len(rows[0]) < 2:
        return None
    from sklearn.metrics import cohen_kappa_score

    columns = list(zip(*rows))
    values = []
    for i in range(len(columns)):
        for j in range(i + 1, len(columns)):
            if len(set(columns[i]) | set(columns[j])) < 2:
                continue  # one value throughout: kappa is undefined
            values.append(cohen_kappa_score(columns[i], columns[j], weights="quadratic"))
    values = [v for v in values if not math.isnan(v)]
    return round(float(sum(values) / len(values)), 4) if values else None


def _numeric(value, positive) -> float | None:
    """A verdict as a number for the headline figure: a score as it is; a category 1 when it is `positive`,
    0.5 for a tie, else 0."""
    if value is None:
        return None
    if positive is None:
        return float(value)
    if value == positive:
        return 1.0
    return 0.5 if value == "tie" else 0.0


def trial_band(items: Sequence[NoiseItem], *, trials: int, positive=None) -> list[float] | None:
    """[lowest, highest] of the per-trial figures: trial t's mean over the items it gave a verdict on."""
    figures = []
    for t in range(trials):
        values = [
            _numeric(item.verdicts[t], positive) for item in items if t < len(item.verdicts) and item.verdicts[t] is not None
        ]
        if values:
            figures.append(sum(values) / len(values))
    return [round(min(figures), 4), round(max(figures), 4)] if figures else None


def two_level_interval(
    items: Sequence[NoiseItem], *, positive=None, resamples: int = NOISE_RESAMPLES, seed: int = NOISE_SEED
) -> list[float] | None:
    """The 95% interval of the mean of the items' trial means: resample the cases with replacement, then
    within each drawn case each item's usable trials with replacement (numpy's default_rng(seed)); the
    2.5th and 97.5th percentiles. None with fewer than two cases."""
    values = [[_numeric(v, positive) for v in item.verdicts if v is not None] for item in items]
    kept = [(item.case_id, row) for item, row in zip(items, values) if row]
    cases = sorted({case for case, _ in kept})
    if len(cases) < 2:
        return None
    width = max(len(row) for _, row in kept)
    matrix = np.full((len(kept), width), np.nan)
    for i, (_, row) in enumerate(kept):
        matrix[i, : len(row)] = row
    usable = (~np.isnan(matrix)).sum(axis=1)
    case_index = {case: i for i, case in enumerate(cases)}
    case_of = np.array([case_index[case] for case, _ in kept])
    rng = np.random.default_rng(seed)
    if matrix.size > NOISE_VALUES_FULL:
        resamples = min(resamples, NOISE_RESAMPLES_LARGE)
    rows = np.arange(len(kept))[:, None]
    estimates = np.empty(resamples)
    for b in range(resamples):
        drawn = np.bincount(rng.integers(0, len(cases), size=len(cases)), minlength=len(cases))
        picks = (rng.random((len(kept), width)) * usable[:, None]).astype(int)
        item_means = matrix[rows, picks].mean(axis=1)
        weights = drawn[case_of]
        estimates[b] = (weights * item_means).sum() / weights.sum()
    low, high = np.percentile(estimates, [100 * (1 - CONFIDENCE) / 2, 100 * (1 + CONFIDENCE) / 2])
    return [round(float(low), 4), round(float(high), 4)]


def noise_figures(items: Sequence[NoiseItem], *, trials: int, rule: str, positive=None) -> dict:
    """The noise of one group of items (a criterion, or all of them)."""
    rows = complete_rows(items)
    scores = rule == MEAN
    return {
        "trials": trials,
        "items": len(items),
        "changed_share": changed_share(items),
        "retest_agreement": {
            "kappa": pairwise_weighted_kappa(rows) if scores else fleiss(rows),
            "method": SCORE_AGREEMENT if scores else CATEGORICAL_AGREEMENT,
            "items": len(rows),
        },
        "verdict_used": rule,
        "band": trial_band(items, trials=trials, positive=positive),
        "band_of": "the mean score" if scores else f"the share of {positive!r}",
        "interval": two_level_interval(items, positive=positive),
        "interval_method": INTERVAL_METHOD,
    }


def noise_slices(items: Sequence[NoiseItem], tags: dict[str, list[str]], *, trials: int, rule: str, positive=None) -> list[dict]:
    """The noise per tag of the items' cases (calibration's slices), the noisiest first: [{tag, ...figures}]."""
    tagged: dict[str, list[NoiseItem]] = {}
    for item in items:
        for tag in tags.get(item.case_id, ()):
            tagged.setdefault(tag, []).append(item)
    slices = [{"tag": tag, **noise_figures(group, trials=trials, rule=rule, positive=positive)} for tag, group in tagged.items()]
    return sorted(slices, key=lambda s: (-(s["changed_share"]["share"] or 0.0), s["tag"]))


def noise_report(
    items: Sequence[NoiseItem], *, trials: int, rule: str, positive=None, tie=None, tags: dict[str, list[str]] | None = None
) -> dict | None:
    """The report's `noise` key: None for a single trial; else overall, per criterion (items without a
    criterion are only overall) and per tag of the cases (`slices`, empty without tags)."""
    if trials < 2:
        return None
    report = noise_figures(items, trials=trials, rule=rule, positive=positive)
    report["tie_rule"] = None if rule == MEAN else f"a tied majority gives {tie!r}"
    criteria = sorted({item.criterion for item in items if item.criterion})
    report["per_criterion"] = {
        name: noise_figures([i for i in items if i.criterion == name], trials=trials, rule=rule, positive=positive)
        for name in criteria
    }
    judges = sorted({item.judge for item in items if item.judge})
    # A panel (a jury): each juror's own noise, which its scorecard shows.
    report["per_judge"] = {
        name: noise_figures([i for i in items if i.judge == name], trials=trials, rule=rule, positive=positive)
        for name in judges
    } if len(judges) > 1 else {}
    report["slices"] = noise_slices(items, tags or {}, trials=trials, rule=rule, positive=positive)
    return report


def inside(value: float | None, band: list[float] | None) -> bool:
    return value is not None and band is not None and band[0] <= value <= band[1]


def flaky_lines(*, band: list[float] | None, threshold: float | None, baseline: float | None) -> list[str]:
    """The gate's `flaky` in words: the threshold or the baseline lies inside the trials' band."""
    if band is None:
        return []
    ranged = f"trial means ranged {band[0]:.2f}–{band[1]:.2f}"
    lines = []
    if inside(threshold, band):
        lines.append(f"{ranged}; the threshold {threshold:g} lies inside: flaky")
    if inside(baseline, band):
        lines.append(f"{ranged}; the baseline {baseline:.2f} lies inside: flaky")
    return lines


def noise_line(noise: dict | None) -> str:
    """The noise in one sentence (the summary, the Markdown report, the run page)."""
    if not noise:
        return ""
    changed = noise["changed_share"]
    kappa = noise["retest_agreement"]["kappa"]
    share = "—" if changed["share"] is None else f"{changed['share']:.0%}"
    ci = changed.get("ci95")
    interval = f" (95% CI {ci[0]:.0%}–{ci[1]:.0%})" if ci else ""
    band = noise.get("band")
    moved = f"; trial figures ranged {band[0]:.2f}–{band[1]:.2f}" if band else ""
    return (
        f"{noise['trials']} trials per judgment: {share}{interval} of {changed['items']} judgments "
        f"changed verdict across trials; "
        f"retest kappa {'—' if kappa is None else f'{kappa:.2f}'}; verdict used: the {noise['verdict_used']}{moved}"
    )
