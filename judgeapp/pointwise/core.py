"""Pointwise scoring: aggregation into the report (seed: LLM-as-Judge, Pointwise); the gate is judgeapp/releases.

Plain Python (numpy and scipy for the confidence intervals), no Django: the run handler feeds it the
scored items of a run, the tests feed it stub judges' scores.
"""

from __future__ import annotations

import math
import statistics
import warnings
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

from judgeapp.judging.accounting import (
    CATEGORIES,
    UNUSABLE_LIMIT,
    counts_line,
    counts_reason,
    money_text,
    tally_counts,
    unit_category,
    usage_line,
)
from judgeapp.judging.batches import ROWS_AT_ONCE
from judgeapp.judging.lazy import LazyModule
from judgeapp.judging.noise import noise_line

np = LazyModule("numpy")  # imported by the first report, not by `gate` or `--help`

# Stop rule: more than 5% of judge replies still unparseable after one retry each -> the run is invalid. The
# share is over every unit (CONTRACT §6): a reply cut at max_tokens and a judgment with no reply at all count
# against it as well, so that a failure cannot leave the count by becoming a different failure.
PARSE_FAILURE_LIMIT = UNUSABLE_LIMIT
LOWEST_N = 10
CONFIDENCE = 0.95
# 2,000 resamples are plenty for a 95% interval (Efron & Tibshirani) and cost a tenth of 9,999: the report is
# built while the run's last judgment waits, so its time is on the run's wall clock.
BOOTSTRAP_RESAMPLES = 2000
# BCa needs a jackknife over every observation (n x n values); past this many, the percentile interval.
BCA_MAX_OBSERVATIONS = 2000
# Fixed, so that the same scores always give the same report.
BOOTSTRAP_SEED = 20240601
# Resamples are drawn this many values at a time (the batch changes no figure, only the memory): all 2,000
# resamples of 100,000 scores at once held several gigabytes.
BOOTSTRAP_VALUES_AT_ONCE = 2_000_000


@dataclass
class ScoredItem:
    case_id: str
    criterion: str
    score: int | None
    reasoning: str = ""
    parse_error: str = ""
    error: str = ""  # the judge never answered (after its retries), or there was nothing to judge
    truncated: bool = False  # the reply was cut at the judge's max_tokens (a parse failure with that reason)
    ref: str = ""  # the judgment's id, so a report line can link to its drill-down


def _accounting(item: ScoredItem) -> str:
    return unit_category(
        usable=item.score is not None, unreadable=bool(item.parse_error and not item.error), truncated=item.truncated
    )


def _ci_method(n: int) -> str:
    return "BCa" if n <= BCA_MAX_OBSERVATIONS else "percentile"


