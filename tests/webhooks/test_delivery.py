"""Sending: retried with backoff on 5xx, 429 (its Retry-After honoured) and silence, failed at once on
another answer, bounded by the timeout, sent once however many tasks ask, and sent again by the sweep
when its task was lost."""

import logging
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from judgeapp.judging import notify as notify_module
from judgeapp.judging import taskqueue
from judgeapp.judging.notify import notify, webhook_deliveries_recover, webhook_delivery_attempt
from judgeapp.models import DeliveryStatus, WebhookDelivery, WebhookEvent
from tests.webhooks.conftest import Answer

pytestmark = pytest.mark.django_db


def queue_one(delivered, event=WebhookEvent.RUN_FAILED) -> WebhookDelivery:
    with delivered():
        (delivery,) = notify(event=event, data={"run_id": "r1"}, line="run r1 failed: boom", path="/runs/r1/")
    delivery.refresh_from_db()
    return delivery


def test_a_500_is_retried_and_the_next_answer_delivers_it_with_the_same_delivery_id(make_webhook, receiver, delivered, no_waits):
    make_webhook()
    receiver.script(Answer(500, b"database down"), Answer(503), Answer(200))
    delivery = queue_one(delivered)
    assert delivery.status == DeliveryStatus.DELIVERED and delivery.attempts == 3
    assert len(receiver.requests) == 3
    assert {r.headers["x-judgeapp-delivery"] for r in receiver.requests} == {str(delivery.uuid)}


def test_retries_wait_the_backoff_and_the_last_failure_fails_it_with_its_answer(make_webhook, receiver, delivered, settings):
    settings.WEBHOOK_RETRY_SECONDS = [10.0, 30.0]
    make_webhook()
    receiver.script(Answer(502, b"bad gateway"))
    delivery = queue_one(delivered)
    assert delivery.status == DeliveryStatus.PENDING and delivery.attempts == 1
    assert delivery.next_attempt_at - timezone.now() > timedelta(seconds=8)
    assert webhook_delivery_attempt(delivery_pk=delivery.pk) is None  # not due yet: nothing sent
    assert len(receiver.requests) == 1

    for expected_attempts, status in ((2, DeliveryStatus.PENDING), (3, DeliveryStatus.FAILED)):
        WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
        assert webhook_delivery_attempt(delivery_pk=delivery.pk) == status
    delivery.refresh_from_db()
    assert (delivery.attempts, delivery.last_status_code, delivery.next_attempt_at) == (3, 502, None)
    assert delivery.last_error == "HTTP 502: bad gateway"
    assert len(receiver.requests) == 3


def test_a_404_fails_at_once_without_a_retry(make_webhook, receiver, delivered, no_waits):
    make_webhook()
    receiver.script(Answer(404, b"no such hook"))
    delivery = queue_one(delivered)
    assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 1
    assert delivery.last_status_code == 404 and delivery.last_error.startswith("HTTP 404: no such hook (not retried")
    assert len(receiver.requests) == 1


def test_a_429_waits_its_retry_after_then_delivers(make_webhook, receiver, delivered, no_waits):
    make_webhook()
    receiver.script(Answer(429, headers={"Retry-After": "1"}), Answer(200))
    delivery = queue_one(delivered)
    assert delivery.status == DeliveryStatus.PENDING and delivery.last_status_code == 429
    assert 0.5 < (delivery.next_attempt_at - timezone.now()).total_seconds() <= 1.0
    assert webhook_delivery_attempt(delivery_pk=delivery.pk) is None and len(receiver.requests) == 1
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())  # its Retry-After has passed
    assert webhook_delivery_attempt(delivery_pk=delivery.pk) == DeliveryStatus.DELIVERED
    assert len(receiver.requests) == 2


def test_a_huge_retry_after_is_bounded(make_webhook, receiver, delivered, settings):
    settings.WEBHOOK_RETRY_SECONDS = [10.0]
    settings.WEBHOOK_RETRY_AFTER_MAX_SECONDS = 60.0
    make_webhook()
    receiver.script(Answer(429, headers={"Retry-After": "86400"}))
    delivery = queue_one(delivered)
    assert 55 < (delivery.next_attempt_at - timezone.now()).total_seconds() <= 60


