"""The alternative annotator test where a lead sees and uses it: the gate under the lead's policy (off, warn,
block, with ε), the policy form and its audit, the calibration page, the sample page and the scorecard."""

import json

import pytest
from django.urls import reverse

from calibration.core.agreement import METRIC_LABELS
from calibration.models import AgreementResult, CalibrationPolicy
from calibration.selectors.agreement import latest_agreement_for_judge, result_rows_list, results_for_sample
from calibration.selectors.alt_test import alt_test_for_run
from calibration.selectors.policy import policy_get
from calibration.services import locks
from calibration.services.agreement import agreement_compute
from calibration.services.labels import labels_import
from judgeapp.models import AuditLog
from judgeapp.releases.selectors import gate_for_run
from judgeapp.web.selectors import scorecard_get
from tests.calibration.conftest import RUBRIC_TWO, labels_csv, scores_for
from tests.helpers import rendered_without_queries

pytestmark = pytest.mark.django_db

N = 30


def set_policy(lead, **changes):
    return locks.policy_set(actor=lead, reason="test", **(policy_get().as_dict() | changes))


def label(run, people):
    """people: {annotator: function of the judge's score giving their label}."""
    rows = [
        (run.run_id, f"c{i:03d}", "helpfulness", name, give(score))
        for i, score in enumerate(scores_for(N))
        for name, give in people.items()
    ]
    sample = labels_import(data=labels_csv(rows), name="labels.csv").samples[0]
    agreement_compute(sample_pk=sample.pk)
    return sample


def same(score):
    return score


def off_by_one(score):
    return 5 if score == 1 else score - 1


def test_a_judge_as_close_to_the_people_as_each_of_them_passes_and_the_gate_says_nothing(planted_run, lead):
    run = planted_run(scores_for(N))
    label(run, {"ann": same, "bob": same, "cat": off_by_one})
    set_policy(lead, alt_test="block")
    entry = alt_test_for_run(run=run)[0]
    assert entry["passed"] is True and not entry["blocks"] and entry["test"]["winning_rate"] == 1.0
    assert entry["line"].startswith("judge planted-judge: alternative annotator test passed: the judge beats 3 of 3")
    gate = gate_for_run(run=run)
    assert gate["alt_test"][0]["passed"] is True
    assert not any("alternative annotator test" in line for line in gate["reasons"] + gate["warnings"])


def test_a_judge_far_from_every_person_fails_and_blocks_or_warns_as_the_lead_decided(planted_run, lead):
    run = planted_run(scores_for(N))
    label(run, {"ann": off_by_one, "bob": off_by_one, "cat": off_by_one})
    assert not any("alternative annotator test" in line for line in gate_for_run(run=run)["reasons"])  # off by default
    set_policy(lead, alt_test="block", alt_test_epsilon=0.1)
    gate = gate_for_run(run=run)
    blocking = [line for line in gate["reasons"] if "alternative annotator test" in line]
    expected = (
        "judge planted-judge: alternative annotator test failed: the judge beats 0 of 3 annotators at ε = 0.1 "
        "(ω = 0.00; passing needs ω ≥ 0.5)"
    )
    assert blocking == [expected]
    assert gate["passed"] is False
    set_policy(lead, alt_test="warn")
    gate = gate_for_run(run=run)
    assert not any("alternative annotator test" in line for line in gate["reasons"])
    assert any("alternative annotator test failed" in line for line in gate["warnings"])


def test_too_few_annotators_is_said_in_words_and_blocks_when_required(planted_run, lead):
    run = planted_run(scores_for(N))
    label(run, {"ann": same, "bob": same})
    set_policy(lead, alt_test="block")
    entry = alt_test_for_run(run=run)[0]
    assert entry["passed"] is None and entry["blocks"]
    assert entry["line"] == (
        "judge planted-judge: alternative annotator test not decided: not enough annotators "
        "(2 annotator(s) share items with another person; the test needs 3)"
    )
    other = planted_run(scores_for(N), run_id="unlabelled", rubric=RUBRIC_TWO)  # another rubric: its own scope
    assert alt_test_for_run(run=other)[0]["line"].endswith("not run: no sample with three or more annotators per item")


