"""The leads' release decisions: approve or block a run, mark a run released. Each is audited."""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from judgeapp.judging.audit import audit_actor_label, audit_log_create
from judgeapp.judging.errors import InputError
from judgeapp.models import AuditLog, BaselineRule, GateAction, GateDecision, Release, ReleasePolicy, Run, RunKind, RunStatus
from judgeapp.releases.selectors import gate_decision_for_run, gate_for_run, measured_on_for_run, release_policy_get
from judgeapp.roles import Role, has_role


def _check(run: Run, actor) -> None:
    if not has_role(actor, Role.LEAD):
        raise PermissionDenied("only a lead decides on a release")
    if run.kind != RunKind.POINTWISE:
        raise InputError(f"run {run.run_id} is a {run.kind} run; releases are decided on pointwise runs")


def _decisions_queue(run: Run) -> None:
    """Lock the run's row until the transaction ends: the leads' decisions and the release of one run are
    written one after the other. Two leads approving and blocking at the same moment could otherwise write
    their decisions and audit entries interleaved (A's decision, B's decision, B's entry, A's entry), and the
    decision in force (the latest) would not be the one the audit log names last. (SQLite writes one
    transaction at a time anyway; there FOR UPDATE is left out.)"""
    Run.objects.select_for_update().only("pk").get(pk=run.pk)


def gate_decide(*, run: Run, actor, verdict: str, reason: str) -> GateDecision:
    """A lead approves or blocks the release of `run`, with a reason.

    A block always stands. An approval confirms a gate that passes on its own: it cannot open a gate that
    an invalid run, a low mean or a calibration lock keeps closed (a lead's earlier block it does lift).
    Decisions on one run are serialised: the latest is the one in force and the last in the audit log. A
    block after the run was released is recorded too: the release stands as it was decided, with the block
    a dated note beside it.
    """
    _check(run, actor)
    reason = " ".join((reason or "").split())
    if not reason:
        raise InputError("give a reason for the decision")
    if verdict not in GateDecision.Verdict.values:
        raise InputError(f"unknown decision {verdict!r}: approve or block")
    gate = gate_for_run(run=run, include_lead_decision=False)
    if verdict == GateDecision.Verdict.APPROVED and not gate["passed"]:
        raise InputError("the gate does not pass, so the release cannot be approved: " + "; ".join(gate["reasons"]))
    with transaction.atomic():
        _decisions_queue(run)
        decision = GateDecision.objects.create(
            run=run, verdict=verdict, reason=reason, decided_by=actor, actor_label=audit_actor_label(actor), gate=gate
        )
        audit_log_create(
            actor=actor,
            action=AuditLog.Action.RELEASE_APPROVED if verdict == GateDecision.Verdict.APPROVED
            else AuditLog.Action.RELEASE_BLOCKED,
            run=run,
            subject=f"{run.system.name if run.system_id else 'run'} {run.run_id}",
            reason=reason,
            detail={"gate": gate, "mean": (run.report or {}).get("mean")},
        )
    return decision


