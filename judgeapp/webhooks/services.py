"""A lead's webhooks: made (a secret generated, shown once), switched off and on, deleted, sent a test
message. Every change goes into the audit log, with the address as `Webhook.shown_url` shows it."""

from __future__ import annotations

import secrets

from django.db import transaction
from django.utils import timezone

from judgeapp.judging.audit import audit_actor_label, audit_log_create
from judgeapp.judging.errors import InputError
from judgeapp.judging.notify import notify, webhook_delivery_attempt
from judgeapp.models import AuditLog, DeliveryStatus, Webhook, WebhookDelivery, WebhookEvent
from judgeapp.models.webhooks import SUBSCRIBABLE_EVENTS

SECRET_PREFIX = "whsec_"
URL_MAX = 2000


def webhook_url_check(url: str) -> str:
    """The receiver's address, or InputError: http or https with a host, at most 2,000 characters. A lead
    sets it; an address on this machine or the local network is allowed (a self-hosted receiver)."""
    from urllib.parse import urlsplit

    url = (url or "").strip()
    if len(url) > URL_MAX:
        raise InputError(f"the address is {len(url):,} characters; at most {URL_MAX:,}")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError as exc:
        raise InputError(f"the address is not a URL ({exc})") from exc
    if parts.scheme not in ("http", "https"):
        raise InputError("the address must start with http:// or https://")
    if not parts.hostname:
        raise InputError("the address has no host")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise InputError("the address holds a space or a control character")
    return url


def webhook_create(*, name: str, url: str, events: list[str] | None, actor) -> tuple[Webhook, str]:
    """A new webhook and its secret (returned once; the page shows it this once)."""
    name = " ".join((name or "").split())
    if not name:
        raise InputError("give the webhook a name")
    url = webhook_url_check(url)
    events = [e for e in SUBSCRIBABLE_EVENTS if e in set(events)] if events else list(SUBSCRIBABLE_EVENTS)
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        if Webhook.objects.filter(name=name).exists():
            raise InputError(f"a webhook named {name!r} exists already")
        hook = Webhook.objects.create(
            name=name, url=url, secret=secret, events=events, created_by=None if isinstance(actor, str) else actor
        )
        audit_log_create(
            action=AuditLog.Action.WEBHOOK_CREATED, actor=actor, subject=f"webhook {name}",
            detail={"webhook": str(hook.uuid), "name": name, "url": hook.shown_url, "events": events},
        )
    return hook, secret


def webhook_active_set(*, webhook: Webhook, active: bool, actor) -> bool:
    """Switch a webhook on or off; False when it already was (nothing audited twice). Switched off, the
    messages it was still to get are failed: switched on again, it gets only what happens from then on."""
    with transaction.atomic():
        if not Webhook.objects.filter(pk=webhook.pk, active=not active).update(active=active):
            return False
        webhook.active = active
        if not active:
            webhook.deliveries.filter(status=DeliveryStatus.PENDING).update(
                status=DeliveryStatus.FAILED, next_attempt_at=None, last_error="not sent: the webhook was switched off",
                updated_at=timezone.now()
            )
        audit_log_create(
            action=AuditLog.Action.WEBHOOK_CHANGED, actor=actor, subject=f"webhook {webhook.name}",
            reason="switched on" if active else "switched off",
            detail={"webhook": str(webhook.uuid), "name": webhook.name, "url": webhook.shown_url, "active": active},
        )
    return True


def webhook_delete(*, webhook: Webhook, actor) -> None:
    """Delete a webhook and its delivery log (the audit log keeps that it existed)."""
    with transaction.atomic():
        audit_log_create(
            action=AuditLog.Action.WEBHOOK_DELETED, actor=actor, subject=f"webhook {webhook.name}",
            detail={"webhook": str(webhook.uuid), "name": webhook.name, "url": webhook.shown_url,
                    "deliveries": webhook.deliveries.count()},
        )
        webhook.delete()


def webhook_test_send(*, webhook: Webhook, actor) -> WebhookDelivery:
    """A test message to this webhook, sent now (the lead sees the answer on the page); a retriable failure
    is retried like any delivery."""
    by = audit_actor_label(actor)
    with transaction.atomic():
        (delivery,) = notify(
            event=WebhookEvent.TEST, webhooks=[webhook], path="/webhooks/",
            data={"webhook": webhook.name, "by": by},
            line=f"Test message from judgeapp to webhook {webhook.name}, sent by {by}.",
        )
    webhook_delivery_attempt(delivery_pk=delivery.pk)
    delivery.refresh_from_db()
    return delivery
