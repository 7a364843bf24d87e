"""Two leads deciding on one run at the same moment: their decisions are written one after the other (the run's
row is locked), so the decision in force is always the one the audit log names last; and a release marked
while a block comes in either sees the block and is refused, or comes before it.

The race needs two database connections: threads, in a transactional test. On SQLite, whose transactions
take the write lock at BEGIN (settings: IMMEDIATE), the writes were already serialised; on PostgreSQL (CI's
second pass) only the row lock serialises them.
"""

import threading
import time

import pytest
from django.db import connection

from judgeapp.judging.errors import InputError
from judgeapp.models import AuditLog, GateDecision, Release, Run
from judgeapp.releases import services
from judgeapp.releases.selectors import gate_decision_for_run, gate_for_run
from tests.releases.test_releases import finished

pytestmark = pytest.mark.django_db(transaction=True)
ROUNDS = 8


def last_decision_entry(run) -> AuditLog:
    return (
        AuditLog.objects.filter(run=run, action__in=[AuditLog.Action.RELEASE_APPROVED, AuditLog.Action.RELEASE_BLOCKED])
        .order_by("-created_at", "-id")
        .first()
    )


def widen_the_window(monkeypatch):
    """The first decision of a round to reach its audit entry pauses before writing it: without the lock, the
    other decision is written meanwhile (decision A, decision B, entry B, entry A) and the run's decision in
    force is B while the log's last entry is A."""
    first_of_round = threading.Event()
    real = services.audit_log_create

    def audit_log_create(**kwargs):
        if not first_of_round.is_set():
            first_of_round.set()
            time.sleep(0.15)
        return real(**kwargs)

    monkeypatch.setattr(services, "audit_log_create", audit_log_create)
    return first_of_round


def at_the_same_moment(*calls):
    barrier, errors = threading.Barrier(len(calls)), []

    def run(call):
        try:
            barrier.wait(10)
            call()
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return errors


def test_approve_and_block_at_the_same_moment_leave_the_last_audit_entry_in_force(
    judge, make_system, lead, make_user, monkeypatch
):
    run = finished(judge, system=make_system("bot"))
    other = make_user("lena", "lead")
    first_of_round = widen_the_window(monkeypatch)
    for round_number in range(ROUNDS):
        first_of_round.clear()
        approver, blocker = (lead, other) if round_number % 2 else (other, lead)

        def approve(actor=approver, n=round_number):
            services.gate_decide(run=Run.objects.get(pk=run.pk), actor=actor, verdict="approved", reason=f"fine, round {n}")

        def block(actor=blocker, n=round_number):
            services.gate_decide(run=Run.objects.get(pk=run.pk), actor=actor, verdict="blocked", reason=f"wait, round {n}")

        assert at_the_same_moment(approve, block) == []
        in_force, entry = gate_decision_for_run(run=run), last_decision_entry(run)
        expected = (
            AuditLog.Action.RELEASE_APPROVED if in_force.verdict == GateDecision.Verdict.APPROVED
            else AuditLog.Action.RELEASE_BLOCKED
        )
        assert (entry.action, entry.actor_label, entry.reason) == (expected, in_force.actor_label, in_force.reason), (
            f"round {round_number}: in force {in_force.verdict} by {in_force.actor_label}, last entry {entry.action} by "
            f"{entry.actor_label}"
        )
        # The gate reads the same decision.
        assert gate_for_run(run=run)["lead_decision"]["verdict"] == in_force.verdict
    assert GateDecision.objects.filter(run=run).count() == 2 * ROUNDS


def test_a_block_that_comes_in_while_a_release_is_marked_refuses_the_release(judge, make_system, lead, make_user, monkeypatch):
    """The release read a passing gate; a block is written before its transaction: the release sees it."""
    run = finished(judge, system=make_system("bot"))
    other = make_user("lena", "lead")
    real_gate = services.gate_for_run

    def gate_then_a_block(**kwargs):
        gate = real_gate(**kwargs)
        if kwargs.get("include_lead_decision", True):  # the release's read, not the block's own
            services.gate_decide(run=run, actor=other, verdict="blocked", reason="a regression was just reported")
        return gate

    monkeypatch.setattr(services, "gate_for_run", gate_then_a_block)
    with pytest.raises(InputError, match="cannot be released: blocked by lena .*a regression was just reported"):
        services.release_mark(run=run, actor=lead, label="v2")
    assert not Release.objects.exists()
    assert gate_decision_for_run(run=run).verdict == GateDecision.Verdict.BLOCKED


def test_a_block_after_a_release_is_recorded_beside_it(judge, make_system, lead):
    run = finished(judge, system=make_system("bot"))
    release = services.release_mark(run=run, actor=lead, label="v2")
    services.gate_decide(run=run, actor=lead, verdict="blocked", reason="found a regression after shipping")
    release.refresh_from_db()
    assert release.gate["passed"] is True  # the release stands as it was decided
    assert gate_decision_for_run(run=run).verdict == GateDecision.Verdict.BLOCKED
    assert last_decision_entry(run).action == AuditLog.Action.RELEASE_BLOCKED


def test_a_release_and_a_block_at_the_same_moment_never_release_over_a_block_in_force_before_it(
    judge, make_system, lead, make_user
):
    for round_number in range(4):
        run = finished(judge, system=make_system(f"bot-{round_number}"))
        other = make_user(f"lena-{round_number}", "lead")

        def release(run=run):
            try:
                services.release_mark(run=Run.objects.get(pk=run.pk), actor=lead, label="v1")
            except InputError as exc:
                assert "cannot be released: blocked by lena" in str(exc)

        def block(run=run, actor=other):
            services.gate_decide(run=Run.objects.get(pk=run.pk), actor=actor, verdict="blocked", reason="hold on")

        assert at_the_same_moment(release, block) == []
        released = Release.objects.filter(run=run).first()
        decision = GateDecision.objects.get(run=run)
        # Either the block came first and nothing was released, or the release came first.
        assert released is None or released.created_at < decision.created_at
