"""The check-up feeds the gate (issue 25, item 5): a judge whose latest check-up failed the lead's floors
blocks every gate relying on it by default — on `gate --json`, the gate page, the scorecard and the judges
page, in red — and only warns under a lead's `warn`; a new configuration of that judge stays blocked until it
is checked up itself."""

import re

import pytest
from django.urls import reverse

from calibration.models import CalibrationPolicy
from calibration.selectors.policy import policy_get
from fakejudge import ReplyJSON
from judgeapp.models import AuditLog, Judge
from tests.calibration.conftest import scores_for
from tests.calibration.test_trust import gate_json, gate_text, set_policy
from tests.checkup.builders import checkup
from tests.checkup.oracles import LabelOracle

pytestmark = pytest.mark.django_db

FIRST_ALWAYS = ReplyJSON({"reasoning": "The first reply is better.", "winner": "1"})
FAILED = "failed: position consistency 0% (floor 60%); kappa 0.00 (floor 0.40)"


def check_up(judge, server, action, run_id, sets="llmbar-natural"):
    """A check-up of `judge` on 4 pairs of `sets`, its server answering the pairs with `action`. (A second
    check-up of the same pairs would be answered by the response cache: a good one takes other pairs.)"""
    brain = server.action
    server.action = action
    try:
        return checkup(judge, sets=sets, sample=4, run_id=run_id)
    finally:
        server.action = brain


@pytest.fixture
def judged(planted_run, planted_server):
    """A pointwise run whose gate passes on its own, and its judge."""
    run = planted_run(scores_for(10))
    return run, Judge.objects.get(name="planted-judge")


def test_a_failed_check_up_blocks_the_gate_by_default_with_its_verdict_in_words(judged, planted_server, client, reviewer):
    run, judge = judged
    code, gate = gate_json(run.run_id)
    assert code == 0 and gate["passed"] is True
    assert gate["checkup"] == [{
        "judge": "planted-judge", "judge_version": judge.version, "run_id": None, "finished_at": None, "checked_version": None,
        "stale": False, "passed": None, "verdict": None, "failures": [], "notes": [], "blocks": False, "warns": False,
        "line": f"judge never checked up: planted-judge (configuration {judge.version[:12]})",
    }]

    bad = check_up(judge, planted_server, FIRST_ALWAYS, "checkup-bad")
    code, gate = gate_json(run.run_id)
    reason = (
        f"judge check-up failed: planted-judge (configuration {judge.version[:12]}): {FAILED}, "
        f"check-up run checkup-bad on {bad.finished_at:%Y-%m-%d}"
    )
    assert code == 1 and gate["passed"] is False and gate["reasons"] == [reason]
    entry = gate["checkup"][0]
    assert entry["passed"] is False and entry["verdict"] == FAILED and entry["blocks"] is True and entry["warns"] is False
    assert entry["run_id"] == "checkup-bad" and entry["checked_version"] == judge.version and entry["stale"] is False
    assert entry["notes"] == [
        "accuracy over consistent verdicts is undefined on llmbar-natural, so it was not compared with its floor (60%)"
    ]
    assert gate["calibration_policy"]["checkup_failed"] == "block"
    code, text = gate_text(run.run_id)
    assert code == 1 and reason in text

    client.force_login(reviewer)
    page = client.get(reverse("releases:gate", args=[run.run_id])).content.decode()
    assert reason in page
    cell = re.search(r'<dd id="gate-checkup">(.*?)</dd>', page, re.DOTALL).group(1)
    assert 'data-checkup="failed"' in cell and '<span class="badge failed"' in cell and FAILED in cell
    assert "blocks releases" in cell and "checked up: passed" not in cell


def test_under_the_lead_s_warn_policy_a_failed_check_up_only_warns(judged, planted_server, lead):
    run, judge = judged
    check_up(judge, planted_server, FIRST_ALWAYS, "checkup-bad")
    set_policy(lead, checkup_failed="warn")
    code, gate = gate_json(run.run_id)
    assert code == 0 and gate["passed"] is True and gate["reasons"] == []
    assert any(w.startswith("warning: judge check-up failed: planted-judge") and FAILED in w for w in gate["warnings"])
    assert gate["checkup"][0]["warns"] is True and gate["checkup"][0]["blocks"] is False
    audit = AuditLog.objects.filter(action=AuditLog.Action.POLICY_SET).latest("created_at")
    assert audit.detail["checkup_failed"] == "warn" and audit.detail["previous"]["checkup_failed"] == "block"


def test_the_lead_s_floors_decide_and_a_check_up_that_passes_them_lets_the_gate_pass(judged, planted_server, lead):
    run, judge = judged
    check_up(judge, planted_server, FIRST_ALWAYS, "checkup-bad")
    set_policy(lead, checkup_position_floor=0.0, checkup_kappa_floor=0.0)
    code, gate = gate_json(run.run_id)
    assert code == 0 and gate["checkup"][0]["passed"] is True and gate["checkup"][0]["verdict"] == "passed"

    set_policy(lead, checkup_position_floor=0.6, checkup_kappa_floor=0.4)
    assert gate_json(run.run_id)[0] == 1
    # the judge checked up again, and passing
    check_up(judge, planted_server, LabelOracle(), "checkup-good", sets="mt-bench-human")
    code, gate = gate_json(run.run_id)
    assert code == 0 and gate["passed"] is True
    assert gate["checkup"][0]["run_id"] == "checkup-good" and gate["checkup"][0]["verdict"] == "passed"


