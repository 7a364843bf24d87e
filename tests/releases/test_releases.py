"""Releases and the leads' decisions: who may decide, what an approval can and cannot open, the audit log."""

import pytest
from django.core.exceptions import PermissionDenied

from judgeapp.judging import runs
from judgeapp.judging.errors import InputError
from judgeapp.models import AuditLog, GateDecision, Release
from judgeapp.releases.selectors import baseline_release_for_run, gate_for_run
from judgeapp.releases.services import gate_decide, release_mark
from tests.factories import BAD_REPLY, GOOD_REPLY, pointwise_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def system(make_system):
    return make_system("bot")


def finished(judge, *, system=None, good=True, threshold=1.0, **options):
    from judgeapp.judging.content import prompt_register, rubric_store, testset_store
    from judgeapp.judging.runs import run_create
    from tests.factories import RUBRIC_ONE, testset_bytes

    reply = GOOD_REPLY if good else BAD_REPLY
    run = run_create(
        kind="pointwise",
        executor="inline",
        judge=judge,
        system=system,
        testset=testset_store(data=testset_bytes(4, output=lambda i: reply), name=f"t-{good}.jsonl"),
        rubric=rubric_store(data=RUBRIC_ONE, name="r.toml"),
        prompt=prompt_register(prompt="pointwise"),
        options={"threshold": threshold, **options},
    )
    return runs.run_execute_inline(run=run)


def test_a_lead_approves_a_passing_gate_and_it_is_audited(judge, system, lead):
    run = finished(judge, system=system)
    decision = gate_decide(run=run, actor=lead, verdict="approved", reason="Looks good; lowest cases read.")
    assert decision.verdict == GateDecision.Verdict.APPROVED and decision.gate["passed"] is True
    entry = AuditLog.objects.get(action=AuditLog.Action.RELEASE_APPROVED)
    assert entry.actor == lead and entry.actor_label == "leo" and entry.run == run
    assert entry.reason == "Looks good; lowest cases read." and entry.created_at is not None
    assert gate_for_run(run=run)["lead_decision"]["verdict"] == "approved"


def test_an_approval_cannot_open_a_gate_the_scores_keep_closed(judge, system, lead):
    run = finished(judge, system=system, good=False, threshold=3.5)
    with pytest.raises(InputError, match="cannot be approved: mean .* below the threshold 3.5"):
        gate_decide(run=run, actor=lead, verdict="approved", reason="ship it anyway")
    assert not GateDecision.objects.exists() and not AuditLog.objects.exists()


def test_an_approval_cannot_open_a_gate_locked_by_calibration(judge, system, lead, monkeypatch):
    import calibration.selectors.status

    run = finished(judge, system=system)
    monkeypatch.setattr(calibration.selectors.status, "lock_reason_for_scope", lambda **_: "judge locked: no human sample")
    with pytest.raises(InputError, match="judge locked"):
        gate_decide(run=run, actor=lead, verdict="approved", reason="trust me")


def test_a_block_closes_a_passing_gate_until_a_lead_approves(judge, system, lead):
    run = finished(judge, system=system)
    gate_decide(run=run, actor=lead, verdict="blocked", reason="Wait for the legal review.")
    gate = gate_for_run(run=run)
    assert gate["passed"] is False and "Wait for the legal review." in gate["reasons"][-1]
    gate_decide(run=run, actor=lead, verdict="approved", reason="Legal review done.")
    assert gate_for_run(run=run)["passed"] is True
    assert list(AuditLog.objects.order_by("created_at", "id").values_list("action", flat=True)) == [
        AuditLog.Action.RELEASE_BLOCKED, AuditLog.Action.RELEASE_APPROVED,
    ]


def test_a_decision_needs_a_reason_and_a_lead(judge, system, lead, reviewer):
    run = finished(judge, system=system)
    with pytest.raises(InputError, match="give a reason"):
        gate_decide(run=run, actor=lead, verdict="blocked", reason="   ")
    with pytest.raises(PermissionDenied):
        gate_decide(run=run, actor=reviewer, verdict="approved", reason="I am not a lead")
    with pytest.raises(PermissionDenied):
        release_mark(run=run, actor=reviewer)
    assert not AuditLog.objects.exists()


def test_marking_released_makes_the_mean_the_systems_baseline(judge, system, lead):
    first = finished(judge, system=system)
    release = release_mark(run=first, actor=lead, label="v1.0", note="shipped Tuesday")
    assert release.mean == first.report["mean"] and release.system == system
    entry = AuditLog.objects.get(action=AuditLog.Action.RELEASE_MARKED)
    assert entry.actor == lead and entry.subject == "bot v1.0" and entry.detail["mean"] == first.report["mean"]
    second = finished(judge, system=system, good=False)
    gate = gate_for_run(run=second)
    # The same cases judged the same way: compared on the stored scores, paired by case.
    assert gate["baseline"]["how"] == "same" and gate["baseline"]["cases"] == 4
    assert gate["baseline_mean"] == release.mean and gate["baseline_run"] == first.run_id
    assert any("shared with bot's release v1.0" in r and "is below its" in r for r in gate["reasons"])
    # The released run's own gate compares with the release before it, not with itself.
    assert gate_for_run(run=first)["baseline_mean"] is None


def test_the_baseline_is_the_last_release_marked_before_the_run_was_created(judge, system, lead):
    first = finished(judge, system=system)
    release_mark(run=first, actor=lead, label="v1")
    second = finished(judge, system=system)
    third = finished(judge, system=system)
    release_mark(run=second, actor=lead, label="v2")
    # `third` was created before v2 was marked: v1 stays its baseline; a run created now compares with v2.
    assert baseline_release_for_run(run=third).label == "v1"
    assert baseline_release_for_run(run=second).label == "v1"
    assert baseline_release_for_run(run=finished(judge, system=system)).label == "v2"


def test_a_run_is_released_once(judge, system, lead):
    run = finished(judge, system=system)
    release_mark(run=run, actor=lead)
    with pytest.raises(InputError, match="already released"):
        release_mark(run=run, actor=lead)
    assert Release.objects.count() == 1 and AuditLog.objects.count() == 1


@pytest.mark.parametrize("problem", ["no-system", "blocked-gate", "lead-block"])
def test_only_a_valid_passing_run_of_a_system_can_be_released(judge, system, lead, problem):
    if problem == "no-system":
        run, message = finished(judge), "names no system"
    elif problem == "blocked-gate":
        run, message = finished(judge, system=system, good=False, threshold=3.5), "below the threshold"
    else:
        run, message = finished(judge, system=system), "blocked by leo on"
        gate_decide(run=run, actor=lead, verdict="blocked", reason="not yet")
    with pytest.raises(InputError, match=message):
        release_mark(run=run, actor=lead)
    assert not Release.objects.exists()


def test_an_invalid_run_cannot_be_released(judge, system, lead, fake_judge):
    from fakejudge import Reply

    fake_judge.action = Reply("no json here")
    run = finished(judge, system=system)
    assert run.status == "invalid"
    with pytest.raises(InputError, match="only a valid, finished run"):
        release_mark(run=run, actor=lead)


def test_an_unfinished_run_does_not_pass_the_gate(judge, system):
    run = pointwise_run(judge=judge, n=2, executor="celery", system=system)
    gate = gate_for_run(run=run)
    assert gate["passed"] is False and gate["reasons"] == ["the run has not finished"]
