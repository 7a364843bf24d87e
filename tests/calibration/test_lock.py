"""The lock on the release gate: planted labels lock and unlock it, audited; the level and its overrides."""

import io

import pytest
from django.core.management import call_command

from calibration.models import AgreementLevel, JudgeLock
from calibration.selectors.agreement import agreement_for_run
from calibration.selectors.policy import level_get
from calibration.services import locks
from calibration.services.agreement import agreement_compute
from calibration.services.labels import labels_import
from judgeapp.models import AuditLog
from tests.calibration.conftest import labels_csv, scores_for, two_annotators
from tests.helpers import lock_reasons_for_run

pytestmark = pytest.mark.django_db

N = 30  # above the default minimum sample size of 20


def import_labels(run, labels, *, annotator="ann", criterion="helpfulness"):
    rows = [(run.run_id, f"c{i:03d}", criterion, annotator, label) for i, label in enumerate(labels)]
    return labels_import(data=labels_csv(two_annotators(rows)), name="labels.csv").samples[0]


def agreeing(scores):
    return list(scores)


def disagreeing(scores):
    return [6 - s for s in scores]  # the reverse of the judge: kappa far below zero


@pytest.fixture
def with_tasks(eager_tasks, django_capture_on_commit_callbacks):
    """Labels arrive, their transaction commits, the agreement task runs (eagerly, here)."""

    def arrive(run, labels, **kw):
        with django_capture_on_commit_callbacks(execute=True):
            return import_labels(run, labels, **kw)

    return arrive