def test_a_receiver_that_hangs_is_given_up_after_the_timeout_and_retried(make_webhook, receiver, delivered, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    settings.WEBHOOK_RETRY_SECONDS = [10.0]
    make_webhook()
    receiver.script(Answer(200, delay=30))
    started = time.monotonic()
    delivery = queue_one(delivered)
    assert time.monotonic() - started < 3
    assert delivery.status == DeliveryStatus.PENDING and delivery.last_error == "no answer within 0.5 s"


def test_a_receiver_that_refuses_connections_is_retried(make_webhook, delivered, settings):
    from tests.helpers import free_port

    settings.WEBHOOK_RETRY_SECONDS = [10.0]
    make_webhook(url=f"http://127.0.0.1:{free_port()}/hook")
    delivery = queue_one(delivered)
    assert delivery.status == DeliveryStatus.PENDING and delivery.last_error.startswith("could not connect")


def test_two_tasks_for_one_delivery_send_it_once(make_webhook, receiver, delivered):
    make_webhook()
    delivery = queue_one(delivered)
    assert delivery.status == DeliveryStatus.DELIVERED
    assert webhook_delivery_attempt(delivery_pk=delivery.pk) is None
    assert len(receiver.requests) == 1


def test_a_delivery_held_by_another_sender_is_not_sent_until_its_claim_lapses(make_webhook, receiver, lead):
    from judgeapp.judging.leases import UNIT

    hook, _ = make_webhook()
    delivery = WebhookDelivery.objects.create(webhook=hook, event=WebhookEvent.RUN_FAILED, payload={"data": {}, "text": "x"},
                                              next_attempt_at=timezone.now() - timedelta(minutes=5))
    rows = WebhookDelivery.objects.filter(pk=delivery.pk)
    UNIT.take(rows, holder="another-host:1:1", seconds=60)
    assert webhook_delivery_attempt(delivery_pk=delivery.pk) is None and receiver.requests == []
    assert webhook_deliveries_recover() == 0  # held: not lost
    rows.update(lease_expires_at=timezone.now() - timedelta(seconds=1))  # its holder went silent
    assert webhook_delivery_attempt(delivery_pk=delivery.pk) == DeliveryStatus.DELIVERED
    assert len(receiver.requests) == 1


def test_the_sweep_sends_again_a_delivery_whose_task_was_lost(make_webhook, receiver, eager_tasks, monkeypatch):
    hook, _ = make_webhook()
    # The broker was down when the event happened: the row is kept pending, nothing is sent.
    def broker_down(*args, **options):
        raise taskqueue.BrokerDown("the broker cannot be reached")

    monkeypatch.setattr(taskqueue, "send", broker_down)
    (delivery,) = notify(event=WebhookEvent.GATE_BLOCKED, data={}, line="gate blocked", path="/runs/r1/")
    notify_module._send_tasks([delivery.pk])
    assert receiver.requests == []
    monkeypatch.undo()

    assert webhook_deliveries_recover() == 0  # not overdue yet: its task may be on its way
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now() - timedelta(minutes=2))
    assert webhook_deliveries_recover() == 1
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED and receiver.events() == ["gate.blocked"]


def test_the_secret_is_never_logged(make_webhook, receiver, delivered, no_waits):
    # A handler on the module's logger itself: Celery's first eager task sets Django's logging up again,
    # which drops pytest's capturing handler from the root logger.
    lines = []
    handler = logging.Handler(level=logging.DEBUG)
    handler.emit = lambda record: lines.append(record.getMessage())
    logger = logging.getLogger("judgeapp.judging.notify")
    logger.addHandler(handler)
    previous, logger.level = logger.level, logging.DEBUG
    try:
        _hook, secret = make_webhook()
        receiver.script(Answer(500), Answer(200))
        queue_one(delivered)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
    assert len(lines) == 2 and "HTTP 500" in lines[0] and "HTTP 200" in lines[1]
    assert "/hook" in lines[0] and not any(secret in line or secret[6:20] in line for line in lines)


def test_a_webhook_switched_off_gets_none_of_its_pending_messages(make_webhook, receiver, delivered, settings, lead):
    from judgeapp.webhooks.services import webhook_active_set

    settings.WEBHOOK_RETRY_SECONDS = [10.0]
    hook, _ = make_webhook()
    receiver.script(Answer(503))
    delivery = queue_one(delivered)
    assert delivery.status == DeliveryStatus.PENDING
    webhook_active_set(webhook=hook, active=False, actor=lead)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now() - timedelta(minutes=5))
    assert webhook_delivery_attempt(delivery_pk=delivery.pk) is None and webhook_deliveries_recover() == 0
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED and delivery.last_error == "not sent: the webhook was switched off"
    assert len(receiver.requests) == 1


def test_an_address_the_http_library_refuses_fails_at_once(make_webhook, delivered, no_waits):
    make_webhook(url="http://a..b/hook")  # a host name with an empty label: no try would reach it
    delivery = queue_one(delivered)
    assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 1 and delivery.last_status_code is None
    assert delivery.last_error.startswith("could not send to this address:")
