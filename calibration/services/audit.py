"""Every audit entry calibration writes goes through `calibration_audit`, which appends it with the app's one
audit service (judgeapp/judging/audit.py) and its actor rule: a lead's own user, or "system" when a recomputed
agreement locks or unlocks a judge on its own."""

from __future__ import annotations

from judgeapp.judging.audit import SYSTEM, audit_log_create
from judgeapp.models import AuditLog


def calibration_audit(*, action: str, actor, subject: str, reason: str, run=None, detail: dict | None = None) -> AuditLog:
    who = actor if getattr(actor, "is_authenticated", False) or isinstance(actor, str) else SYSTEM
    return audit_log_create(action=action, actor=who, run=run, subject=subject, reason=reason, detail=detail or {})
