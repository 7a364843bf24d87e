"""Reads for the release gate: releases, the leads' decisions, the policy, and the gate itself, computed fresh.

The gate is never read from a stored report alone: a lead's block or a calibration lock that appears after
a run finished must still close it, so every caller (`gate RUN_ID`, the gate page, the CLI's exit status)
asks `gate_for_run`. A release keeps the gate as it stood when it was marked (`decided_gate_for_run`): what
came later is a note beside it (`release_notes_for_release`), never a rewrite.
"""

from __future__ import annotations

from django.db.models import QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from judgeapp.judging.costs import stopped_reason
from judgeapp.judging.memo import shared_read
from judgeapp.judging.noise import flaky_lines
from judgeapp.models import AuditLog, GateAction, GateDecision, Release, ReleasePolicy, Run, RunKind, RunStatus
from judgeapp.releases.core import DEFAULT_THRESHOLD, SKIPPED, gate_decision, injection_line
from judgeapp.releases.selectors.baseline import (  # noqa: F401 - what the views, the commands and the modes read
    BaselinePlan,
    baseline_for_run,
    baseline_plan_for_run,
    baseline_release_for_run,
    baseline_replies_for_run,
    comparison_for_runs,
    reasonings_for_judgments,
)

RELEASE_ACTIONS = (
    AuditLog.Action.RELEASE_APPROVED,
    AuditLog.Action.RELEASE_BLOCKED,
    AuditLog.Action.RELEASE_MARKED,
    AuditLog.Action.RELEASE_POLICY_SET,
)


@shared_read
def release_policy_get() -> ReleasePolicy:
    """The policy in force: the latest a lead set, or the default (the seed's rule; a skipped baseline notes)."""
    return ReleasePolicy.objects.select_related("set_by").first() or ReleasePolicy()


def release_list(*, system=None, limit: int = 200) -> QuerySet[Release]:
    releases = Release.objects.select_related("system", "run", "released_by")
    if system is not None:
        releases = releases.filter(system=system)
    return releases.order_by("-created_at", "-id")[:limit]


def release_for_run(*, run: Run) -> Release | None:
    return Release.objects.filter(run=run).select_related("released_by").first()


def gate_decisions_for_run(*, run: Run) -> QuerySet[GateDecision]:
    return run.gate_decisions.select_related("decided_by").order_by("-created_at", "-id")


def gate_decision_for_run(*, run: Run) -> GateDecision | None:
    return gate_decisions_for_run(run=run).first()


def release_audit_for_run(*, run: Run | None = None, limit: int = 200) -> QuerySet[AuditLog]:
    entries = AuditLog.objects.filter(action__in=RELEASE_ACTIONS).select_related("run", "actor")
    if run is not None:
        entries = entries.filter(run=run)
    return entries.order_by("-created_at", "-id")[:limit]


def gate_for_run(
    *, run: Run, report: dict | None = None, status: str | None = None, include_lead_decision: bool = True
) -> dict:
    """The release gate of a pointwise run, now: valid, mean at or above the threshold and not below its
    baseline compared like for like (`baseline`, releases/selectors/baseline.py), judge not locked by
    calibration (nor, under a lead's blocking policy, unchecked or stale), and not blocked by a lead. Under
    the lead's corrected-gate policy, the lower bound of the human-corrected (PPI++) interval must reach the
    threshold too.

    `report` and `status` default to the run's own; the run handler passes the ones it is about to write
    (with its `corrected` and `baseline` keys; otherwise both are computed now).
    """
    from calibration.selectors.agreement import one_snapshot
    from calibration.selectors.corrected import corrected_for_run
    from calibration.selectors.status import calibration_for_gate

    if run.kind != RunKind.POINTWISE:
        raise ValueError(f"run {run.run_id} is a {run.kind} run; the release gate reads pointwise runs")
    threshold = DEFAULT_THRESHOLD if run.options.get("threshold") is None else run.options["threshold"]
    policy = release_policy_get()

    given = report is not None and "corrected" in report

    def people() -> tuple[dict, dict | None]:
        calibration = calibration_for_gate(run=run)
        wanted = calibration["policy"]["corrected_gate"] and not given
        return calibration, corrected_for_run(run=run) if wanted else None

    # The statuses and the corrected mean from one agreement snapshot (a computation may commit meanwhile).
    calibration, corrected_now = one_snapshot(people)
    warnings = ["warning: " + line for line in calibration["warnings"]]
    corrected_low = None
    if calibration["policy"]["corrected_gate"]:
        corrected = report["corrected"] if given else corrected_now
        if corrected:
            corrected_low = corrected["ci95"][0]
        else:
            warnings.append("warning: no labelled sample for this judge configuration, so the corrected-mean check is skipped")
    report = run.report if report is None else report
    status = status or run.status

    reasons, notes, baseline = _run_reasons(
        run=run, report=report, status=status, policy=policy, threshold=threshold, corrected_low=corrected_low
    )
    blocking, warned, flaky = _policy_lines(report=report, policy=policy, threshold=threshold, baseline=baseline)
    reasons += blocking
    warnings += ["warning: " + line for line in warned]
    lock_reasons = [s["line"] for s in calibration["statuses"] if s["status"] == "below level — locked"]
    reasons += calibration["reasons"]
    lead, blocked = _lead_decision(run=run) if include_lead_decision else (None, None)
    if blocked:
        reasons.append(blocked)
    compared = baseline is not None and baseline["how"] != SKIPPED
    return {
        "passed": not reasons,
        "threshold": threshold,
        # The baseline's mean on the cases compared (or as given by hand), where it came from, and its run.
        "baseline_mean": baseline["mean"] if compared else None,
        "baseline_source": baseline["source"] if baseline is not None else "",
        "baseline_run": baseline["run_id"] if baseline is not None else None,
        "baseline": baseline,
        "release_policy": policy.as_dict(),
        "reasons": reasons,
        "notes": notes,
        "calibration_lock": lock_reasons,
        # CONTRACT §3: the judge's status in words, with what each needs (n of the minimum; figure, interval,
        # n, date, versions; what changed), and whether it blocks under the lead's policy.
        "calibration": calibration["status"],
        "calibration_statuses": calibration["statuses"],
        "calibration_policy": calibration["policy"],
        "checkup": calibration["checkup"],  # each judge's check-up against the lead's floors (a failed one blocks)
        "alt_test": calibration["alt_test"],  # each judge's alternative annotator test (blocks or warns if the lead requires it)
        "corrected_low": corrected_low,
        # The threshold or the baseline inside the trials' noise band (--trials K): `flaky`, in words; it blocks
        # only under the lead's policy (`release_policy.flaky`).
        "flaky": flaky,
        "warnings": warnings,
        "lead_decision": lead,
        "evaluated_at": timezone.now().isoformat(),
    }


