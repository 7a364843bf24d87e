"""Reads for the release gate: releases, the leads' decisions, and the gate itself, computed fresh.

The gate is never read from a stored report alone: a lead's block or a calibration lock that appears after
a run finished must still close it, so every caller (`gate RUN_ID`, the gate page, the CLI's exit status)
asks `gate_evaluate`.
"""

from __future__ import annotations

from django.db.models import QuerySet
from django.utils import timezone

from judgeapp.models import AuditLog, GateDecision, Release, Run, RunKind, RunStatus, System
from judgeapp.releases.core import DEFAULT_THRESHOLD, gate_decision

RELEASE_ACTIONS = (
    AuditLog.Action.RELEASE_APPROVED,
    AuditLog.Action.RELEASE_BLOCKED,
    AuditLog.Action.RELEASE_MARKED,
)


def release_latest(*, system: System, exclude_run: Run | None = None) -> Release | None:
    """The system's most recent release (the gate's default baseline), other than `exclude_run`'s own."""
    releases = Release.objects.filter(system=system).select_related("run")
    if exclude_run is not None:
        releases = releases.exclude(run=exclude_run)
    return releases.order_by("-created_at", "-id").first()


def releases_recent(*, system: System | None = None, limit: int = 200) -> QuerySet[Release]:
    releases = Release.objects.select_related("system", "run", "released_by")
    if system is not None:
        releases = releases.filter(system=system)
    return releases.order_by("-created_at", "-id")[:limit]


def release_of_run(*, run: Run) -> Release | None:
    return Release.objects.filter(run=run).select_related("released_by").first()


def gate_decisions_of(*, run: Run) -> QuerySet[GateDecision]:
    return run.gate_decisions.select_related("decided_by").order_by("-created_at", "-id")


def gate_decision_in_force(*, run: Run) -> GateDecision | None:
    return gate_decisions_of(run=run).first()


def audit_release_entries(*, run: Run | None = None, limit: int = 200) -> QuerySet[AuditLog]:
    entries = AuditLog.objects.filter(action__in=RELEASE_ACTIONS).select_related("run", "actor")
    if run is not None:
        entries = entries.filter(run=run)
    return entries.order_by("-created_at", "-id")[:limit]


def _baseline(run: Run) -> tuple[float | None, str, str | None, list[str]]:
    """(baseline mean, where it came from, the baseline run's id, notes)."""
    options = run.options
    if options.get("baseline_run"):
        return options.get("baseline_mean"), f"run {options['baseline_run']} (--baseline-run)", options["baseline_run"], []
    if options.get("baseline_mean") is not None:
        return options["baseline_mean"], "given (--baseline-mean)", None, []
    if run.system_id is None:
        return None, "", None, ["no system under test, so no earlier release to compare with: the baseline check is skipped"]
    release = release_latest(system=run.system, exclude_run=run)
    if release is None:
        return None, "", None, [f"{run.system.name} has no earlier release: the baseline check is skipped"]
    label = f" ({release.label})" if release.label else ""
    return release.mean, f"last release of {run.system.name}{label}, run {release.run.run_id}", release.run.run_id, []


