"""The leads' release decisions: approve or block a run, mark a run released. Each is audited."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction

from judgeapp.judging.audit import audit_actor_label, audit_log_create
from judgeapp.judging.errors import InputError
from judgeapp.models import AuditLog, GateDecision, Release, Run, RunKind, RunStatus
from judgeapp.releases.selectors import gate_evaluate
from judgeapp.roles import Role, has_role


def _check(run: Run, actor) -> None:
    if not has_role(actor, Role.LEAD):
        raise PermissionDenied("only a lead decides on a release")
    if run.kind != RunKind.POINTWISE:
        raise InputError(f"run {run.run_id} is a {run.kind} run; releases are decided on pointwise runs")


def gate_decide(*, run: Run, actor, verdict: str, reason: str) -> GateDecision:
    """A lead approves or blocks the release of `run`, with a reason.

    A block always stands. An approval confirms a gate that passes on its own: it cannot open a gate that
    an invalid run, a low mean or a calibration lock keeps closed (a lead's earlier block it does lift).
    """
    _check(run, actor)
    reason = " ".join((reason or "").split())
    if not reason:
        raise InputError("give a reason for the decision")
    if verdict not in GateDecision.Verdict.values:
        raise InputError(f"unknown decision {verdict!r}: approve or block")
    gate = gate_evaluate(run=run, include_lead_decision=False)
    if verdict == GateDecision.Verdict.APPROVED and not gate["passed"]:
        raise InputError("the gate does not pass, so the release cannot be approved: " + "; ".join(gate["reasons"]))
    with transaction.atomic():
        decision = GateDecision.objects.create(
            run=run, verdict=verdict, reason=reason, decided_by=actor, actor_label=audit_actor_label(actor), gate=gate
        )
        audit_log_create(
            actor=actor,
            action=AuditLog.Action.RELEASE_APPROVED if verdict == GateDecision.Verdict.APPROVED else AuditLog.Action.RELEASE_BLOCKED,
            run=run,
            subject=f"{run.system.name if run.system_id else 'run'} {run.run_id}",
            reason=reason,
            detail={"gate": gate, "mean": (run.report or {}).get("mean")},
        )
    return decision


def release_mark(*, run: Run, actor, label: str = "", note: str = "") -> Release:
    """A lead records that `run`'s version of its system shipped: its mean becomes the system's baseline.

    Only a valid run whose gate passes now (no lead block, no calibration lock) can be released; otherwise
    releasing it would lower the bar the next version is held to.
    """
    _check(run, actor)
    if run.system_id is None:
        raise InputError(f"run {run.run_id} names no system under test; a release belongs to a system")
    if run.status != RunStatus.DONE or not run.report or run.report.get("mean") is None:
        raise InputError(f"run {run.run_id} is {run.status}; only a valid, finished run can be released")
    gate = gate_evaluate(run=run)
    if not gate["passed"]:
        raise InputError("the gate does not pass, so the run cannot be released: " + "; ".join(gate["reasons"]))
    label = label.strip()[:100]
    try:
        with transaction.atomic():
            release = Release.objects.create(
                system=run.system, run=run, mean=run.report["mean"], label=label, note=note.strip(), released_by=actor
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
