"""The audit log: every decision a person or the app made about a release, a judge or a run, appended
through one function, with one rule for who made it."""

from __future__ import annotations

import getpass
import os

from judgeapp.models import AuditLog, Run

# The actor of what the app decides on its own: a worker, a task, a recomputed agreement that locks a judge.
SYSTEM = "system"
CLI_PREFIX = "cli:"


def cli_actor() -> str:
    """The actor of a command: "cli:<the operating-system user who ran it>" (its uid when the system
    has no name for it, as in a container)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{CLI_PREFIX}{user}"


def audit_actor_label(actor) -> str:
    """What the log shows as the actor: a signed-in user's username, or the label itself (`SYSTEM`,
    `cli_actor()`). Anything else is a mistake of the caller: an entry that cannot say who made the
    decision is no audit."""
    if isinstance(actor, str):
        if actor == SYSTEM or (actor.startswith(CLI_PREFIX) and len(actor) > len(CLI_PREFIX)):
            return actor
        raise ValueError(f"audit actor {actor!r}: a user, {SYSTEM!r} or 'cli:<os user>'")
    if getattr(actor, "is_authenticated", False):
        return actor.get_username()
    raise ValueError("audit actor: a signed-in user, SYSTEM or cli_actor(); not an anonymous or missing one")


def audit_log_create(
    *,
    action: str,
    actor,
    run: Run | None = None,
    subject: str = "",
    reason: str = "",
    detail: dict | None = None,
) -> AuditLog:
    """Append one entry to the audit log (call it in the transaction of the change it records).

    The actor rule: `actor` is who decided. A person is their signed-in user: the row's `actor` is that
    user and `actor_label` the username (kept when the user is deleted later). When no person decided,
    `actor` is a label and the row's `actor` stays null: `SYSTEM` ("system") for what the app does on its
    own (a worker starting, a task, a lock that a new agreement result sets), `cli_actor()`
    ("cli:<os user>") for a command someone ran. Nothing else is accepted (ValueError).
    """
    label = audit_actor_label(actor)
    return AuditLog.objects.create(
        actor=None if isinstance(actor, str) else actor,
        actor_label=label,
        action=action,
        run=run,
        subject=subject,
        reason=reason,
        detail=detail or {},
    )