def release_mark(*, run: Run, actor, label: str = "", note: str = "") -> Release:
    """A lead records that `run`'s version of its system shipped: it becomes the baseline of the system's
    runs created after it.

    Only a valid run whose gate passes now (no lead block, no calibration lock) can be released; otherwise
    releasing it would lower the bar the next version is held to. The release keeps what its mean was
    measured on and the gate as it stood (who decided, when): that decision is never recomputed. A lead's
    block that arrives while the release is being marked goes first or waits (the run's row is locked):
    either the release sees the block and is refused, or the block comes after the release.
    """
    _check(run, actor)
    if run.system_id is None:
        raise InputError(f"run {run.run_id} names no system under test; a release belongs to a system")
    if run.status != RunStatus.DONE or not run.report or run.report.get("mean") is None:
        raise InputError(f"run {run.run_id} is {run.status}; only a valid, finished run can be released")
    gate = gate_for_run(run=run)
    if not gate["passed"]:
        raise InputError("the gate does not pass, so the run cannot be released: " + "; ".join(gate["reasons"]))
    label = label.strip()[:100]
    decided = {
        **gate,
        "mean": run.report["mean"],
        "mean_ci95": run.report.get("mean_ci95"),
        "decided_by": audit_actor_label(actor),
        "decided_at": timezone.now().isoformat(),
    }
    try:
        with transaction.atomic():
            _decisions_queue(run)
            # The gate above was read before the lock: a block written since then closes it.
            decision = gate_decision_for_run(run=run)
            if decision is not None and decision.verdict == GateDecision.Verdict.BLOCKED:
                raise InputError(
                    f"the gate does not pass, so the run cannot be released: blocked by {decision.actor_label} "
                    f"on {decision.created_at:%Y-%m-%d %H:%M} UTC: {decision.reason}"
                )
            release = Release.objects.create(
                system=run.system, run=run, mean=run.report["mean"], label=label, note=note.strip(), released_by=actor,
                measured_on=measured_on_for_run(run=run), gate=decided,
            )
            audit_log_create(
                actor=actor,
                action=AuditLog.Action.RELEASE_MARKED,
                run=run,
                subject=f"{run.system.name} {label or run.run_id}",
                reason=note.strip(),
                detail={"mean": run.report["mean"], "label": label, "gate": gate},
            )
    except IntegrityError:
        raise InputError(f"run {run.run_id} is already released") from None
    return release


# A policy field left out of a change keeps its value (None there means "the default").
UNCHANGED = object()


def release_policy_set(
    *, actor, baseline_rule: str, skipped_baseline: str, injection_flags: str | None = None, flaky: str | None = None,
    large_run_calls=UNCHANGED, large_run_cost=UNCHANGED, reason: str = "",
) -> ReleasePolicy:
    """A lead's new release policy, audited: what blocks a run compared with its baseline (the seed's rule,
    or only a regression whose interval lies below zero), whether a baseline that cannot be compared blocks,
    whether judged content that addresses the judge blocks, and whether a flaky gate (the threshold or the
    baseline inside the trials' noise band) blocks (each left out: as it is now); and above how many judge
    calls or dollars a run started from a page asks first (None: the deployment's default; left out: as now)."""
    if not has_role(actor, Role.LEAD):
        raise PermissionDenied("only a lead sets the release policy")
    if baseline_rule not in BaselineRule.values:
        raise InputError(f"baseline rule: must be one of {', '.join(BaselineRule.values)}")
    previous = release_policy_get()
    injection_flags = previous.injection_flags if injection_flags is None else injection_flags
    flaky = previous.flaky if not flaky else flaky
    large_run_calls = previous.large_run_calls if large_run_calls is UNCHANGED else large_run_calls
    large_run_cost = previous.large_run_cost if large_run_cost is UNCHANGED else large_run_cost
    if large_run_calls is not None and (isinstance(large_run_calls, bool) or int(large_run_calls) < 1):
        raise InputError("large-run calls: a whole number of judge calls above 0, or none for the default")
    if large_run_cost is not None and Decimal(str(large_run_cost)) <= 0:
        raise InputError("large-run cost: a number of dollars above 0, or none for the default")
    for name, value in (("a skipped baseline", skipped_baseline), ("injection flags", injection_flags), ("flaky", flaky)):
        if value not in GateAction.values:
            raise InputError(f"{name}: must be one of {', '.join(GateAction.values)}")
    with transaction.atomic():
        policy = ReleasePolicy.objects.create(
            baseline_rule=baseline_rule, skipped_baseline=skipped_baseline, injection_flags=injection_flags,
            flaky=flaky, large_run_calls=large_run_calls, large_run_cost=large_run_cost, set_by=actor, reason=reason.strip(),
        )
        audit_log_create(
            actor=actor,
            action=AuditLog.Action.RELEASE_POLICY_SET,
            subject="release policy",
            reason=reason.strip() or str(policy),
            detail={**policy.as_dict(), "previous": previous.as_dict()},
        )
    return policy
