"""Every audit entry calibration writes goes through `calibration_audit` (one place to switch when the
app's audit logging is unified)."""

from __future__ import annotations

from judgeapp.models import AuditLog


def calibration_audit(*, action: str, actor, subject: str, reason: str, run=None, detail: dict | None = None) -> AuditLog:
    return AuditLog.objects.create(
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        actor_label=getattr(actor, "username", "") or "system",
        action=action,
        run=run,
        subject=subject,
        reason=reason,
        detail=detail or {},
    )