def test_a_new_configuration_of_a_judge_that_failed_stays_blocked_until_it_is_checked_up_itself(
    judged, planted_run, planted_server
):
    run, judge = judged
    bad = check_up(judge, planted_server, FIRST_ALWAYS, "checkup-bad")
    old_version = judge.version
    judge.max_tokens = 900  # a new configuration of the same judge, never checked up
    judge.save()
    new_run = planted_run(scores_for(10), run_id="new-configuration", judge=judge)
    assert judge.version != old_version

    code, gate = gate_json(new_run.run_id)
    assert code == 1 and gate["reasons"] == [
        f"judge check-up failed: planted-judge in configuration {old_version[:12]} ({FAILED}, check-up run checkup-bad on "
        f"{bad.finished_at:%Y-%m-%d}); configuration {judge.version[:12]} has not been checked up since"
    ]
    assert gate["checkup"][0]["stale"] is True and gate["checkup"][0]["checked_version"] == old_version

    check_up(judge, planted_server, LabelOracle(), "checkup-new", sets="mt-bench-human")
    assert gate_json(new_run.run_id)[0] == 0
    # The old configuration's own check-up still failed: its runs stay blocked.
    code, gate = gate_json(run.run_id)
    assert code == 1 and gate["checkup"][0]["run_id"] == "checkup-bad"


def test_an_invalid_check_up_blocks_with_its_reason(judged, planted_server):
    run, judge = judged
    check_up(judge, planted_server, ReplyJSON({"reasoning": "no idea", "winner": "both"}), "checkup-invalid")
    code, gate = gate_json(run.run_id)
    assert code == 1 and gate["checkup"][0]["verdict"].startswith("failed: the check-up is invalid (8 of 8 judge replies")
    assert gate["reasons"][0].startswith("judge check-up failed: planted-judge (configuration ")


def test_the_judges_page_and_the_scorecard_show_a_failed_check_up_red_and_a_passed_one_green(
    judged, planted_server, client, reviewer
):
    run, judge = judged
    check_up(judge, planted_server, FIRST_ALWAYS, "checkup-bad")
    client.force_login(reviewer)
    page = client.get(reverse("judges")).content.decode()
    cell = re.search(r'<div class="judge-checkup" id="checkup-planted-judge">(.*?)</form>', page, re.DOTALL).group(1)
    assert '<span class="badge failed" title="judge check-up failed: planted-judge' in cell and ">check-up failed</span>" in cell
    assert FAILED in cell and "blocks releases" in cell
    assert "badge done" not in cell and "badge passed" not in cell and "checked up: passed" not in cell
    readiness = re.search(r'<td data-readiness="planted-judge">(.*?)</td>', page, re.DOTALL).group(1)
    assert 'class="verdict tone-bad">check-up failed<' in readiness

    card = client.get(reverse("judge_scorecard_version", args=["planted-judge", judge.version])).content.decode()
    section = re.search(r'<div class="card" id="scorecard-checkup">(.*?)</div>\s*<h2>', card, re.DOTALL).group(1)
    assert 'data-checkup="failed"' in section and '<span class="badge failed"' in section and FAILED in section
    assert "checkup-bad" in section

    check_up(judge, planted_server, LabelOracle(), "checkup-good", sets="mt-bench-human")
    page = client.get(reverse("judges")).content.decode()
    cell = re.search(r'<div class="judge-checkup" id="checkup-planted-judge">(.*?)</form>', page, re.DOTALL).group(1)
    assert '<span class="badge passed"' in cell and "checked up: passed" in cell and "badge failed" not in cell


def test_a_lead_sets_the_check_up_floors_on_the_calibration_page(client, lead, reviewer):
    client.force_login(lead)
    page = client.get(reverse("calibration:overview")).content.decode()
    for name in ("checkup_failed", "checkup_position_floor", "checkup_accuracy_floor", "checkup_kappa_floor"):
        assert f'name="{name}"' in page
    assert "A judge whose latest check-up <strong>failed</strong>" in page
    form = {**CalibrationPolicy().as_dict(), "checkup_failed": "warn", "checkup_position_floor": "0.7",
            "checkup_accuracy_floor": "0.65", "checkup_kappa_floor": "0.5", "reason": "stricter check-ups"}
    form = {k: v for k, v in form.items() if v is not False and v is not None}  # an unticked box, an empty field: not sent
    client.post(reverse("calibration:policy_set"), form)
    policy = policy_get()
    assert (policy.checkup_failed, policy.checkup_position_floor, policy.checkup_accuracy_floor, policy.checkup_kappa_floor) == (
        "warn", 0.7, 0.65, 0.5
    )
    audit = AuditLog.objects.get(action=AuditLog.Action.POLICY_SET)
    assert audit.actor == lead and audit.detail["checkup_position_floor"] == 0.7
    assert audit.detail["previous"]["checkup_position_floor"] == 0.6

    client.post(reverse("calibration:policy_set"), {**form, "checkup_position_floor": "1.5"})
    assert policy_get().checkup_position_floor == 0.7  # out of range: refused
    client.force_login(reviewer)
    assert client.post(reverse("calibration:policy_set"), form).status_code == 403