def run_gate(run_id, capsys) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("gate", run_id, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, out.getvalue() + err.getvalue() + captured.out + captured.err


def test_planted_labels_lock_the_gate_command_until_a_new_sample_agrees(planted_run, with_tasks, capsys):
    run = planted_run(scores_for(N))
    with_tasks(run, agreeing(scores_for(N)))
    code, output = run_gate(run.run_id, capsys)
    assert code == 0, output
    with_tasks(run, disagreeing(scores_for(N)), annotator="bob")
    code, output = run_gate(run.run_id, capsys)
    assert code == 1 and "judge locked" in output
    with_tasks(run, agreeing(scores_for(N)), annotator="cy")
    code, output = run_gate(run.run_id, capsys)
    assert code == 0, output


def test_planted_labels_perfect_agreement_locks_nothing_disagreement_locks_a_fresh_agreeing_sample_unlocks(
    planted_run, with_tasks
):
    run = planted_run(scores_for(N))
    first = with_tasks(run, agreeing(scores_for(N)))
    result = first.results.get(criterion="")
    assert result.kappa == pytest.approx(1.0) and result.n_items == N
    assert lock_reasons_for_run(run=run) == []

    with_tasks(run, disagreeing(scores_for(N)), annotator="bob")
    reasons = lock_reasons_for_run(run=run)
    assert len(reasons) == 1 and reasons[0].startswith("judge locked: planted-judge")
    assert "quadratic-weighted kappa -1.00 with people, level 0.60" in reasons[0]
    locked = AuditLog.objects.get(action=AuditLog.Action.JUDGE_LOCKED)
    assert locked.actor_label == "system" and locked.run == run and locked.detail["value"] == pytest.approx(-1.0)

    with_tasks(run, agreeing(scores_for(N)), annotator="cy")
    assert lock_reasons_for_run(run=run) == []
    unlocked = AuditLog.objects.get(action=AuditLog.Action.JUDGE_UNLOCKED)
    assert unlocked.reason.startswith("recalibrated: quadratic-weighted kappa 1.00 with people, level 0.60")


def test_a_sample_below_the_minimum_size_decides_nothing(planted_run, with_tasks):
    run = planted_run(scores_for(N))
    with_tasks(run, disagreeing(scores_for(N))[:10])
    assert lock_reasons_for_run(run=run) == []
    assert agreement_for_run(run=run)["status"] == "too few items"


def test_every_gate_in_the_scope_is_blocked_and_a_new_prompt_version_that_reaches_the_level_unlocks_its_own_runs(
    planted_run, with_tasks
):
    old = planted_run(scores_for(N), run_id="old")
    other = planted_run(scores_for(N), run_id="other-testset-same-judge")
    with_tasks(old, disagreeing(scores_for(N)))
    assert lock_reasons_for_run(run=other)  # same judge configuration, prompt and rubric, another run: blocked too
    recalibrated = planted_run(scores_for(N), run_id="new-prompt", prompt_text="prompt-v2")
    with_tasks(recalibrated, agreeing(scores_for(N)))
    assert lock_reasons_for_run(run=recalibrated) == []
    # The new prompt's sample speaks for the new prompt only: runs judged with the old one stay locked.
    assert lock_reasons_for_run(run=old) and lock_reasons_for_run(run=other)
    assert agreement_for_run(run=recalibrated)["prompt_version"] == "prompt-v2"


def test_a_new_judge_version_inherits_the_lock_until_its_own_sample_reaches_the_level(planted_run, with_tasks):
    run = planted_run(scores_for(N))
    with_tasks(run, disagreeing(scores_for(N)))
    judge = run.judge
    judge.structured_output = "json_object"  # a new configuration of the same judge
    judge.save()
    changed = planted_run(scores_for(N), run_id="changed-config", judge=judge)
    assert changed.config["judges"]["planted-judge"]["version"] != run.config["judges"]["planted-judge"]["version"]
    reasons = lock_reasons_for_run(run=changed)
    assert reasons and "has no human-scored sample that reaches the level yet" in reasons[0]
    with_tasks(changed, agreeing(scores_for(N)))
    assert lock_reasons_for_run(run=changed) == []
    assert lock_reasons_for_run(run=run)  # the old configuration stays locked


def test_a_stricter_level_locks_at_once_and_the_change_is_audited(planted_run, with_tasks, lead):
    run = planted_run(scores_for(N))
    labels = agreeing(scores_for(N))
    labels[:8] = [s + 1 if s < 5 else s - 1 for s in labels[:8]]  # mostly agreeing, off by one on a few
    with_tasks(run, labels)
    figures = agreement_for_run(run=run)
    kappa, upper = figures["kappa"], figures["metrics"]["quadratic_kappa"]["ci"][1]
    assert 0.6 < kappa < 0.95 and lock_reasons_for_run(run=run) == []
    # A level above the whole interval locks (a level inside it would leave the judge undecided, not locked).
    stricter = min(1.0, round(upper + 0.01, 2))
    locks.level_set(metric="kappa", threshold=stricter, min_items=20, actor=lead, reason="stricter for the launch")
    assert lock_reasons_for_run(run=run)
    level_audit = AuditLog.objects.get(action=AuditLog.Action.LEVEL_SET)
    assert level_audit.actor == lead and level_audit.detail["previous"]["threshold"] == 0.6
    assert AuditLog.objects.filter(action=AuditLog.Action.JUDGE_LOCKED).count() == 1
    assert AgreementLevel.objects.count() == 1 and level_get().threshold == stricter


def test_a_leads_unlock_holds_until_new_labels_arrive(planted_run, with_tasks, lead):
    run = planted_run(scores_for(N))
    sample = with_tasks(run, disagreeing(scores_for(N)))
    lock = JudgeLock.objects.get(locked=True)
    assert locks.lock_unlock(lock=lock, actor=lead, reason="the rubric was misread by the annotator") is True
    assert lock_reasons_for_run(run=run) == []
    assert AuditLog.objects.get(action=AuditLog.Action.JUDGE_UNLOCKED).actor == lead
    # Re-evaluating on the same evidence (a level re-set, a repeated task) keeps the override.
    locks.locks_evaluate()
    agreement_compute(sample_pk=sample.pk, force=True)
    assert lock_reasons_for_run(run=run) == []
    # New labels that still disagree lock it again.
    with_tasks(run, disagreeing(scores_for(N)), annotator="bob")
    assert lock_reasons_for_run(run=run)


def test_agreement_for_run_reports_the_judges_latest_human_sample(planted_run, with_tasks):
    run = planted_run(scores_for(N))
    assert agreement_for_run(run=run) is None
    with_tasks(run, agreeing(scores_for(N)))
    later = planted_run(scores_for(N), run_id="later")
    report = agreement_for_run(run=later)
    assert report["sample_run_id"] == run.run_id and report["judge"] == "planted-judge"
    assert report["status"] == "calibrated" and report["locked"] is False
    assert report["metrics"]["quadratic_kappa"]["value"] == pytest.approx(1.0)
    assert report["same_versions_as_run"] is True
    assert set(report["metrics"]) == {"exact", "within_one", "quadratic_kappa", "spearman"}
    import json

    json.dumps(report)  # goes into a JSON report as it is
