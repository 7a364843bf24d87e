"""Issue 25, item 4: a sample's agreement speaks for the judge configuration × prompt × rubric it was judged
with and nothing else, and a labelled item the judge gave no usable verdict on counts as a disagreement, so
a judge cannot get out of a lock by failing to answer."""

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from calibration.core.agreement import farthest_label
from calibration.models import AgreementResult, JudgeLock
from calibration.selectors.status import calibration_for_gate, calibration_for_run
from calibration.services import candidates as candidate_services
from calibration.services import locks
from calibration.services.labels import labels_import
from fakejudge import DemoBrain
from fakejudge.server import Reply, When
from judgeapp.judging.runs import run_execute_inline
from judgeapp.judging.selectors import unusable_for_run, verdicts_for_run
from judgeapp.models import AuditLog, Executor
from tests.calibration.conftest import RUBRIC_ONE, labels_csv, planted_grade, scores_for, two_annotators
from tests.factories import BAD_REPLY, GOOD_REPLY
from tests.helpers import lock_reasons_for_run
from tests.pairwise.builders import jury_run, pairwise_run

pytestmark = pytest.mark.django_db

N = 30
LOCKED = "below level — locked"
UNDECIDED = "undecided"
# Rubric B: the same criterion, worded otherwise — another rubric version, another task for the judge.
RUBRIC_B = RUBRIC_ONE.replace(
    b"Does the reply solve the customer's problem?", b"Does the reply fix the customer's problem in full?",
)
UNREADABLE_SENTENCE = "5 of 20 labelled items had no usable verdict (counted as disagreements)"


@pytest.fixture
def arrive(eager_tasks, django_capture_on_commit_callbacks):
    """Labels arrive from two annotators who agree with each other (alpha 1: they may lock), and the
    agreement task runs when they commit."""

    def arrive(run, labels, *, annotator="ann"):
        rows = [(run.run_id, f"c{i:03d}", "helpfulness", annotator, label) for i, label in enumerate(labels)]
        with django_capture_on_commit_callbacks(execute=True):
            return labels_import(data=labels_csv(two_annotators(rows)), name="labels.csv").samples[0]

    return arrive


def reversed_(scores):
    return [6 - s for s in scores]


def gate_json(run_id) -> tuple[int, dict]:
    out = io.StringIO()
    try:
        call_command("gate", run_id, "--json", stdout=out)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, json.loads(out.getvalue())


# --- The scope ------------------------------------------------------------------------------------------


def test_a_sample_on_rubric_a_locks_runs_on_rubric_a_and_not_a_run_on_rubric_b(planted_run, arrive):
    on_a = planted_run(scores_for(N), run_id="on-a")
    arrive(on_a, reversed_(scores_for(N)))
    other_on_a = planted_run(scores_for(N), run_id="other-on-a")
    on_b = planted_run(scores_for(N), run_id="on-b", rubric=RUBRIC_B)
    assert on_b.versions["rubric"] != on_a.versions["rubric"] and on_b.judge.version == on_a.judge.version

    # Rubric A: every run judged with it is blocked.
    assert lock_reasons_for_run(run=other_on_a)
    gate_a = calibration_for_gate(run=other_on_a)
    assert gate_a["status"]["status"] == LOCKED and gate_a["reasons"]
    assert gate_json(other_on_a.run_id)[0] == 1
    # Rubric B: no calibration lock reason; the judge is not calibrated for it, and the other rubric is said.
    assert lock_reasons_for_run(run=on_b) == []
    lock = JudgeLock.objects.get()
    assert lock.locked and (lock.prompt_version, lock.rubric_version) == (on_a.versions["prompt"], on_a.versions["rubric"])
    gate_b = calibration_for_gate(run=on_b)
    assert gate_b["reasons"] == [] and gate_b["status"]["status"] == "not calibrated" and gate_b["status"]["changed"] == []
    assert f"below the level on rubric {on_a.versions['rubric']}, not this one" in gate_b["status"]["summary"]
    code, gate = gate_json(on_b.run_id)
    assert code == 0 and gate["calibration_lock"] == [] and gate["calibration"]["status"] == "not calibrated"


def test_a_calibrated_sample_on_rubric_a_neither_calibrates_nor_stales_a_run_on_rubric_b(planted_run, arrive):
    on_a = planted_run(scores_for(N), run_id="on-a")
    arrive(on_a, scores_for(N))
    assert calibration_for_run(run=on_a)[0]["status"] == "calibrated"
    on_b = planted_run(scores_for(N), run_id="on-b", rubric=RUBRIC_B)
    status = calibration_for_run(run=on_b)[0]
    assert status["status"] == "not calibrated" and status["evidence"] is None
    assert f"calibrated on rubric {on_a.versions['rubric']}, not this one" in status["summary"]
    # The prompt changed on the same rubric: that is still staleness.
    new_prompt = planted_run(scores_for(N), run_id="new-prompt", prompt_text="prompt-v2")
    assert calibration_for_run(run=new_prompt)[0]["status"] == "stale"