def test_a_lead_sets_the_requirement_and_epsilon_on_the_calibration_page_audited(client, lead, reviewer):
    client.force_login(lead)
    page = client.get(reverse("calibration:overview")).content.decode()
    assert 'name="alt_test"' in page and 'name="alt_test_epsilon"' in page
    form = {**CalibrationPolicy().as_dict(), "alt_test": "block", "alt_test_epsilon": "0.1", "reason": "experts are scarce"}
    form = {k: v for k, v in form.items() if v is not False and v is not None}  # an unticked box, an empty field: not sent
    client.post(reverse("calibration:policy_set"), form)
    policy = policy_get()
    assert (policy.alt_test, policy.alt_test_epsilon) == ("block", 0.1)
    audit = AuditLog.objects.get(action=AuditLog.Action.POLICY_SET)
    assert audit.actor == lead and audit.detail["alt_test"] == "block" and audit.detail["previous"]["alt_test_epsilon"] == 0.2
    for bad in ({"alt_test_epsilon": "1.5"}, {"alt_test": "sometimes"}):
        client.post(reverse("calibration:policy_set"), {**form, **bad})
        assert (policy_get().alt_test, policy_get().alt_test_epsilon) == ("block", 0.1)
    assert "is <strong>required: block when not passed</strong>" in client.get(reverse("calibration:overview")).content.decode()
    with pytest.raises(Exception, match="ε of the alternative annotator test"):
        set_policy(lead, alt_test_epsilon=1.0)


def test_the_test_shows_on_the_calibration_page_the_sample_page_and_the_scorecard(planted_run, client, reviewer, lead):
    run = planted_run(scores_for(N))
    sample = label(run, {"ann": same, "bob": same, "cat": off_by_one})
    result = AgreementResult.objects.get(sample=sample, criterion="")
    set_policy(lead, alt_test_epsilon=0.15)
    client.force_login(reviewer)
    pages = {
        "calibration": client.get(reverse("calibration:overview")).content.decode(),
        "sample": client.get(reverse("calibration:sample_detail", args=[sample.uuid])).content.decode(),
        "scorecard": client.get(
            reverse("judge_scorecard_version", args=[result.judge_name, result.judge_version])
        ).content.decode(),
    }
    for where, page in pages.items():
        assert 'data-alt-test="passed"' in page, where
        assert "Alternative annotator test at ε = 0.15" in page, where  # in the summary, plain text (no link inside a control)
        assert "What the alternative annotator test is</a>" in page, where  # its help link, below
        assert 'data-annotator="cat"' in page, where
    # Each page's view reads the test (at the lead's ε) and passes it in; the partials render it without a query.
    results = list(results_for_sample(sample=sample))
    read = {
        "calibration": {"r": result, "test": latest_agreement_for_judge()[0].alt_test},
        "sample": {"result_rows": result_rows_list(results=results), "metric_labels": METRIC_LABELS},
        "scorecard": {
            "r": result, "test": scorecard_get(name=result.judge_name, version=result.judge_version)["latest_alt_test"],
        },
    }
    for where, context in read.items():
        template = "calibration/_result_rows.html" if where == "sample" else "calibration/_beside_people.html"
        html = rendered_without_queries(template, context)
        assert 'data-alt-test="passed"' in html and "ε = 0.15" in html and 'data-annotator="cat"' in html, where


def test_agreement_prints_the_test_at_the_epsilon_asked_and_refuses_one_out_of_range(planted_run):
    from tests.calibration.test_cli import run_command

    run = planted_run(scores_for(N))
    label(run, {"ann": same, "bob": same, "cat": off_by_one})
    code, out, _ = run_command("agreement", "--json", "--epsilon", "0.1")
    test = json.loads(out)["judges"][0]["alt_test"]
    assert code == 0 and test["epsilon"] == 0.1 and test["status"] == "passed" and len(test["annotators"]) == 3
    assert json.loads(out)["judges"][0]["rates"] is None  # scores: no TPR/TNR
    code, out, _ = run_command("agreement")
    assert "alternative annotator test at ε = 0.2: passed: the judge beats 3 of 3 annotators" in out
    assert "without cat: ρ_f 1.000, ρ_h " in out
    code, out, err = run_command("agreement", "--epsilon", "1.5")
    assert code == 2 and err == "error: --epsilon 1.5: ε is from 0 up to (not including) 1" and out == ""