def _interval(data: tuple, statistic, n: int, point: float, **kwargs) -> list[float] | None:
    if n < 2:
        return None
    with warnings.catch_warnings():
        # A sample where every value is equal is degenerate for BCa; its interval is the point itself.
        warnings.simplefilter("ignore")
        from scipy import stats  # half a second to import: loaded here, not when a command starts

        result = stats.bootstrap(
            data,
            statistic,
            n_resamples=BOOTSTRAP_RESAMPLES,
            confidence_level=CONFIDENCE,
            method=_ci_method(n),
            vectorized=True,
            random_state=BOOTSTRAP_SEED,
            batch=max(1, BOOTSTRAP_VALUES_AT_ONCE // n),
            **kwargs,
        )
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    if math.isnan(low) or math.isnan(high):
        return [point, point]
    return [round(low, 4), round(high, 4)]


def bootstrap_mean_ci(scores) -> list[float] | None:
    """The bootstrap 95% confidence interval of a mean, [low, high]; None with fewer than 2 scores."""
    sample = np.asarray(scores, dtype=float)
    if not len(sample):
        return None
    return _interval((sample,), lambda x, axis=-1: np.mean(x, axis=axis), len(sample), float(sample.mean()))


def clustered_mean_ci(sums: np.ndarray, counts: np.ndarray) -> list[float] | None:
    """The interval of the overall mean, resampling whole cases (each case's sum and count of scores):
    the criteria of one case are scored on the same reply and move together, so resampling single
    scores would make the interval too narrow."""
    if not len(sums):
        return None
    point = float(sums.sum() / counts.sum())
    return _interval(
        (sums, counts), lambda s, c, axis=-1: s.sum(axis=axis) / c.sum(axis=axis), len(sums), point, paired=True
    )


# Scored items are kept this many at a time before their case ids go into an array (and the lowest are cut
# back to `lowest_n`): a run's report holds no item per unit.
ITEMS_AT_ONCE = ROWS_AT_ONCE


class _Scores:
    """Every scored item's score, criterion and case, in compact arrays in the items' order (the report
    needs no more of an item, except for the lowest few): a 100,000-unit run's report keeps no object per
    unit alive."""

    def __init__(self):
        self.scores = array("d")
        self.criterion_index = array("q")
        self.criteria: dict[str, int] = {}  # in the order each was first scored
        self.case_chunks: list[np.ndarray] = []
        self.cases: list[str] = []

    def add(self, item: ScoredItem) -> None:
        self.scores.append(item.score)
        self.criterion_index.append(self.criteria.setdefault(item.criterion, len(self.criteria)))
        # A closing character: numpy's fixed-width strings drop trailing NULs, and "a\0" is not case "a".
        self.cases.append(item.case_id + "|")
        if len(self.cases) >= ITEMS_AT_ONCE:
            self.case_chunks.append(np.array(self.cases))
            self.cases = []

    def by_criterion(self) -> dict[str, np.ndarray]:
        scores, index = np.frombuffer(self.scores, dtype=float), np.frombuffer(self.criterion_index, dtype=np.int64)
        return {name: scores[index == position] for name, position in self.criteria.items()}

    def by_case(self) -> tuple[np.ndarray, np.ndarray]:
        """Each case's sum and count of scores, the cases in the order they were first scored."""
        chunks = self.case_chunks + ([np.array(self.cases)] if self.cases else [])
        if not chunks:
            return np.zeros(0), np.zeros(0)
        _, first, inverse = np.unique(np.concatenate(chunks), return_index=True, return_inverse=True)
        position = np.empty(len(first), dtype=np.intp)
        position[np.argsort(first)] = np.arange(len(first))
        case_of = position[inverse]
        sums = np.bincount(case_of, weights=np.frombuffer(self.scores, dtype=float), minlength=len(first))
        return sums, np.bincount(case_of, minlength=len(first)).astype(float)


def _lowest_key(item: ScoredItem) -> tuple:
    return item.score, item.case_id, item.criterion


def summarize(
    items: Iterable[ScoredItem], *, scale: tuple[int, int] = (1, 5), lowest_n: int = LOWEST_N
) -> dict:
    """The report's figures from every item, in one pass: `items` may be an iterator over a run's units
    read a batch at a time, and what is kept of them is compact (`_Scores`) plus the lowest few."""
    tally = dict.fromkeys(CATEGORIES, 0)
    total = parse_failure_count = error_count = 0
    scored = _Scores()
    lowest: list[ScoredItem] = []
    for item in items:
        total += 1
        tally[_accounting(item)] += 1
        if item.score is None:
            if item.parse_error and not item.error:
                parse_failure_count += 1
            else:
                error_count += 1
            continue
        scored.add(item)
        lowest.append(item)
        if len(lowest) >= lowest_n + ITEMS_AT_ONCE:
            # Sorting is stable and the kept ones came first: the same as sorting every item at the end.
            lowest = sorted(lowest, key=_lowest_key)[:lowest_n]
    lowest = sorted(lowest, key=_lowest_key)[:lowest_n]
    counts = tally_counts(tally)
    parse_failure_rate = parse_failure_count / total if total else 0.0

    by_criterion = scored.by_criterion()
    case_sums, case_counts = scored.by_case()
    all_scores = np.frombuffer(scored.scores, dtype=float)
    low, high = scale
    points = range(low, high + 1)

    reasons = []
    reason = counts_reason(counts)
    if reason:
        reasons.append(reason)
    if not len(all_scores):
        reasons.append("no judgment was scored")

    mean = statistics.fmean(all_scores) if len(all_scores) else None
    ci_observations = max((len(v) for v in by_criterion.values()), default=0)
    return {
        "mean": mean,
        "mean_ci95": clustered_mean_ci(case_sums, case_counts),
        "per_criterion": {name: statistics.fmean(scores) for name, scores in by_criterion.items()},
        "per_criterion_ci95": {name: bootstrap_mean_ci(scores) for name, scores in by_criterion.items()},
        "per_criterion_n": {name: len(scores) for name, scores in by_criterion.items()},
        "ci_method": (
            f"bootstrap {_ci_method(max(len(case_sums), ci_observations))}, {BOOTSTRAP_RESAMPLES} resamples, "
            f"cases resampled for the overall mean"
        ),
        # A trials' mean score (--trials K) counts at its nearest point, rounded half up.
        "histogram": {str(point): int(np.count_nonzero(np.floor(all_scores + 0.5) == point)) for point in points},
        "histogram_per_criterion": {
            name: {str(point): int(np.count_nonzero(np.floor(scores + 0.5) == point)) for point in points}
            for name, scores in by_criterion.items()
        },
        "lowest": [
            {"case_id": i.case_id, "criterion": i.criterion, "score": i.score, "reasoning": i.reasoning}
            | ({"judgment": i.ref} if i.ref else {})
            for i in lowest
        ],
        "judged": len(all_scores),
        "total": total,
        "parse_failures": parse_failure_count,
        "parse_failure_rate": parse_failure_rate,
        "judge_errors": error_count,
        "counts": counts,
        "invalid": bool(reasons),
        "invalid_reasons": reasons,
    }



# --- The Markdown summary a CI job can post -------------------------------------------------------------


def _fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _fmt_ci(ci: list[float] | None) -> str:
    return "" if not ci else f" (95% CI {ci[0]:.2f}–{ci[1]:.2f})"


def _agreement_line(agreement: dict | None) -> str:
    """The report's `agreement` as one sentence: the figure, the sample, its status (never the dict)."""
    if not agreement:
        return "no human-scored sample yet"
    parts = []
    if agreement.get("kappa") is not None:
        kappa = f"{agreement['kappa']:.2f}"
        parts.append(f"Cohen's kappa {'0.00' if kappa == '-0.00' else kappa}")
    if agreement.get("agreement") is not None:
        parts.append(f"{agreement['agreement']:.0%} exact agreement")
    sample = agreement.get("sample_run_id")
    where = f" on {agreement.get('n_items', '?')} items of a sample of {sample}" if sample else ""
    status = f" ({agreement['status']})" if agreement.get("status") else ""
    # The slices come worst first by the level's metric (calibration/core/slices.py).
    worst = next(iter(agreement.get("slices") or []), None)
    metric = (agreement.get("level") or {}).get("metric", "kappa")
    figure = (worst or {}).get(metric) or {}
    slices = (
        f"; worst tag {worst['tag']}: {metric} {figure['value']:.2f} on {worst['n_items']} items"
        if figure.get("value") is not None else ""
    )
    return (", ".join(parts) or "no figure") + where + status + slices


def one_line(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


HOW_COMPARED = {
    "same": "judged the same way, paired by case",
    "rejudged": "its replies judged again with this run's rubric, prompt and judge, paired by case",
    "given": "a mean given by hand",
    "skipped": "not compared",
}


def baseline_line(baseline: dict | None) -> str:
    """The baseline comparison in one sentence: what, how, the paired difference and its interval."""
    if not baseline:
        return "no baseline"
    how = baseline.get("how")
    if how == "skipped":
        return f"{baseline.get('source') or 'baseline'}: not compared — {baseline.get('reason')}"
    if how == "given":
        return f"{baseline.get('source')} {_fmt(baseline.get('mean'), 3)}"
    ci = baseline.get("ci95")
    interval = f", 95% CI {ci[0]:+.3f} to {ci[1]:+.3f}" if ci else ""
    return (
        f"{baseline.get('source')} ({HOW_COMPARED.get(how, how)}): on {baseline.get('cases')} shared cases "
        f"{_fmt(baseline.get('candidate_mean'), 3)} vs {_fmt(baseline.get('mean'), 3)}, "
        f"difference {baseline['diff']:+.3f}{interval}; {baseline.get('n_worse', 0)} worse, {baseline.get('n_better', 0)} better"
    )


def usage_lines(report: dict) -> list[str]:
    """What the run's judge calls used and cost, and where its budget stopped it (judging/costs.py)."""
    lines = [usage_line(report["usage"])] if report.get("usage") else []
    if report.get("stopped") == "budget":
        budget = report.get("budget") or {}
        lines.append(
            f"Stopped at the budget of {money_text(budget.get('limit'))}: {budget.get('units_judged')} judgments made, "
            f"{budget.get('units_not_judged')} not; cases judged: {budget.get('cases_judged_count')}."
        )
    return lines


def report_markdown(report: dict) -> str:
    """The report as Markdown: the gate first, then the scores, the lowest cases and what to be wary of."""
    gate = report.get("gate") or {}
    lines = [
        *_markdown_head(report, gate), *_markdown_gate(report, gate), *_markdown_scores(report),
        *_markdown_cases(report, gate), *_markdown_footer(report),
    ]
    return "\n".join(lines) + "\n"


def _markdown_head(report: dict, gate: dict) -> list[str]:
    passed = gate.get("passed")
    lines = [
        f"## Pointwise evaluation `{report.get('run_id')}`: gate {'PASSED' if passed else 'BLOCKED'}",
        "",
        f"**Mean {_fmt(report.get('mean'))}**{_fmt_ci(report.get('mean_ci95'))} over {report.get('judged', 0)} "
        f"of {report.get('total', 0)} judgments · threshold {gate.get('threshold', '—')}",
        "",
        *([f"Noise: {noise_line(report['noise'])}.", ""] if report.get("noise") else []),
        f"Baseline: {one_line(baseline_line(gate.get('baseline', report.get('baseline'))), 400)}",
        "",
        *([f"Outputs: {one_line(report['outputs'], 300)}", ""] if isinstance(report.get("outputs"), str) else []),
    ]
    return lines


def _markdown_gate(report: dict, gate: dict) -> list[str]:
    lines: list[str] = []
    if report.get("invalid"):
        lines += ["**The run is invalid:** " + "; ".join(report.get("invalid_reasons") or []), ""]
    if gate.get("reasons"):
        lines += ["Blocked because:", *[f"- {one_line(r, 300)}" for r in gate["reasons"]], ""]
    calibration = gate.get("calibration")
    if calibration:
        lines += [f"Judge calibration: **{calibration['status']}** — {one_line(calibration['summary'], 300)}", ""]
    for warning in gate.get("warnings") or []:
        lines.append(f"> {one_line(warning, 300)}")
    corrected = report.get("corrected")
    if corrected:
        lines += [
            f"Human-corrected mean (PPI++): **{_fmt(corrected['mean'])}** (95% CI "
            f"{corrected['ci95'][0]:.2f}–{corrected['ci95'][1]:.2f}), "
            f"{corrected['n_labelled']} items labelled by people, {corrected['n_unlabelled']} judged only",
            "",
        ]
    for note in gate.get("notes") or []:
        lines.append(f"> {one_line(note, 300)}")
    if gate.get("notes"):
        lines.append("")
    for warning in report.get("warnings") or []:
        lines.append(f"> ⚠ {one_line(warning, 300)}")
    if report.get("warnings"):
        lines.append("")
    return lines


def _markdown_scores(report: dict) -> list[str]:
    lines: list[str] = []
    lines += ["| criterion | mean | 95% CI | n |", "|---|---|---|---|"]
    cis = report.get("per_criterion_ci95") or {}
    counts = report.get("per_criterion_n") or {}
    for name, mean in (report.get("per_criterion") or {}).items():
        ci = cis.get(name)
        lines.append(f"| {name} | {_fmt(mean)} | {f'{ci[0]:.2f}–{ci[1]:.2f}' if ci else '—'} | {counts.get(name, '')} |")
    lines.append("")

    histogram = report.get("histogram") or {}
    top = max(histogram.values(), default=0) or 1
    lines += ["Score histogram:", "```"]
    for point, count in histogram.items():
        lines.append(f"{point} | {'█' * round(20 * count / top):<20} {count}")
    lines += ["```", ""]
    return lines


def _markdown_cases(report: dict, gate: dict) -> list[str]:
    lines: list[str] = []
    worse = (gate.get("baseline") or report.get("baseline") or {}).get("worse") or []
    if worse:
        lines += [
            "Cases that got worse than the baseline, worst first:", "", "| case | this run | baseline | difference |",
            "|---|---|---|---|"
        ]
        for case in worse:
            lines.append(
                f"| {one_line(case['case_id'], 80)} | {_fmt(case['candidate'])} | "
                f"{_fmt(case['baseline'])} | {case['diff']:+.2f} |"
            )
        lines.append("")

    lowest = report.get("lowest") or []
    if lowest:
        lines += ["Lowest-scoring cases:", "", "| case | criterion | score | judge's reasoning |", "|---|---|---|---|"]
        for item in lowest:
            lines.append(f"| {item['case_id']} | {item['criterion']} | {item['score']} | {one_line(item.get('reasoning', ''))} |")
        lines.append("")
    return lines


def _markdown_footer(report: dict) -> list[str]:
    lines: list[str] = []
    if report.get("counts"):
        lines.append(counts_line(report["counts"]))
    else:  # a report stored before the counts were kept
        rate = report.get("parse_failure_rate") or 0.0
        lines.append(f"Parse failures after one retry: {report.get('parse_failures', 0)} ({rate:.1%}).")
    lines += usage_lines(report)
    judge = report.get("judge") or {}
    lines.append(
        f"Judge: {judge.get('model')} (family {judge.get('family')}, temperature {judge.get('temperature')})."
    )
    prompt = report.get("prompt") or {}
    if prompt.get("name"):
        lines.append(f"Prompt: {prompt['name']} ({prompt['version']}, `{prompt['hash']}`).")
    versions = report.get("versions") or {}
    lines.append("Versions: " + ", ".join(f"{k} `{v}`" for k, v in versions.items() if v) + ".")
    lines.append(f"Judge–human agreement: {_agreement_line(report.get('agreement'))}.")
    return lines
