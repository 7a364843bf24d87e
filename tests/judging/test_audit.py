"""One way into the audit log, with one rule for who decided (judgeapp/judging/audit.py)."""

import getpass

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import IntegrityError

from judgeapp.judging.audit import SYSTEM, audit_log_create, cli_actor
from judgeapp.models import AuditLog, Judgment, UnitStatus
from tests.factories import pointwise_run

pytestmark = pytest.mark.django_db


def test_a_person_is_the_actor_and_their_username_the_label(lead):
    entry = audit_log_create(action=AuditLog.Action.LEVEL_SET, actor=lead, subject="calibration level", reason="stricter")
    assert (entry.actor, entry.actor_label, entry.reason) == (lead, "leo", "stricter")
    lead.delete()
    entry.refresh_from_db()
    assert entry.actor is None and entry.actor_label == "leo"  # who decided outlives the account


def test_the_app_and_a_command_are_labels_with_no_actor():
    by_app = audit_log_create(action=AuditLog.Action.JUDGE_LOCKED, actor=SYSTEM, subject="judge j")
    by_command = audit_log_create(action=AuditLog.Action.JUDGES_LOADED, actor=cli_actor(), subject="judges.toml")
    assert (by_app.actor, by_app.actor_label) == (None, "system")
    assert (by_command.actor, by_command.actor_label) == (None, f"cli:{getpass.getuser()}")


@pytest.mark.parametrize("actor", [None, "", "cli:", "alice", AnonymousUser()])
def test_an_entry_that_cannot_say_who_decided_is_refused(actor):
    with pytest.raises(ValueError, match="audit actor"):
        audit_log_create(action=AuditLog.Action.RUN_CANCELLED, actor=actor, subject="r1")
    assert not AuditLog.objects.exists()


def test_a_claimed_unit_without_its_claim_token_cannot_be_stored(judge):
    from judgeapp.judging import runs

    run = pointwise_run(judge=judge, n=1)
    runs.run_start(run_pk=run.pk)
    unit = Judgment.objects.get(run=run)
    with pytest.raises(IntegrityError, match="judgment_claimed_has_token"):
        Judgment.objects.filter(pk=unit.pk).update(status=UnitStatus.CLAIMED, claimed_by="w1")
