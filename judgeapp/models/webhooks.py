"""Webhooks: where a lead wants to be told when a gate blocks or passes, a judge is locked or unlocked, or a
run fails or is invalid (docs/webhooks.md), and the log of every message sent there."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from .base import TimeStampedModel


class WebhookEvent(models.TextChoices):
    GATE_BLOCKED = "gate.blocked", "a run's release gate blocked"
    GATE_PASSED = "gate.passed", "a run's release gate passed"
    JUDGE_LOCKED = "judge.locked", "a judge was locked (below the agreement level)"
    JUDGE_UNLOCKED = "judge.unlocked", "a judge was unlocked"
    RUN_FAILED = "run.failed", "a run failed"
    RUN_INVALID = "run.invalid", "a run finished invalid"
    TEST = "webhook.test", "a test message (the Send test button)"


# What a lead may subscribe to (the test message goes to the one webhook it is sent to).
SUBSCRIBABLE_EVENTS = [event for event in WebhookEvent.values if event != WebhookEvent.TEST]


def all_events() -> list[str]:
    return list(SUBSCRIBABLE_EVENTS)


class Webhook(TimeStampedModel):
    """A receiver of signed JSON POSTs. Its secret signs every message (HMAC-SHA256), so it is kept as it
    is; it is shown once, when the webhook is made, and never logged."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=100)
    url = models.CharField(max_length=2000, help_text="http or https; the receiver's address.")
    secret = models.CharField(max_length=100, help_text="Signs every message; shown once, when the webhook is made.")
    events = models.JSONField(default=all_events, help_text="The events sent to it (webhook.test aside).")
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["name"], name="webhook_unique_name"),
            models.CheckConstraint(
                condition=Q(url__startswith="http://") | Q(url__startswith="https://"), name="webhook_url_http"
            ),
            models.CheckConstraint(condition=~Q(secret=""), name="webhook_secret_not_empty"),
        ]

    def __str__(self):
        return self.name

    @property
    def shown_url(self) -> str:
        """The address where its secret parts must not appear (logs, the audit log, the page): scheme, host
        and the first part of the path. A Slack incoming webhook's path is its credential."""
        return url_shown(self.url)

    @property
    def shown_secret(self) -> str:
        return f"{self.secret[:6]}…"


def url_shown(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    first = parts.path.strip("/").split("/", 1)[0]
    rest = parts.path.strip("/")[len(first):] or parts.query
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}/{first}" + ("/…" if rest else "")


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class WebhookDelivery(TimeStampedModel):
    """One event for one webhook: sent until the receiver answers 2xx, retried with backoff on connection
    errors, timeouts, 429 and 5xx, failed at once on another answer. The claim is the lease of
    judging/leases.py (one sender at a time); `uuid` is the X-Judgeapp-Delivery header, the same on every
    attempt, so a receiver can drop a message it already had."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40, choices=WebhookEvent.choices)
    payload = models.JSONField(default=dict, help_text="The message's `data` and `text`; sent_at is set at each attempt.")
    status = models.CharField(max_length=20, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    claim_token = models.UUIDField(null=True, blank=True)
    claimed_by = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=~Q(status=DeliveryStatus.PENDING) | Q(next_attempt_at__isnull=False),
                name="webhookdelivery_pending_has_next"
            ),
        ]
        indexes = [
            # The sweep: pending deliveries whose attempt is due (judging/notify.py: webhook_deliveries_recover).
            models.Index(fields=["next_attempt_at"], condition=Q(status=DeliveryStatus.PENDING), name="webhookdelivery_due"),
            # The webhooks page: the latest deliveries.
            models.Index(fields=["-created_at"], name="webhookdelivery_newest"),
        ]

    def __str__(self):
        return f"{self.event} to {self.webhook_id} ({self.status})"
