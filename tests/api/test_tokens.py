"""API tokens: stored as a hash only, shown once, made and revoked on the profile page and with
`manage.py api-token`, each creation and revocation audited, last use recorded and shown."""

import hashlib
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import load_command_class
from django.core.management.base import OutputWrapper
from django.db import connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from judgeapp.api import services
from judgeapp.models import ApiToken, AuditLog

pytestmark = pytest.mark.django_db


def test_a_token_is_stored_as_its_hash_and_its_creation_and_revocation_are_audited(reviewer, lead):
    row, token = services.api_token_create(user=reviewer, name="github-actions", actor=lead)
    assert token.startswith(f"ja_{row.prefix}_") and len(token) > 50
    stored = ApiToken.objects.get()
    assert stored.secret_hash == hashlib.sha256(token.encode()).hexdigest()
    secret = token.split("_", 2)[2]  # the secret itself may hold "_"
    assert all(secret not in str(value) for value in ApiToken.objects.values().get().values())
    created = AuditLog.objects.get(action=AuditLog.Action.TOKEN_CREATED)
    assert created.actor == lead and created.detail["user"] == "rita" and created.detail["prefix"] == row.prefix
    assert secret not in str(created.detail) and secret not in created.subject

    assert services.api_token_revoke(token=row, actor=lead) is True
    assert services.api_token_revoke(token=row, actor=lead) is False  # twice: one revocation, one entry
    assert AuditLog.objects.filter(action=AuditLog.Action.TOKEN_REVOKED).count() == 1
    assert services.api_token_authenticate(token=token) is None


def test_two_tokens_of_one_user_are_distinct_and_only_the_exact_token_authenticates(reviewer):
    (one, token_one), (two, token_two) = services.api_token_create(user=reviewer), services.api_token_create(user=reviewer)
    assert one.prefix != two.prefix and token_one != token_two
    assert services.api_token_authenticate(token=token_one) == one
    # The right prefix with another token's secret is not a token.
    forged = f"ja_{one.prefix}_{token_two.split('_', 2)[2]}"
    assert services.api_token_authenticate(token=forged) is None
    assert services.api_token_authenticate(token="ja__") is None and services.api_token_authenticate(token="") is None


def test_last_use_is_recorded_at_most_once_a_minute(reviewer, api_as):
    row, token = services.api_token_create(user=reviewer)
    assert row.last_used_at is None
    api = api_as(token=token)
    assert api.get("/api/v1/token").status_code == 200
    first = ApiToken.objects.get().last_used_at
    assert first is not None
    api.get("/api/v1/token")
    assert ApiToken.objects.get().last_used_at == first  # a job polling every second does not write every time
    ApiToken.objects.update(last_used_at=timezone.now() - timedelta(minutes=5))
    api.get("/api/v1/token")
    assert ApiToken.objects.get().last_used_at > timezone.now() - timedelta(minutes=1)
    me = api.get("/api/v1/token").json()
    assert me == {"name": "token", "prefix": row.prefix, "user": "rita", "roles": ["reviewer"]}


# --- The command --------------------------------------------------------------------------------------------


@pytest.fixture
def command(monkeypatch, capsys):
    """`manage.py api-token …` as a shell runs it (exit status, one-line errors), in this process."""
    monkeypatch.setattr(connections, "close_all", lambda: None)

    def run(*argv):
        cmd = load_command_class("judgeapp", "api-token")
        out, err = StringIO(), StringIO()
        cmd.stdout, cmd.stderr = OutputWrapper(out), OutputWrapper(err)
        try:
            cmd.run_from_argv(["manage.py", "api-token", *argv])
            code = 0
        except SystemExit as exc:
            code = exc.code
        captured = capsys.readouterr()
        return code, out.getvalue() + captured.out, err.getvalue() + captured.err

    return run


def test_the_command_prints_the_token_once_and_it_works(command, reviewer, api_as):
    code, out, err = command("create", "rita", "--name", "github-actions")
    assert code == 0
    token = out.strip()
    assert token.startswith("ja_") and "\n" not in token
    assert "github-actions" in err and "not shown again" in err and token not in err
    assert api_as(token=token).get("/api/v1/token").json()["name"] == "github-actions"
    entry = AuditLog.objects.get(action=AuditLog.Action.TOKEN_CREATED)
    assert entry.actor is None and entry.actor_label.startswith("cli:")

    code, out, _ = command("list")
    assert code == 0 and "github-actions" in out and "rita" in out and token.split("_", 2)[2] not in out
    prefix = ApiToken.objects.get().shown
    code, out, _ = command("revoke", prefix)
    assert code == 0 and "revoked" in out
    assert api_as(token=token).get("/api/v1/token").status_code == 401


def test_the_command_refuses_an_unknown_user_in_one_line_and_warns_about_an_annotator(command, annotator):
    code, out, err = command("create", "nobody")
    assert code == 2 and err.strip() == "error: no user 'nobody'" and out == ""
    assert not ApiToken.objects.exists()
    code, out, err = command("create", "ann")
    assert code == 0 and "403" in err
    code, _, err = command("revoke", "ja_000000000000_…")
    assert code == 2 and "no token with prefix" in err


# --- The profile page ----------------------------------------------------------------------------------------


def test_the_profile_page_makes_a_token_shows_it_once_and_revokes_it(client, reviewer, api_as):
    client.force_login(reviewer)
    page = client.get(reverse("api:profile")).content.decode()
    assert "No token yet." in page and 'name="csrfmiddlewaretoken"' in page
    assert reverse("api:profile") in client.get(reverse("runs")).content.decode()  # linked in the navigation

    response = client.post(reverse("api:profile"), {"name": "laptop script"})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    html = response.content.decode()
    row = ApiToken.objects.get()
    token = html.split('id="token-value"', 1)[1].split(">", 1)[1].split("</pre>", 1)[0]
    assert token.startswith(f"ja_{row.prefix}_") and row.name == "laptop script"
    assert api_as(token=token).get("/api/v1/token").status_code == 200

    again = client.get(reverse("api:profile")).content.decode()
    assert token not in again and row.shown in again and "laptop script" in again
    assert "never" not in again.split(row.shown, 1)[1].split("</tr>", 1)[0]  # its last use is shown

    revoked = client.post(reverse("api:token_revoke", args=[row.uuid]))
    assert revoked.status_code == 302
    assert api_as(token=token).get("/api/v1/token").status_code == 401
    entry = AuditLog.objects.get(action=AuditLog.Action.TOKEN_REVOKED)
    assert entry.actor == reviewer
    assert "revoked" in client.get(reverse("api:profile")).content.decode()


def test_nobody_revokes_another_user_s_token_and_an_annotator_makes_none(client, reviewer, annotator):
    row, _token = services.api_token_create(user=reviewer)
    client.force_login(annotator)
    assert client.post(reverse("api:token_revoke", args=[row.uuid])).status_code == 404
    assert ApiToken.objects.get().revoked_at is None
    page = client.get(reverse("api:profile"))
    assert (
        page.status_code == 200 and "no use of the API" in page.content.decode() and "Create token" not in page.content.decode()
    )
    assert client.post(reverse("api:profile"), {"name": "x"}).status_code == 403
    assert ApiToken.objects.count() == 1


def test_the_profile_page_needs_a_login(reviewer):
    response = Client().get(reverse("api:profile"))
    assert response.status_code == 302 and reverse("login") in response["Location"]
