"""Each event reaches a real receiver over HTTP through the code path that causes it: a run that fails, a run
whose gate blocks or passes, a judge locked and unlocked by the agreement of people's labels. Every
message is signed with the webhook's secret and carries a Slack-compatible line with a link."""

import hashlib
import hmac
import json

import pytest

from fakejudge.server import Reply, Status
from judgeapp.judging import runs
from judgeapp.models import DeliveryStatus, Run, RunStatus, WebhookDelivery
from tests.calibration.conftest import scores_for
from tests.calibration.test_lock import agreeing, disagreeing, import_labels
from tests.factories import pointwise_run

pytestmark = pytest.mark.django_db


def verify(secret: str, headers: dict, body: bytes) -> bool:
    """docs/webhooks.md's verification, written out as a receiver would."""
    signed = headers["x-judgeapp-timestamp"].encode() + b"." + body
    expected = "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, headers["x-judgeapp-signature"])


def test_a_failed_run_is_posted_signed_with_its_reason_and_a_slack_line(
    judge, fake_judge, make_webhook, receiver, delivered, settings
):
    settings.SITE_URL = "https://judge.example.com"
    hook, secret = make_webhook()
    fake_judge.action = Status(401, message="bad key")
    run = pointwise_run(judge=judge, run_id="pw-fails")
    with delivered():
        runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED

    assert receiver.events() == ["run.failed"]
    request = receiver.requests[0]
    assert verify(secret, request.headers, request.body)
    message = request.json
    assert message["event"] == "run.failed" and message["delivery"] == request.headers["x-judgeapp-delivery"]
    assert message["data"]["run_id"] == "pw-fails" and "401" in message["data"]["error"]
    assert message["data"]["url"] == "https://judge.example.com/runs/pw-fails/"
    assert message["text"].startswith("Pointwise run pw-fails failed:")
    assert message["text"].endswith("<https://judge.example.com/runs/pw-fails/|Open in judgeapp>")
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == (DeliveryStatus.DELIVERED, 1, 200)


def test_a_finished_run_below_its_threshold_posts_gate_blocked_once_with_the_reasons(judge, make_webhook, receiver, delivered):
    _hook, secret = make_webhook(events=["gate.blocked", "gate.passed"])
    run = pointwise_run(judge=judge, run_id="pw-low", threshold=4.9)
    Run.objects.filter(pk=run.pk).update(title="candidate <!channel> & co")
    with delivered():
        runs.run_execute_inline(run=run)
        runs.run_advance(run_pk=run.pk)  # a second finalizer finds the run finished: nothing is sent again
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.report["gate"]["passed"] is False

    assert receiver.events() == ["gate.blocked"]
    request = receiver.requests[0]
    assert request.signed_with(secret)
    data = request.json["data"]
    assert data["passed"] is False and data["threshold"] == 4.9 and data["reasons"] == run.report["gate"]["reasons"]
    text = request.json["text"]
    assert text.startswith("Release gate blocked: pointwise run pw-low")
    # A title cannot mention @channel or make a link in Slack: its <, > and & are escaped.
    assert "&lt;!channel&gt; &amp; co" in text and "<!channel>" not in text


def test_a_run_that_passes_its_gate_posts_gate_passed(judge, make_webhook, receiver, delivered):
    make_webhook(events=["gate.passed", "gate.blocked"])
    run = pointwise_run(judge=judge, run_id="pw-ok", threshold=1.0)
    with delivered():
        runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.report["gate"]["passed"] is True
    assert receiver.events() == ["gate.passed"]
    assert receiver.requests[0].json["text"].startswith("Release gate passed: pointwise run pw-ok (mean ")


def test_a_run_whose_judge_gives_no_usable_verdict_posts_run_invalid_with_its_reasons(
    judge, fake_judge, make_webhook, receiver, delivered
):
    make_webhook(events=["run.invalid"])
    fake_judge.action = Reply("I cannot give a score for this one.")
    run = pointwise_run(judge=judge, run_id="pw-unreadable")
    with delivered():
        runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.INVALID
    assert receiver.events() == ["run.invalid"]
    message = receiver.requests[0].json
    assert message["data"]["reasons"] == run.report["invalid_reasons"] and message["data"]["reasons"]
    assert message["text"].startswith("Pointwise run pw-unreadable is invalid: ")


def test_an_event_goes_only_to_active_webhooks_that_want_it(judge, make_webhook, receiver, delivered, lead):
    from judgeapp.webhooks.services import webhook_active_set

    make_webhook("runs-only", events=["run.failed"])
    off, _ = make_webhook("switched-off")
    webhook_active_set(webhook=off, active=False, actor=lead)
    run = pointwise_run(judge=judge, run_id="pw-ok", threshold=1.0)
    with delivered():
        runs.run_execute_inline(run=run)
    assert receiver.requests == [] and not WebhookDelivery.objects.exists()


def test_a_judge_locked_by_disagreeing_labels_then_unlocked_by_agreeing_ones(planted_run, make_webhook, receiver, delivered):
    _hook, secret = make_webhook(events=["judge.locked", "judge.unlocked"])
    run = planted_run(scores_for(30))
    with delivered():
        import_labels(run, disagreeing(scores_for(30)))
    assert receiver.events() == ["judge.locked"]
    locked = receiver.requests[0]
    assert locked.signed_with(secret)
    assert locked.json["data"]["judge"] == "planted-judge" and locked.json["data"]["locked"] is True
    assert "is locked" in locked.json["text"] and "/judges/planted-judge/|Open in judgeapp>" in locked.json["text"]

    with delivered():
        import_labels(run, agreeing(scores_for(30)), annotator="cy")
    assert receiver.events() == ["judge.locked", "judge.unlocked"]
    assert receiver.requests[1].json["data"]["locked"] is False


def test_the_body_is_the_json_that_was_signed_and_sent_at_each_attempt(judge, fake_judge, make_webhook, receiver, delivered):
    _hook, secret = make_webhook()
    fake_judge.action = Status(401)
    with delivered():
        runs.run_execute_inline(run=pointwise_run(judge=judge))
    request = receiver.requests[0]
    assert set(json.loads(request.body)) == {"event", "delivery", "sent_at", "data", "text"}
    tampered = request.body.replace(b"run.failed", b"gate.passed")
    assert not verify(secret, request.headers, tampered)
    assert not verify("whsec_another", request.headers, request.body)


def test_a_run_that_makes_two_events_reads_the_webhooks_once(make_webhook):
    """An invalid run whose gate blocked tells both (each to the webhooks that want it); the webhooks are
    read once for the run, on the path every run's end takes."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from judgeapp.judging.notify import run_ended_notify
    from judgeapp.models import RunKind

    make_webhook("all-events")
    make_webhook("gates-only", events=["gate.blocked"])
    run = Run.objects.create(
        run_id="pw-invalid", kind=RunKind.POINTWISE, status=RunStatus.INVALID,
        report={"invalid_reasons": ["too many unreadable replies"], "mean": 2.0,
                "gate": {"passed": False, "threshold": 3.5, "reasons": ["the run is invalid"]}},
    )
    with CaptureQueriesContext(connection) as queries:
        run_ended_notify(run_pk=run.pk)
    told = sorted(WebhookDelivery.objects.values_list("webhook__name", "event"))
    assert told == [("all-events", "gate.blocked"), ("all-events", "run.invalid"), ("gates-only", "gate.blocked")]
    assert sum('FROM "judgeapp_webhook"' in query["sql"] for query in queries.captured_queries) == 1