def test_a_new_judge_version_inherits_the_lock_within_its_scope_only_and_its_own_sample_lifts_it_audited(planted_run, arrive):
    on_a = planted_run(scores_for(N), run_id="on-a")
    arrive(on_a, reversed_(scores_for(N)))
    judge = on_a.judge
    judge.structured_output = "json_object"  # a new configuration of the same judge
    judge.save()
    changed_on_a = planted_run(scores_for(N), run_id="changed-on-a", judge=judge)
    changed_on_b = planted_run(scores_for(N), run_id="changed-on-b", judge=judge, rubric=RUBRIC_B)
    reasons = lock_reasons_for_run(run=changed_on_a)
    assert reasons and "has no human-scored sample that reaches the level yet" in reasons[0]
    assert lock_reasons_for_run(run=changed_on_b) == []  # a lock on rubric A is inherited on rubric A only

    arrive(changed_on_a, scores_for(N))
    assert lock_reasons_for_run(run=changed_on_a) == [] and lock_reasons_for_run(run=on_a)
    unlocked = AuditLog.objects.get(action=AuditLog.Action.JUDGE_UNLOCKED)
    assert unlocked.detail["judge_version"] == judge.version and unlocked.detail["rubric_version"] == on_a.versions["rubric"]


def test_a_leads_unlock_lifts_one_scope(planted_run, arrive, lead):
    on_a = planted_run(scores_for(N), run_id="on-a")
    arrive(on_a, reversed_(scores_for(N)))
    on_b = planted_run(scores_for(N), run_id="on-b", rubric=RUBRIC_B)
    arrive(on_b, reversed_(scores_for(N)), annotator="bob")
    assert JudgeLock.objects.filter(locked=True).count() == 2
    lock_b = JudgeLock.objects.get(rubric_version=on_b.versions["rubric"])
    assert locks.lock_unlock(lock=lock_b, actor=lead, reason="rubric B's annotators misread the scale")
    assert lock_reasons_for_run(run=on_b) == [] and lock_reasons_for_run(run=on_a)
    assert AuditLog.objects.get(action=AuditLog.Action.JUDGE_UNLOCKED).detail["rubric_version"] == on_b.versions["rubric"]


def test_the_calibration_page_lists_each_lock_with_its_scope(planted_run, arrive, client, lead):
    on_a = planted_run(scores_for(N), run_id="on-a")
    arrive(on_a, reversed_(scores_for(N)))
    client.force_login(lead)
    page = client.get(reverse("calibration:overview")).content.decode()
    lock = JudgeLock.objects.get()
    assert f'data-lock="planted-judge/{lock.short_judge_version}/{lock.prompt_version}/{lock.rubric_version}"' in page
    assert f"prompt {lock.prompt_version} · rubric {lock.rubric_version}" in page


# --- Unreadable replies -----------------------------------------------------------------------------------


def test_the_farthest_label_is_never_a_match():
    assert [farthest_label(h, label_kind="score") for h in (1, 2, 3, 4, 5)] == [5, 5, 1, 1, 1]
    assert farthest_label("pass", label_kind="pass_fail") == "fail" and farthest_label("fail", label_kind="pass_fail") == "pass"
    assert [farthest_label(h, label_kind="pairwise") for h in ("A", "B", "tie")] == ["B", "A", "A"]


def test_a_judge_with_5_unreadable_replies_among_20_labelled_items_is_locked_not_too_few_labels(
    planted_run, arrive, unreadable_replies, client, reviewer
):
    """The report: three consistent experts, 15 readable replies that disagree with them, 5 that did not
    parse. It stayed "too few labels (15 of 20)" and only warned; now the 5 count, as disagreements."""
    scores = scores_for(20)
    run = planted_run(scores, run_id="unreadable", unreadable={2, 5, 9, 13, 17}, status="invalid")
    assert run.report["counts"]["parse_failures"] == 5
    sample = arrive(run, reversed_(scores))

    status = calibration_for_run(run=run)[0]
    assert status["status"] == LOCKED and status["blocks"] is True
    assert UNREADABLE_SENTENCE in status["summary"] and status["evidence"]["n_unreadable"] == 5
    pooled = AgreementResult.objects.get(sample=sample, criterion="")
    assert (pooled.n_items, pooled.n_unreadable, pooled.n_labels) == (20, 5, 40)
    assert pooled.kappa < 0.6 and pooled.details["confusion"]["total"] == 30  # the table holds the 15 verdicts given
    assert sorted(case for case, _ in pooled.details["unreadable"]) == ["c002", "c005", "c009", "c013", "c017"]

    # Every run of the judge with that prompt and rubric is blocked, and its report says why.
    later = planted_run(scores_for(N), run_id="later")
    code, gate = gate_json(later.run_id)
    assert code == 1 and gate["calibration"]["status"] == LOCKED
    assert gate["calibration"]["evidence"]["unreadable"] == UNREADABLE_SENTENCE and UNREADABLE_SENTENCE in gate["reasons"][-1]

    # The figures show it: the agreement command, the calibration page, the sample's page.
    out = io.StringIO()
    call_command("agreement", "--json", stdout=out)
    assert json.loads(out.getvalue())["judges"][0]["n_unreadable"] == 5
    client.force_login(reviewer)
    assert 'data-unreadable="5"' in client.get(reverse("calibration:overview")).content.decode()
    assert UNREADABLE_SENTENCE in client.get(reverse("calibration:sample_detail", args=[sample.uuid])).content.decode()