def gate_evaluate(
    *, run: Run, report: dict | None = None, status: str | None = None, include_lead_decision: bool = True
) -> dict:
    """The release gate of a pointwise run, now: valid, mean at or above the threshold and not below the
    last released mean, judge not locked by calibration (nor, under a lead's blocking policy, unchecked or
    stale), and not blocked by a lead. Under the lead's corrected-gate policy, the lower bound of the
    human-corrected (PPI++) interval must reach the threshold too.

    `report` and `status` default to the run's own; the run handler passes the ones it is about to write
    (with its `corrected` key; otherwise the corrected mean is computed now, from the labels as they are).
    """
    from calibration.selectors import corrected_for_run, gate_calibration

    if run.kind != RunKind.POINTWISE:
        raise ValueError(f"run {run.run_id} is a {run.kind} run; the release gate reads pointwise runs")
    options = run.options
    threshold = options.get("threshold")
    if threshold is None:
        threshold = DEFAULT_THRESHOLD
    baseline_mean, baseline_source, baseline_run, notes = _baseline(run)

    calibration = gate_calibration(run=run)
    warnings = ["warning: " + line for line in calibration["warnings"]]
    corrected_low = None
    if calibration["policy"]["corrected_gate"]:
        given = report is not None and "corrected" in report
        corrected = report["corrected"] if given else corrected_for_run(run=run)
        if corrected:
            corrected_low = corrected["ci95"][0]
        else:
            warnings.append("warning: no labelled sample for this judge configuration, so the corrected-mean check is skipped")
    report = run.report if report is None else report
    status = status or run.status

    reasons: list[str] = []
    if status in (RunStatus.QUEUED, RunStatus.RUNNING):
        reasons.append("the run has not finished")
    elif status == RunStatus.FAILED:
        reasons.append(f"the run failed: {run.error or 'no report'}")
    elif status == RunStatus.CANCELLED:
        reasons.append("the run was cancelled")
    if report:
        invalid = status == RunStatus.INVALID or bool(report.get("invalid"))
        decided = gate_decision(
            mean=report.get("mean"), threshold=threshold, baseline_mean=baseline_mean, invalid=invalid, corrected_low=corrected_low
        )
        details = "; ".join(report.get("invalid_reasons") or [])
        reasons += [f"the run is invalid: {details}" if r == "the run is invalid" and details else r for r in decided["reasons"]]
    elif not reasons:
        reasons.append("the run has no report")

    lock_reasons = [s["line"] for s in calibration["statuses"] if s["status"] == "below level — locked"]
    reasons += calibration["reasons"]

    lead = None
    if include_lead_decision:
        decision = gate_decision_in_force(run=run)
        if decision is not None:
            lead = {
                "verdict": decision.verdict,
                "by": decision.actor_label,
                "at": decision.created_at.isoformat(),
                "reason": decision.reason,
            }
            if decision.verdict == GateDecision.Verdict.BLOCKED:
                reasons.append(
                    f"blocked by {decision.actor_label} (a lead) on {decision.created_at:%Y-%m-%d %H:%M} UTC: {decision.reason}"
                )
    return {
        "passed": not reasons,
        "threshold": threshold,
        "baseline_mean": baseline_mean,
        "baseline_source": baseline_source,
        "baseline_run": baseline_run,
        "reasons": reasons,
        "notes": notes,
        "calibration_lock": lock_reasons,
        # CONTRACT §3: the judge's status in words, with what each needs (n of the minimum; figure, interval,
        # n, date, versions; what changed), and whether it blocks under the lead's policy.
        "calibration": calibration["status"],
        "calibration_statuses": calibration["statuses"],
        "calibration_policy": calibration["policy"],
        "checkup": calibration["checkup"],  # each judge's check-up against the lead's floors (a failed one blocks)
        "corrected_low": corrected_low,
        "warnings": warnings,
        "lead_decision": lead,
        "evaluated_at": timezone.now().isoformat(),
    }


def _gate_word(gate: dict) -> dict:
    return {"passed": gate["passed"], "word": "gate passed" if gate["passed"] else "gate blocked",
            "reason": "" if gate["passed"] else (gate["reasons"] or [""])[0]}


def releases_overview(*, limit: int = 200) -> list[dict]:
    """Each release, newest first, with its mean's 95% interval and its gate as it is now."""
    rows = []
    for release in releases_recent(limit=limit):
        report = release.run.report or {}
        ci = report.get("mean_ci95") or None
        rows.append({"release": release, "ci": ci if ci and None not in ci else None,
                     "gate": _gate_word(gate_evaluate(run=release.run))})
    return rows


def runs_with_gate(*, runs) -> list[dict]:
    """Pointwise runs beside their gate now (finished ones; a running run has no gate yet)."""
    return [{"run": run, "gate": _gate_word(gate_evaluate(run=run)) if run.is_finished else None} for run in runs]


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
                 "system": release.system.name, "passed": row["gate"]["passed"],
                 "y_low": y(row["ci"][0]) if row["ci"] else None, "y_high": y(row["ci"][1]) if row["ci"] else None}
        shapes.append(shape)
        lines.setdefault(release.system.name, []).append(f"{x},{shape['y']}")
    ticks = [{"value": round(low + span * k / 4, 2), "y": y(low + span * k / 4)} for k in range(5)]
    return {"width": width, "height": height, "left": left, "pad": pad, "points": shapes, "ticks": ticks,
            "lines": [{"system": name, "points": " ".join(coords)} for name, coords in lines.items() if len(coords) > 1]}
