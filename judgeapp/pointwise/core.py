"""Pointwise scoring: aggregation into the report (seed: LLM-as-Judge, Pointwise); the gate is judgeapp/releases.

Plain Python (numpy and scipy for the confidence intervals), no Django: the run handler feeds it the
scored items of a run, the tests feed it stub judges' scores.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass

from judgeapp.judging.accounting import UNUSABLE_LIMIT, counts_line, counts_reason, unit_counts

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
    if item.score is not None:
        return "parsed"
    if item.parse_error and not item.error:
        return "truncated" if item.truncated else "parse_failures"
    return "no_reply"


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


def bootstrap_mean_ci(scores: list[int]) -> list[float] | None:
    """The bootstrap 95% confidence interval of a mean, [low, high]; None with fewer than 2 scores."""
    if not scores:
        return None
    import numpy as np  # here, not at start-up: `gate` and every `--help` import this module

    sample = np.asarray(scores, dtype=float)
    return _interval((sample,), lambda x, axis=-1: np.mean(x, axis=axis), len(sample), float(sample.mean()))


def clustered_mean_ci(scores_by_case: dict[str, list[int]]) -> list[float] | None:
    """The interval of the overall mean, resampling whole cases: the criteria of one case are scored on
    the same reply and move together, so resampling single scores would make the interval too narrow."""
    groups = [scores for scores in scores_by_case.values() if scores]
    if not groups:
        return None
    import numpy as np

    sums = np.asarray([sum(g) for g in groups], dtype=float)
    counts = np.asarray([len(g) for g in groups], dtype=float)
    point = float(sums.sum() / counts.sum())
    return _interval(
        (sums, counts), lambda s, c, axis=-1: s.sum(axis=axis) / c.sum(axis=axis), len(groups), point, paired=True
    )


def summarize(
    items: list[ScoredItem], *, scale: tuple[int, int] = (1, 5), lowest_n: int = LOWEST_N
) -> dict:
    scored = [i for i in items if i.score is not None]
    parse_failures = [i for i in items if i.score is None and i.parse_error and not i.error]
    errors = [i for i in items if i.score is None and (i.error or not i.parse_error)]
    counts = unit_counts(_accounting(i) for i in items)
    parse_failure_rate = len(parse_failures) / len(items) if items else 0.0

    by_criterion: dict[str, list[int]] = defaultdict(list)
    by_case: dict[str, list[int]] = defaultdict(list)
    for item in scored:
        by_criterion[item.criterion].append(item.score)
        by_case[item.case_id].append(item.score)
    low, high = scale
    points = range(low, high + 1)
    histogram = Counter(i.score for i in scored)
    lowest = sorted(scored, key=lambda i: (i.score, i.case_id, i.criterion))[:lowest_n]

    reasons = []
    reason = counts_reason(counts)
    if reason:
        reasons.append(reason)
    if not scored:
        reasons.append("no judgment was scored")

    mean = statistics.fmean(i.score for i in scored) if scored else None
    ci_observations = max((len(v) for v in by_criterion.values()), default=0)
    return {
        "mean": mean,
        "mean_ci95": clustered_mean_ci(by_case),
        "per_criterion": {name: statistics.fmean(scores) for name, scores in by_criterion.items()},
        "per_criterion_ci95": {name: bootstrap_mean_ci(scores) for name, scores in by_criterion.items()},
        "per_criterion_n": {name: len(scores) for name, scores in by_criterion.items()},
        "ci_method": f"bootstrap {_ci_method(max(len(by_case), ci_observations))}, {BOOTSTRAP_RESAMPLES} resamples, cases resampled for the overall mean",
        "histogram": {str(point): histogram.get(point, 0) for point in points},
        "histogram_per_criterion": {
            name: {str(point): scores.count(point) for point in points} for name, scores in by_criterion.items()
        },
        "lowest": [
            {"case_id": i.case_id, "criterion": i.criterion, "score": i.score, "reasoning": i.reasoning}
            | ({"judgment": i.ref} if i.ref else {})
            for i in lowest
        ],
        "judged": len(scored),
        "total": len(items),
        "parse_failures": len(parse_failures),
        "parse_failure_rate": parse_failure_rate,
        "judge_errors": len(errors),
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
    return (", ".join(parts) or "no figure") + where + status


def _one_line(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def report_markdown(report: dict) -> str:
    """The report as Markdown: the gate first, then the scores, the lowest cases and what to be wary of."""
    gate = report.get("gate") or {}
    passed = gate.get("passed")
    lines = [
        f"## Pointwise evaluation `{report.get('run_id')}`: gate {'PASSED' if passed else 'BLOCKED'}",
        "",
        f"**Mean {_fmt(report.get('mean'))}**{_fmt_ci(report.get('mean_ci95'))} over {report.get('judged', 0)} "
        f"of {report.get('total', 0)} judgments · threshold {gate.get('threshold', '—')} · "
        f"last released mean {_fmt(gate.get('baseline_mean'))}",
        "",
    ]
    if report.get("invalid"):
        lines += ["**The run is invalid:** " + "; ".join(report.get("invalid_reasons") or []), ""]
    if gate.get("reasons"):
        lines += ["Blocked because:", *[f"- {_one_line(r, 300)}" for r in gate["reasons"]], ""]
    calibration = gate.get("calibration")
    if calibration:
        lines += [f"Judge calibration: **{calibration['status']}** — {_one_line(calibration['summary'], 300)}", ""]
    for warning in gate.get("warnings") or []:
        lines.append(f"> {_one_line(warning, 300)}")
    corrected = report.get("corrected")
    if corrected:
        lines += [
            f"Human-corrected mean (PPI++): **{_fmt(corrected['mean'])}** (95% CI {corrected['ci95'][0]:.2f}–{corrected['ci95'][1]:.2f}), "
            f"{corrected['n_labelled']} items labelled by people, {corrected['n_unlabelled']} judged only",
            "",
        ]
    for note in gate.get("notes") or []:
        lines.append(f"> {_one_line(note, 300)}")
    if gate.get("notes"):
        lines.append("")
    for warning in report.get("warnings") or []:
        lines.append(f"> ⚠ {_one_line(warning, 300)}")
    if report.get("warnings"):
        lines.append("")

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

    lowest = report.get("lowest") or []
    if lowest:
        lines += ["Lowest-scoring cases:", "", "| case | criterion | score | judge's reasoning |", "|---|---|---|---|"]
        for item in lowest:
            lines.append(f"| {item['case_id']} | {item['criterion']} | {item['score']} | {_one_line(item.get('reasoning', ''))} |")
        lines.append("")

    rate = report.get("parse_failure_rate") or 0.0
    lines.append(f"Parse failures after one retry: {report.get('parse_failures', 0)} ({rate:.1%}).")
    if report.get("counts"):
        lines.append(counts_line(report["counts"]))
    judge = report.get("judge") or {}
    lines.append(
        f"Judge: {judge.get('model')} (family {judge.get('family')}, temperature {judge.get('temperature')})."
    )
    versions = report.get("versions") or {}
    lines.append("Versions: " + ", ".join(f"{k} `{v}`" for k, v in versions.items() if v) + ".")
    lines.append(f"Judge–human agreement: {_agreement_line(report.get('agreement'))}.")
    return "\n".join(lines) + "\n"