def test_unreadable_replies_that_would_have_been_matches_cannot_lift_a_judge_to_the_level(
    planted_run, arrive, unreadable_replies
):
    """The judge answers where it agrees with people and fails to answer elsewhere: by its readable replies
    alone it would be calibrated (kappa 1 on 20 items)."""
    scores = scores_for(N)
    run = planted_run(scores, unreadable=set(range(0, N, 3)), status="invalid")
    sample = arrive(run, scores)
    # Counted as disagreements the non-answers pull the kappa below the level; on 30 items its interval
    # still reaches across the level, so the judge is undecided — not calibrated, as it would be without them.
    status = calibration_for_run(run=run)[0]
    assert status["status"] == UNDECIDED and status["planning"]["more_items"] > 0
    pooled = AgreementResult.objects.get(sample=sample, criterion="")
    assert (pooled.n_items, pooled.n_unreadable) == (N, N // 3)
    assert pooled.agreement == pytest.approx(2 / 3) and pooled.kappa < 0.6


def test_a_candidate_that_fails_to_answer_counts_those_items_as_disagreements(planted_run, arrive, planted_server, lead):
    marker = "Score only what you are sure of."
    # Under the candidate's prompt the judge gives no verdict on the replies it scored 1; elsewhere it agrees.
    planted_server.action = When(
        lambda r: marker in r.prompt and "grade 1" in r.prompt, Reply("Not sure."), DemoBrain(quality=planted_grade)
    )
    run = planted_run(scores_for(N))
    sample = arrive(run, scores_for(N))
    candidate = candidate_services.candidate_create(
        sample=sample, prompt_text=marker + "\n\n" + run.prompt.text, executor=Executor.INLINE,
    )
    run_execute_inline(run=candidate.run)
    pooled = AgreementResult.objects.get(candidate=candidate, criterion="")
    assert pooled.n_items == N and pooled.kappa < 1.0  # the items it did not answer are not dropped
    assert pooled.n_unreadable == N // 5
    assert pooled.details["confusion"]["total"] == 2 * (N - N // 5)


def test_a_pairwise_case_with_an_unreadable_order_and_a_jurys_unjudged_case_count_as_unusable(fake_judge, make_judge):
    def oracle(reply, message=""):
        return 1.0 if GOOD_REPLY in reply else 0.0

    def a_first_on_case_1(request):
        # A's reply is the good one: shown first, this is case 1's "ab" order.
        return "(ticket 1)" in request.prompt and request.prompt.find(GOOD_REPLY) < request.prompt.find(BAD_REPLY)

    judge = make_judge("pair-judge", model="pair-judge-70b", family="mistral")
    # Case 1's first order gets an answer that is no verdict; its other order, and every other case, are fine.
    fake_judge.action = When(a_first_on_case_1, Reply("Hard to say."), DemoBrain(quality=oracle))
    pairwise = pairwise_run(judge=judge, n=4)
    run_execute_inline(run=pairwise)
    assert unusable_for_run(run=pairwise) == [("c001", "", "pair-judge")]
    assert "c001" not in {v.case_id for v in verdicts_for_run(run=pairwise)}

    jurors = [make_judge(name, model=model, family=family) for name, model, family in
              (
                  ("juror-a", "llama-3.1-8b-instruct", "meta"), ("juror-b", "mistral-7b-instruct", "mistral"),
                  ("juror-c", "gemma-2-9b-it", "google"),
              )]
    fake_judge.action = When(
        lambda r: r.model == "gemma-2-9b-it" and "(ticket 2)" in r.prompt, Reply("Hard to say."), DemoBrain(quality=oracle),
    )
    jury = jury_run(judges=jurors, n=4)
    run_execute_inline(run=jury)
    # Juror c gave no verdict on case 2; with two answers of three the pool has none either.
    assert sorted(unusable_for_run(run=jury)) == [("c002", "", "juror-c"), ("c002", "", "jury")]


def test_a_scope_without_its_lock_row_gets_one_at_the_next_refresh(planted_run, arrive):
    """An install upgraded in place kept one lock per configuration; the refresh a worker runs at its start
    (and `manage.py agreement`) gives every scope with below-level evidence its own lock."""
    from calibration.services.agreement import agreements_refresh

    on_a = planted_run(scores_for(N), run_id="on-a")
    arrive(on_a, reversed_(scores_for(N)))
    JudgeLock.objects.all().delete()  # as if the scope's lock had never been written
    assert not lock_reasons_for_run(run=on_a)
    agreements_refresh()
    assert JudgeLock.objects.get().locked and lock_reasons_for_run(run=on_a)
