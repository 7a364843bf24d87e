"""The demo's calibration step: PandaLM's real figures, and a sample two demo annotators can label to decide the lock."""

import pytest

from calibration.models import AgreementResult, Assignment, JudgeLock, Sample
from calibration.selectors.locks import lock_reason_for_scope
from calibration.selectors.policy import level_get
from calibration.selectors.run_judges import scope_for_run
from calibration.selectors.status import calibration_for_gate
from calibration.services.agreement import agreement_compute
from calibration.services.labels import label_record
from calibration.services.pandalm import RUN_ID
from calibration.services.samples import run_items
from judgeapp.demo import demo_load
from judgeapp.models import Run

# The demo's pointwise run judges on eight threads: each needs to see the committed data.
pytestmark = pytest.mark.django_db(transaction=True)


def test_demo_sample_reaches_the_minimum_for_two_annotators_and_labelling_it_unlocks_or_locks_the_judge(fake_judge):
    from django.contrib.auth.models import Group

    for role in ("reviewer", "annotator", "lead"):  # a transactional test's flush empties the roles migration's groups
        Group.objects.get_or_create(name=role)
    lines = []
    demo_load(judge_url=fake_judge.url, log=lines.append)
    assert any("PandaLM imported as run pandalm-gpt-3.5-turbo" in line for line in lines)
    real = AgreementResult.objects.get(sample__run__run_id=RUN_ID, criterion="")
    assert real.judge_name == "gpt-3.5-turbo" and not real.scripted_demo and 0.4 < real.kappa < 0.55

    minimum = level_get().min_items
    demo = Sample.objects.get(run__run_id="demo-pointwise")
    shown = demo.items.filter(leakage_flags=[])  # an item held back by the leakage scan is in no queue
    assert shown.count() >= minimum and demo.overlap == 2
    for username in ("annotator", "annotator2"):
        queue = Assignment.objects.filter(item__sample=demo, annotator__username=username)
        assert set(queue.values_list("item", flat=True)) == set(shown.values_list("pk", flat=True)), username
    assert not Assignment.objects.filter(item__sample=demo, annotator__username="annotator3").exists()
    assert any(line.startswith("see the calibration loop: log in as annotator and then as annotator2") for line in lines)

    run = demo.run
    verdicts = run_items(run=run).verdicts
    judge_name = demo.stratified_by
    scope = {"judge_name": judge_name, **dict(zip(("prompt_version", "rubric_version"), scope_for_run(run=run), strict=True))}
    queues = Assignment.objects.filter(item__sample=demo).select_related("item", "item__sample").order_by("id")

    def label_all(score_of):
        for assignment in queues:
            verdict = verdicts[(assignment.item.case_key, assignment.item.criterion, judge_name)]
            label_record(assignment=assignment, answer=str(score_of(int(verdict))))
        assert agreement_compute(sample_pk=demo.pk)
        return JudgeLock.objects.get(**scope)

    candidate = Run.objects.get(run_id="demo-pointwise-candidate")  # judged by the same judge, prompt and rubric

    # Both annotators give the judge's own scores: its agreement reaches the level, and nothing locks it.
    lock = label_all(lambda score: score)
    assert not lock.locked and lock.result.n_items >= minimum
    assert lock_reason_for_scope(judge_version=lock.judge_version, **scope) is None
    assert not calibration_for_gate(run=candidate)["reasons"]
    # Both give the opposite score (5 for its 1, 1 for its 5): the judge is locked, and the candidate's gate says so.
    lock = label_all(lambda score: 6 - score)
    assert lock.locked and lock.result.n_items >= minimum
    assert lock_reason_for_scope(judge_version=lock.judge_version, **scope)
    assert any(judge_name in reason for reason in calibration_for_gate(run=candidate)["reasons"])

    # Loading the demo again adds nothing.
    demo_load(judge_url=fake_judge.url, log=lines.append)
    assert Sample.objects.count() == 2


def test_demo_prints_a_password_for_every_account_it_queues_items_for_and_each_logs_in(fake_judge):
    import re

    from django.contrib.auth.models import Group, User
    from django.test import Client

    from calibration.models import AssignmentState

    for role in ("reviewer", "annotator", "lead"):
        Group.objects.get_or_create(name=role)
    # An account that was there before the demo, with a password of its own: `up` cannot know it, so says nothing.
    User.objects.create_user(username="reviewer", password="chosen-by-the-reviewer")
    lines = []
    demo_load(judge_url=fake_judge.url, log=lines.append)
    (accounts_line,) = [line for line in lines if line.startswith("demo accounts: ")]
    printed = dict(re.findall(r"(\S+) / (\S+) \(\w+\)", accounts_line))
    assert set(printed) == {"lead", "annotator", "annotator2", "annotator3"}
    for username, password in printed.items():
        assert Client().login(username=username, password=password), username
    queued = set(
        Assignment.objects.filter(state=AssignmentState.PENDING).values_list("annotator__username", flat=True).distinct()
    )
    assert queued == {"annotator", "annotator2"} and queued <= set(printed)
    # PandaLM's annotators (imported labels, no password) are never printed.
    imported = set(Assignment.objects.filter(item__sample__run__run_id=RUN_ID).values_list("annotator__username", flat=True))
    assert imported and not imported & set(printed)


# How one careful reader scores the support test set's replies on the support rubric (helpfulness, accuracy,
# tone): what the README promises a new user who labels the demo sample as they read it.
READER_LABELS = """
refund-01 5 5 5 | refund-02 1 2 2 | password-01 5 5 5 | password-02 5 5 4 | shipping-01 5 5 5 | shipping-02 3 5 3
shipping-03 5 5 4 | billing-01 1 3 2 | billing-02 5 5 4 | account-01 5 5 5 | account-02 1 1 1 | account-03 5 5 4
product-01 5 5 4 | product-02 5 5 4 | product-03 2 3 2 | app-01 5 5 5 | app-02 5 5 4 | subscription-01 5 5 4
subscription-02 1 1 1 | order-01 5 5 5 | order-02 5 5 4 | gift-01 5 5 4 | data-01 5 5 4 | outage-01 1 1 1
"""


def test_the_demo_judge_scores_each_criterion_close_to_a_careful_reader_and_far_from_the_opposite():
    import json

    from calibration.core.agreement import LabelPair, judge_human
    from calibration.models import DEFAULT_LEVEL_THRESHOLD
    from fakejudge.brains import support_criterion_score
    from judgeapp.demo.registry import EVALS

    criteria = ("helpfulness", "accuracy", "tone")
    reader = {}
    for entry in READER_LABELS.replace("\n", "|").split("|"):
        if entry.strip():
            case_id, *scores = entry.split()
            reader.update({(case_id, c): int(s) for c, s in zip(criteria, scores, strict=True)})
    cases = [json.loads(line) for line in (EVALS / "support" / "testset.jsonl").read_text().splitlines()]
    judged = {(c["id"], name): support_criterion_score(name, c["output"], c["input"]) for c in cases for name in criteria}
    assert set(judged) == set(reader)
    threshold = DEFAULT_LEVEL_THRESHOLD

    def kappa(labels):
        pairs = [LabelPair(key, "reader", judged[key], labels[key]) for key in sorted(judged)]
        return judge_human(pairs, label_kind="score", n_resamples=200, seed=7)["metrics"]["quadratic_kappa"]

    assert kappa(reader)["ci"][0] >= threshold  # labelled as read: calibrated
    assert kappa({key: 6 - score for key, score in reader.items()})["ci"][1] < threshold  # scored against: locked
