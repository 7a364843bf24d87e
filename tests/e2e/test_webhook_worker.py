"""A real Celery worker tells a webhook that a run's gate blocked: the receiver on this machine answers 500
first, and the worker's retry (a new message with its countdown) delivers it, signed, with the same id."""

import pytest

from judgeapp.judging import runs
from judgeapp.models import DeliveryStatus, Run, WebhookDelivery
from judgeapp.webhooks.services import webhook_create
from tests.factories import pointwise_run
from tests.helpers import run_state, wait_for
from tests.webhooks.conftest import Answer, Receiver

pytestmark = pytest.mark.slow


def test_a_worker_posts_the_gate_and_retries_a_500(worker_factory, judge, lead):
    with Receiver() as receiver:
        receiver.script(Answer(500, b"try again"), Answer(200))
        _hook, secret = webhook_create(name="ci", url=receiver.url, events=["gate.blocked"], actor=lead)
        run = pointwise_run(judge=judge, n=4, executor="celery", threshold=4.9)
        worker = worker_factory(concurrency=2, WEBHOOK_RETRY_SECONDS="1")
        runs.run_enqueue(run=run)
        wait_for(
            lambda: Run.objects.get(pk=run.pk).is_finished, 60, message="the run to finish",
            explain=lambda: run_state(run.pk, worker),
        )
        wait_for(lambda: WebhookDelivery.objects.filter(status=DeliveryStatus.DELIVERED).exists(), 30,
                 message="the webhook delivered", explain=lambda: worker.log()[-3000:])

    delivery = WebhookDelivery.objects.get()
    assert delivery.attempts == 2 and delivery.event == "gate.blocked"
    assert receiver.events() == ["gate.blocked", "gate.blocked"]
    assert {r.headers["x-judgeapp-delivery"] for r in receiver.requests} == {str(delivery.uuid)}
    assert all(r.signed_with(secret) for r in receiver.requests)
    assert receiver.requests[0].json["data"]["run_id"] == run.run_id
