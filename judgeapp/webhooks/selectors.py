"""Reads of the webhooks page: the webhooks and the latest deliveries."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404

from judgeapp.models import Webhook, WebhookDelivery

LOG_ROWS = 50


def webhook_list() -> QuerySet[Webhook]:
    return Webhook.objects.select_related("created_by").order_by("name", "pk")


def webhook_get(*, uuid) -> Webhook:
    webhook = Webhook.objects.filter(uuid=uuid).first()
    if webhook is None:
        raise Http404("no such webhook")
    return webhook


def webhook_for_name(*, name: str) -> Webhook | None:
    return Webhook.objects.filter(name=name).first()


def delivery_list(*, limit: int = LOG_ROWS) -> QuerySet[WebhookDelivery]:
    return WebhookDelivery.objects.select_related("webhook").order_by("-created_at", "-pk")[:limit]