def _run_reasons(*, run: Run, report: dict | None, status: str, policy, threshold: float, corrected_low) -> tuple:
    """(reasons, notes, baseline): what the run itself says against a release — not finished, failed, invalid
    (a run stopped at its budget included), below the threshold or its baseline compared like for like."""
    reasons: list[str] = []
    notes: list[str] = []
    baseline = None
    if status in (RunStatus.QUEUED, RunStatus.RUNNING):
        reasons.append("the run has not finished")
    elif status == RunStatus.FAILED:
        reasons.append(f"the run failed: {run.error or 'no report'}")
    elif status == RunStatus.CANCELLED:
        reasons.append("the run was cancelled")
    if not report:
        return (reasons or ["the run has no report"]), notes, baseline
    # A report written before runs kept their baseline comparison: compared now, from the stored scores.
    baseline = report["baseline"] if "baseline" in report else baseline_for_run(run=run, mean=report.get("mean"))
    skipped_blocks = policy.skipped_baseline == GateAction.BLOCK
    if baseline is None:
        notes.append(baseline_plan_for_run(run=run).reason)
    elif baseline["how"] == SKIPPED and not skipped_blocks:
        notes.append(f"no comparable baseline: {baseline['reason']}; the baseline check is skipped")
    decided = gate_decision(
        mean=report.get("mean"),
        threshold=threshold,
        # A run stopped at its budget judged only part of its cases: never a release's evidence.
        invalid=status == RunStatus.INVALID or bool(report.get("invalid")) or bool(run.stopped),
        baseline=baseline,
        baseline_rule=policy.baseline_rule,
        skipped_blocks=skipped_blocks,
        corrected_low=corrected_low,
    )
    invalid_reasons = list(report.get("invalid_reasons") or [])
    if run.stopped and stopped_reason(run) not in invalid_reasons:
        invalid_reasons.append(stopped_reason(run))
    details = "; ".join(invalid_reasons)
    reasons += [f"the run is invalid: {details}" if r == "the run is invalid" and details else r for r in decided["reasons"]]
    return reasons, notes, baseline


def _policy_lines(*, report: dict | None, policy, threshold: float, baseline: dict | None) -> tuple:
    """(blocking, warned, flaky): a flaky gate and judged content that addresses the judge, each a reason or
    a warning as the lead's release policy says; `flaky` the gate's flaky lines."""
    blocking: list[str] = []
    warned: list[str] = []
    flaky = flaky_lines(
        band=((report or {}).get("noise") or {}).get("band"),
        threshold=threshold,
        baseline=baseline["mean"] if baseline is not None and baseline["how"] != SKIPPED else None,
    )
    (blocking if policy.flaky == GateAction.BLOCK else warned).extend(flaky)
    injection = injection_line(report)
    if injection:
        (blocking if policy.injection_flags == GateAction.BLOCK else warned).append(injection)
    return blocking, warned, flaky


def _lead_decision(*, run: Run) -> tuple[dict | None, str | None]:
    """The lead's decision in force on the gate (approved or blocked, by whom, when, why), and the gate's
    reason when it blocks; (None, None) when no lead has decided."""
    decision = gate_decision_for_run(run=run)
    if decision is None:
        return None, None
    lead = {
        "verdict": decision.verdict,
        "by": decision.actor_label,
        "at": decision.created_at.isoformat(),
        "reason": decision.reason,
    }
    if decision.verdict != GateDecision.Verdict.BLOCKED:
        return lead, None
    return lead, f"blocked by {decision.actor_label} on {decision.created_at:%Y-%m-%d %H:%M} UTC: {decision.reason}"


