"""The lead's webhooks page: a webhook added (its secret shown once, in an answer no cache keeps), a test
message sent and its answer shown, switched off and on, deleted after a confirmation; every change audited;
a bad address is a form error with nothing stored; other roles are refused."""

import html
import re

import pytest
from django.urls import reverse

from judgeapp.models import AuditLog, DeliveryStatus, Webhook, WebhookDelivery
from tests.webhooks.conftest import Answer

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def add(client, receiver, **fields):
    data = {"name": "release-channel", "url": receiver.url, "events": ["gate.blocked", "run.failed"], **fields}
    return client.post(reverse("webhooks:index"), data)


def test_a_lead_adds_a_webhook_and_sees_its_secret_once(client, lead, receiver):
    client.force_login(lead)
    response = add(client, receiver)
    assert response.status_code == 200
    hook = Webhook.objects.get()
    assert hook.events == ["gate.blocked", "run.failed"] and hook.url == receiver.url and hook.created_by == lead
    page = response.content.decode()
    assert hook.secret in page and "shown only this once" in page
    # How to check a signature, on the page itself (docs/webhooks.md is not where a new team reads it).
    assert "HMAC-SHA256 of\n  <code>&lt;X-Judgeapp-Timestamp&gt;.&lt;body&gt;</code> keyed with the webhook's secret" in page
    assert "no-store" in response["Cache-Control"]

    again = client.get(reverse("webhooks:index")).content.decode()
    assert hook.secret not in again and hook.secret[6:] not in again
    assert hook.shown_secret in again and "release-channel" in again

    entry = AuditLog.objects.get(action=AuditLog.Action.WEBHOOK_CREATED)
    assert entry.actor == lead and entry.subject == "webhook release-channel"
    assert hook.secret not in str(entry.detail) and entry.detail["events"] == ["gate.blocked", "run.failed"]


def test_a_slack_address_is_shown_without_its_credential_path(client, lead):
    client.force_login(lead)
    url = "https://hooks.slack.com/services/T000/B000/XXXXSECRETXXXX"
    client.post(reverse("webhooks:index"), {"name": "slack", "url": url, "events": ["gate.blocked"]})
    page = client.get(reverse("webhooks:index")).content.decode()
    assert "https://hooks.slack.com/services/…" in page and "XXXXSECRETXXXX" not in page
    assert "XXXXSECRETXXXX" not in str(AuditLog.objects.get(action=AuditLog.Action.WEBHOOK_CREATED).detail)


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("ftp://example.com/hook", "must start with http:// or https://"),
        ("file:///etc/passwd", "must start with http:// or https://"),
        ("javascript:alert(1)", "must start with http:// or https://"),
        ("http:///nohost", "has no host"),
        ("http://example.com/" + "a" * 2100, "at most 2000 characters"),
        ("http://example.com:99999999/", "not a URL"),
    ],
)
def test_a_bad_address_is_a_form_error_and_nothing_is_stored(client, lead, url, error):
    client.force_login(lead)
    response = client.post(reverse("webhooks:index"), {"name": "x", "url": url, "events": ["gate.blocked"]})
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not Webhook.objects.exists() and not AuditLog.objects.filter(action=AuditLog.Action.WEBHOOK_CREATED).exists()


def test_a_second_webhook_of_the_same_name_is_refused(client, lead, receiver):
    client.force_login(lead)
    add(client, receiver)
    response = add(client, receiver)
    assert response.status_code == 400 and "exists already" in response.content.decode()
    assert Webhook.objects.count() == 1


def test_send_test_posts_a_signed_test_message_and_says_the_answer(client, lead, receiver, make_webhook):
    hook, secret = make_webhook()
    client.force_login(lead)
    response = client.post(reverse("webhooks:test", args=[hook.uuid]), follow=True)
    page = response.content.decode()
    assert "Test message delivered to release-channel: the receiver answered 200." in page
    assert receiver.events() == ["webhook.test"] and receiver.requests[0].signed_with(secret)
    assert receiver.requests[0].json["text"].startswith("Test message from judgeapp to webhook release-channel, sent by leo.")
    log = re.search(r'<table id="deliveries">.*?</table>', page, re.S).group(0)
    assert "webhook.test" in log and "delivered" in log

    receiver.script(Answer(404, b"gone"))
    page = client.post(reverse("webhooks:test", args=[hook.uuid]), follow=True).content.decode()
    assert "Test message to release-channel failed: HTTP 404: gone" in page
    assert WebhookDelivery.objects.filter(status=DeliveryStatus.FAILED, last_status_code=404).count() == 1


def test_switch_off_and_on_is_audited_once_each(client, lead, make_webhook):
    hook, _ = make_webhook()
    client.force_login(lead)
    client.post(reverse("webhooks:active", args=[hook.uuid]), {})
    client.post(reverse("webhooks:active", args=[hook.uuid]), {})  # already off: nothing new
    hook.refresh_from_db()
    assert hook.active is False
    client.post(reverse("webhooks:active", args=[hook.uuid]), {"active": "on"})
    hook.refresh_from_db()
    assert hook.active is True
    reasons = list(
        AuditLog.objects.filter(action=AuditLog.Action.WEBHOOK_CHANGED).order_by("created_at", "pk")
        .values_list("reason", flat=True)
    )
    assert reasons == ["switched off", "switched on"]


def test_delete_asks_first_and_removes_the_webhook_and_its_log(client, lead, make_webhook):
    hook, _ = make_webhook()
    client.force_login(lead)
    client.post(reverse("webhooks:test", args=[hook.uuid]))
    url = reverse("webhooks:delete", args=[hook.uuid])
    page = client.get(reverse("webhooks:index")).content.decode()
    form = re.search(rf'<form\b[^>]*action="{re.escape(url)}"[^>]*>', page).group(0)
    confirm = html.unescape(re.search(r'hx-confirm="([^"]*)"', form).group(1))
    assert f'hx-post="{url}"' in form and confirm.startswith("Delete webhook 'release-channel' and its delivery log?")

    response = client.post(url, headers=HTMX)
    assert response["HX-Redirect"] == reverse("webhooks:index")
    assert not Webhook.objects.exists() and not WebhookDelivery.objects.exists()
    entry = AuditLog.objects.get(action=AuditLog.Action.WEBHOOK_DELETED)
    assert entry.actor == lead and entry.detail["deliveries"] == 1


@pytest.mark.parametrize("who", ["reviewer", "annotator"])
def test_only_a_lead_sees_the_page_or_the_link(client, request, who, make_webhook):
    hook, _ = make_webhook()
    user = request.getfixturevalue(who)
    client.force_login(user)
    assert client.get(reverse("webhooks:index")).status_code == 403
    assert client.post(
        reverse("webhooks:index"), {"name": "x", "url": "http://127.0.0.1/", "events": ["gate.blocked"]},
    ).status_code == 403
    for name in ("webhooks:test", "webhooks:active", "webhooks:delete"):
        assert client.post(reverse(name, args=[hook.uuid])).status_code == 403
    assert Webhook.objects.get().active
    assert reverse("webhooks:index") not in client.get(reverse("glossary")).content.decode()


def test_the_nav_links_the_page_for_a_lead(client, lead):
    client.force_login(lead)
    assert f'href="{reverse("webhooks:index")}"' in client.get(reverse("glossary")).content.decode()


def test_a_name_with_markup_is_shown_as_text(client, lead, receiver):
    client.force_login(lead)
    add(client, receiver, name='<img src=x onerror="alert(1)">')
    page = client.get(reverse("webhooks:index")).content.decode()
    assert '<img src=x onerror="alert(1)">' not in page and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
