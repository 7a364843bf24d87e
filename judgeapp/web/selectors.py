"""Reads of the shell: a judge's scorecard (its record with people, its pairwise position consistency, its
parse failures, cost and the runs and gates relying on it) and the calibration status beside every judge."""

from __future__ import annotations

from django.db.models import Avg, Count, Q, Sum

from calibration import selectors as calibration_selectors
from judgeapp.models import AuditLog, Judge, Judgment, Purpose, Run, RunKind, UnitStatus
from judgeapp.releases.selectors import gate_evaluate

RUNS_SCANNED = 2000
RUNS_SHOWN = 25
LOCK_ACTIONS = (AuditLog.Action.JUDGE_LOCKED, AuditLog.Action.JUDGE_UNLOCKED, AuditLog.Action.CANDIDATE_ADOPTED)


def judges_with_status(judges) -> dict[str, dict]:
    """{judge name: its calibration status in its current configuration}."""
    return {judge.name: calibration_selectors.judge_status(judge=judge) for judge in judges}


def run_calibration(*, run: Run) -> list[dict]:
    """The calibration status of each judge a run relied on (none for kinds people do not label)."""
    if not (run.config.get("judges") or {}):
        return []
    return calibration_selectors.calibration_for_run(run=run)


def runs_of_judge(*, name: str, version: str) -> list[Run]:
    """The runs that used this judge in this configuration (as a run's judge or a jury's juror), newest first."""
    runs = Run.objects.select_related("system").only(
        "run_id", "kind", "status", "config", "versions", "created_at", "report", "system__name", "title"
    ).order_by("-created_at")[:RUNS_SCANNED]
    return [run for run in runs if (run.config.get("judges") or {}).get(name, {}).get("version") == version]


def judge_versions(*, name: str) -> list[str]:
    versions = calibration_selectors.calibrated_versions(judge_name=name)
    for run in Run.objects.only("config").order_by("-created_at")[:RUNS_SCANNED]:
        version = (run.config.get("judges") or {}).get(name, {}).get("version")
        if version:
            versions.add(version)
    return sorted(versions)


def _trend(points: list[dict], threshold: float) -> dict:
    """SVG geometry of agreement over time: a dot per sample, its interval as a bar, the level as a line."""
    width, height, pad = 640, 200, 28
    values = [v for p in points for v in (p["value"], *(p["ci"] or [])) if v is not None] + [threshold]
    low, high = min(values + [0.0]), max(values + [1.0])
    span = (high - low) or 1.0

    def y(value: float) -> float:
        return round(height - pad - (value - low) / span * (height - 2 * pad), 1)

    n = len(points)
    shapes = []
    for i, point in enumerate(points):
        x = round(pad + (i + 0.5) * (width - 2 * pad) / max(n, 1), 1)
        shapes.append(
            {
                **point,
                "x": x,
                "y": y(point["value"]) if point["value"] is not None else None,
                "y_low": y(point["ci"][0]) if point["ci"] else None,
                "y_high": y(point["ci"][1]) if point["ci"] else None,
            }
        )
    return {"width": width, "height": height, "points": shapes, "level_y": y(threshold), "low": low, "high": high,
            "axis_low_y": y(low), "axis_high_y": y(high)}


def _position_consistency(runs: list[Run]) -> dict:
    """From every pairwise run the judge judged in both orders: the share of cases whose two orders agreed,
    and, where they did not, which position it favoured (the reply shown first or second)."""
    rows = []
    totals = {"both": 0, "agreed": 0, "first": 0, "second": 0}
    for run in runs:
        if run.kind != RunKind.PAIRWISE or not run.report:
            continue
        both = agreed = first = second = 0
        for case in run.report.get("cases", []):
            ab, ba = case.get("ab"), case.get("ba")
            if ab is None or ba is None:
                continue
            both += 1
            if ab == ba:
                agreed += 1
                continue
            # With A's reply first, "A" is the first position; with B's first, "B" is.
            first += (ab == "A") + (ba == "B")
            second += (ab == "B") + (ba == "A")
        if not both:
            continue
        rows.append({"run": run, "both": both, "agreed": agreed, "share": agreed / both, "first": first, "second": second})
        for key, value in (("both", both), ("agreed", agreed), ("first", first), ("second", second)):
            totals[key] += value
    favours = None
    if totals["first"] != totals["second"]:
        favours = "first" if totals["first"] > totals["second"] else "second"
    return {
        "runs": rows,
        "both": totals["both"],
        "share": totals["agreed"] / totals["both"] if totals["both"] else None,
        "first": totals["first"],
        "second": totals["second"],
        "favours": favours,
    }


def _has_field(model, name: str) -> bool:
    return any(f.name == name for f in model._meta.get_fields())


def _calls(*, name: str, runs: list[Run]) -> dict:
    """Per call of the judge: parse failures, truncation (where the judgments record it), latency, tokens."""
    judgments = Judgment.objects.filter(run__in=[r.pk for r in runs], judge__name=name, purpose=Purpose.JUDGE)
    finished = judgments.filter(status__in=[UnitStatus.DONE, UnitStatus.FAILED])
    figures = finished.aggregate(
        calls=Count("id"),
        parse_failures=Count("id", filter=Q(status=UnitStatus.FAILED) & ~Q(parse_error="") & Q(error="") & Q(truncated=False)),
        no_reply=Count("id", filter=Q(status=UnitStatus.FAILED) & ~Q(error="")),
        cached=Count("id", filter=Q(cached=True)),
    )
    called = finished.filter(cached=False, latency_ms__gt=0).aggregate(
        mean_latency_ms=Avg("latency_ms"), mean_prompt_tokens=Avg("prompt_tokens"), mean_completion_tokens=Avg("completion_tokens"),
        tokens_in=Sum("prompt_tokens"), tokens_out=Sum("completion_tokens"), measured=Count("id"),
    )
    calls = figures["calls"] or 0
    result = {
        **figures,
        **called,
        "parse_failure_rate": figures["parse_failures"] / calls if calls else None,
        "truncated": None,
        "truncation_rate": None,
    }
    # Truncation is recorded on judgments only where the run machinery marks it.
    if _has_field(Judgment, "truncated"):
        truncated = finished.filter(truncated=True).count()
        result["truncated"] = truncated
        result["truncation_rate"] = truncated / calls if calls else None
    return result


def scorecard(*, name: str, version: str) -> dict:
    """Everything the scorecard page of one judge configuration shows."""
    level = calibration_selectors.level_current()
    history = calibration_selectors.agreement_history(judge_name=name, judge_version=version)
    runs = runs_of_judge(name=name, version=version)
    shown = []
    for run in runs[:RUNS_SHOWN]:
        gate = gate_evaluate(run=run) if run.kind == RunKind.POINTWISE else None
        shown.append({"run": run, "gate": gate})
    locks = AuditLog.objects.filter(action__in=LOCK_ACTIONS, detail__judge=name, detail__judge_version=version).select_related(
        "run"
    ).order_by("-created_at", "-id")
    return {
        "name": name,
        "version": version,
        "judge": Judge.objects.filter(name=name).first(),
        "status": calibration_selectors.status_for(judge_name=name, judge_version=version),
        "history": history,
        "trend": _trend(history, level.threshold) if history else None,
        "level": level,
        "position": _position_consistency(runs),
        "calls": _calls(name=name, runs=runs),
        "runs": shown,
        "runs_total": len(runs),
        "lock": calibration_selectors.lock_of(judge_name=name, judge_version=version),
        "lock_history": list(locks[:50]),
        "versions": judge_versions(name=name),
        "adopted": calibration_selectors.adopted_candidate(judge_name=name),
    }