def measured_on_for_run(*, run: Run) -> dict:
    """What a run's mean was measured on: the versions (and names) of its test set, rubric, prompt and judge
    configuration, kept with a release so that what it is compared with is never guessed."""
    versions = run.versions or {}
    return {
        "testset": versions.get("testset"),
        "rubric": versions.get("rubric"),
        "prompt": versions.get("prompt"),
        "judge": versions.get("judge"),
        "outputs": versions.get("outputs"),
        "testset_name": run.testset.name if run.testset_id else None,
        "rubric_name": run.rubric.name if run.rubric_id else None,
        "judge_name": run.judge.name if run.judge_id else None,
    }


def decided_gate_for_run(*, run: Run) -> dict:
    """The gate to show and act on: for a released run, the gate as the lead marked it, with `released`
    (label, when, who), the dated notes of what came since and `now`, the gate if asked today, apart; for
    any other run, the gate now."""
    release = release_for_run(run=run)
    now = gate_for_run(run=run)
    if release is None or not release.gate:
        return now
    return {
        **release.gate,
        "released": {"label": release.label, "at": release.created_at.isoformat(), "by": release.gate.get("decided_by")},
        "since": release_notes_for_release(release=release, now=now),
        "now": now,
    }


def release_notes_for_release(*, release: Release, now: dict | None = None) -> list[dict]:
    """What happened after a release was marked, oldest first, each {at (ISO), text}: a later release of the
    system, its judge locked or unlocked, a lead's later decision on the run, and the gate if asked today
    when it no longer passes. Shown beside the stored decision, never in its place."""
    notes = []
    later = (
        Release.objects.filter(system_id=release.system_id, created_at__gt=release.created_at)
        .select_related("run")
        .order_by("created_at", "id")
        .first()
    )
    if later is not None:
        notes.append((later.created_at, f"superseded by {later.label or 'the release of run ' + later.run.run_id}"))
    judge = (release.measured_on or {}).get("judge_name")
    if judge:
        events = AuditLog.objects.filter(
            action__in=(AuditLog.Action.JUDGE_LOCKED, AuditLog.Action.JUDGE_UNLOCKED),
            created_at__gt=release.created_at,
            detail__judge=judge,
        ).order_by("created_at", "id")
        measured = release.measured_on or {}
        scope = {
            "judge_version": measured.get("judge"), "prompt_version": measured.get("prompt"),
            "rubric_version": measured.get("rubric")
        }
        for entry in events:
            if any(value and entry.detail.get(key) not in (None, "", value) for key, value in scope.items()):
                continue  # another configuration, prompt or rubric: not how this release was judged
            if entry.action == AuditLog.Action.JUDGE_LOCKED:
                notes.append(
                    (
                        entry.created_at,
                        f"judge {judge} locked: this release was gated by a judge now below level ({entry.reason})"
                    )
                )
            else:
                notes.append((entry.created_at, f"judge {judge} unlocked: {entry.reason}"))
    now = now if now is not None else gate_for_run(run=release.run)
    for checkup in now.get("checkup") or []:
        finished = parse_datetime(checkup["finished_at"]) if checkup.get("finished_at") else None
        if checkup.get("passed") is False and finished is not None and finished > release.created_at:
            notes.append((finished, f"judge {checkup['judge']}'s check-up {checkup['verdict']} (run {checkup['run_id']})"))
    for decision in release.run.gate_decisions.filter(created_at__gt=release.created_at).order_by("created_at", "id"):
        notes.append((decision.created_at, f"{decision.verdict} by lead {decision.actor_label}: {decision.reason}"))
    if not now["passed"]:
        notes.append((timezone.now(), "asked today, the gate would block: " + "; ".join(now["reasons"][:2])))
    notes.sort(key=lambda note: note[0])
    return [{"at": at.isoformat(), "text": text} for at, text in notes]


def _gate_word(gate: dict) -> dict:
    return {"passed": gate["passed"], "word": "gate passed" if gate["passed"] else "gate blocked",
            "reason": "" if gate["passed"] else (gate["reasons"] or [""])[0]}


def release_overview_list(*, limit: int = 200) -> list[dict]:
    """Each release, newest first, with its mean's 95% interval, the gate as it was decided when the lead
    marked it, what happened since (dated notes), and the release it was compared with."""
    rows = []
    for release in release_list(limit=limit):
        report = release.run.report or {}
        ci = report.get("mean_ci95") or None
        rows.append({
            "release": release,
            "ci": ci if ci and None not in ci else None,
            "gate": _gate_word(release.gate) if release.gate else None,
            "notes": release_notes_for_release(release=release),
            "baseline": report.get("baseline"),
        })
    return rows


def gates_for_runs(*, runs) -> list[dict]:
    """Pointwise runs beside their gate now (finished ones; a running run has no gate yet)."""
    return [{"run": run, "gate": _gate_word(gate_for_run(run=run)) if run.is_finished else None} for run in runs]
