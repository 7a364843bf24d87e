"""`manage.py webhooks list|add|test`: the secret printed once on stdout, a bad address one line and exit 2
with nothing stored, a test message delivered to the local receiver (or exit 2 with the receiver's answer)."""

import pytest

from judgeapp.models import AuditLog, Webhook
from tests.pointwise.conftest import cli  # noqa: F401 - the fixture
from tests.webhooks.conftest import Answer

pytestmark = pytest.mark.django_db


def test_add_prints_the_secret_once_and_list_shows_it_masked(cli, receiver):  # noqa: F811
    added = cli("webhooks", "add", "ci-channel", receiver.url, "--event", "gate.blocked", "--event", "run.failed")
    assert added.code == 0, added.err
    hook = Webhook.objects.get()
    assert added.out.strip() == hook.secret and hook.events == ["gate.blocked", "run.failed"]
    assert "not shown again" in added.err
    assert AuditLog.objects.get(action=AuditLog.Action.WEBHOOK_CREATED).actor_label.startswith("cli:")

    listed = cli("webhooks", "list")
    assert listed.code == 0 and "ci-channel" in listed.out and hook.secret not in listed.out + listed.err


def test_a_bad_address_is_one_line_and_exit_2(cli):  # noqa: F811
    result = cli("webhooks", "add", "x", "file:///etc/passwd")
    assert result.code == 2 and result.err.strip().splitlines() == ["error: the address must start with http:// or https://"]
    assert not Webhook.objects.exists()


def test_test_delivers_or_says_the_answer_and_exits_2(cli, receiver):  # noqa: F811
    cli("webhooks", "add", "ci-channel", receiver.url)
    sent = cli("webhooks", "test", "ci-channel")
    assert sent.code == 0 and sent.out.strip() == "test message delivered to ci-channel: the receiver answered 200"
    assert receiver.events() == ["webhook.test"] and "sent by cli:" in receiver.requests[0].json["text"]

    receiver.script(Answer(410, b"gone"))
    refused = cli("webhooks", "test", "ci-channel")
    assert refused.code == 2 and "not delivered: HTTP 410: gone" in refused.err
    assert cli("webhooks", "test", "nope").code == 2
