"""Issue #28, items 2 and 3: the status reads the agreement interval (calibrated, undecided with a planning
figure, locked), the lead's policy decides what undecided does to a gate, and every figure says how labels,
ties and non-answers were counted, beside the same figure under every other handling."""

import io
import json
import math
from collections import Counter

import pytest
from django.core.management import call_command
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from calibration.core import status as status_rules
from calibration.models import AgreementResult, CalibrationPolicy
from calibration.selectors.agreement import agreement_for_run, sensitivity_for_result
from calibration.selectors.policy import level_get, policy_get
from calibration.selectors.status import calibration_for_gate, calibration_for_run
from calibration.services import locks
from calibration.services.agreement import agreement_compute
from calibration.services.labels import labels_import
from calibration.services.pandalm import DEFAULT_DIR, pandalm_import
from judgeapp.judging.errors import InputError
from judgeapp.models import AuditLog
from tests.calibration.conftest import labels_csv, scores_for, two_annotators
from tests.helpers import lock_reasons_for_run

pytestmark = pytest.mark.django_db

N = 30
LEVEL = 0.6


def reversed_on(scores, k):
    """The judge's scores with the first k labels reversed (6 - s): k = 5 of 30 gives quadratic kappa 0.667
    whose interval reaches from about 0.3 to 0.96 — across the level 0.6."""
    return [6 - s if i < k else s for i, s in enumerate(scores)]


@pytest.fixture
def arrive(eager_tasks, django_capture_on_commit_callbacks):
    def arrive(run, labels):
        rows = [(run.run_id, f"c{i:03d}", "helpfulness", "ann", label) for i, label in enumerate(labels)]
        with django_capture_on_commit_callbacks(execute=True):
            return labels_import(data=labels_csv(two_annotators(rows)), name="labels.csv").samples[0]

    return arrive


def pooled(sample):
    return AgreementResult.objects.get(sample=sample, criterion="")


def expected_more(value, ci, n):
    """The planning figure recomputed by hand: the interval's side facing the level shrinks as 1/√n."""
    side = value - ci[0] if value > LEVEL else ci[1] - value
    return math.ceil(n * (side / abs(value - LEVEL)) ** 2 - n)


def test_planted_labels_give_calibrated_undecided_and_locked_at_the_three_interval_positions(planted_run, arrive):
    scores = scores_for(N)
    run = planted_run(scores)

    above = pooled(arrive(run, scores))
    assert above.kappa_figure["ci"][0] >= LEVEL
    status = calibration_for_run(run=run)[0]
    assert status["status"] == "calibrated" and not status["warns"] and status["planning"] is None

    straddling = pooled(arrive(run, reversed_on(scores, 5)))
    value, ci = straddling.kappa, straddling.kappa_figure["ci"]
    assert ci[0] < LEVEL <= ci[1] and value > LEVEL  # the point alone would have said "calibrated"
    status = calibration_for_run(run=run)[0]
    assert status["status"] == "undecided"
    assert status["planning"]["more_items"] == expected_more(value, ci, N) > 0
    words = (
        f"about {status['planning']['more_items']} more labelled items would settle it, if the kappa stays near {value:.2f} — an "
        "estimate"
    )
    assert words in status["summary"] and words in status["line"]
    assert agreement_for_run(run=run)["status"] == "undecided"
    assert lock_reasons_for_run(run=run) == []  # an undecided result does not lock

    below = pooled(arrive(run, reversed_on(scores, N)))
    assert below.kappa_figure["ci"][1] < LEVEL
    status = calibration_for_run(run=run)[0]
    assert status["status"] == "below level — locked" and status["blocks"]
    assert "95% interval" in lock_reasons_for_run(run=run)[0]

    # A newer undecided sample neither unlocks nor relocks: the scope stays as the last decided sample left it.
    arrive(run, reversed_on(scores, 5))
    status = calibration_for_run(run=run)[0]
    assert status["status"] == "below level — locked" and "the newest sample is undecided" in status["summary"]
    assert lock_reasons_for_run(run=run)


def run_gate(run_id, capsys) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("gate", run_id, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, out.getvalue() + err.getvalue() + captured.out + captured.err


def test_an_undecided_judge_warns_on_the_gate_by_default_and_blocks_when_the_policy_says_so(planted_run, arrive, lead, capsys):
    scores = scores_for(N)
    run = planted_run(scores)
    arrive(run, reversed_on(scores, 5))
    gate = calibration_for_gate(run=run)
    assert gate["reasons"] == [] and any(w.startswith("judge calibration undecided:") for w in gate["warnings"])
    assert gate["policy"]["undecided"] == "warn"
    code, output = run_gate(run.run_id, capsys)
    assert code == 0 and "warning: judge calibration undecided:" in output and "more labelled items would settle it" in output

    locks.policy_set(actor=lead, not_calibrated="warn", stale="warn", alpha_floor=0.667, single_annotator_locks=False,
                     corrected_gate=False, undecided="block", reason="no release on an undecided judge")
    gate = calibration_for_gate(run=run)
    assert len(gate["reasons"]) == 1 and gate["reasons"][0].startswith("judge calibration undecided:")
    assert "more labelled items would settle it" in gate["reasons"][0]
    code, output = run_gate(run.run_id, capsys)
    assert code == 1 and "judge calibration undecided:" in output
    policy = CalibrationPolicy.objects.first()
    assert policy.as_dict()["undecided"] == "block" and "undecided: block" in str(policy)


def test_status_on_intervals_the_core_rule_and_its_planning_figure():
    assert status_rules.interval_position(0.7, [0.61, 0.8], 0.6) == status_rules.ABOVE
    assert status_rules.interval_position(0.7, [0.59, 0.8], 0.6) == status_rules.STRADDLES
    assert status_rules.interval_position(0.5, [0.4, 0.59], 0.6) == status_rules.BELOW
    assert status_rules.interval_position(0.61, None, 0.6) == status_rules.ABOVE  # no interval: the point
    # The example: 0.58 [0.50, 0.66] on 600 items straddles 0.6; the lower side is 0.08 wide.
    plan = status_rules.planning(0.58, [0.50, 0.66], 600, threshold=0.6, metric_name="kappa")
    assert plan["more_items"] == math.ceil(600 * (0.08 / 0.02) ** 2 - 600) == 9000
    assert plan["text"] == "about 9000 more labelled items would settle it, if the kappa stays near 0.58 — an estimate"
    on_level = status_rules.planning(0.6, [0.5, 0.7], 100, threshold=0.6, metric_name="kappa")
    assert on_level["more_items"] is None and on_level["text"].startswith("cannot be settled at this estimate")


# --- PandaLM: the handling and its sensitivity, against scikit-learn on the raw files ---------------------------

HUMAN = {0: "tie", 1: "A", 2: "B"}
JUDGE = {"1": "A", "2": "B", "tie": "tie"}


def sklearn_kappa(annotators, ties, non_answers):
    """Cohen's kappa recomputed from the raw JSON with scikit-learn, the handling written out from its words."""
    items = json.loads((DEFAULT_DIR / "testset-v1.json").read_text())
    replies = {
        r["idx"]: str(r["gpt_result"]).strip().lower()
        for r in json.loads((DEFAULT_DIR / "gpt-3.5-turbo-testset-v1.json").read_text())
    }
    judge, human, items_used = [], [], set()
    for row in items:
        verdict = JUDGE.get(replies.get(row["idx"], ""))
        labels = [HUMAN[row[f"annotator{i}"]] for i in (1, 2, 3)]
        if annotators == "majority":
            ranked = Counter(labels).most_common()
            if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
                continue
            labels = [ranked[0][0]]
        if verdict is None and non_answers == "dropped":
            continue
        for label in labels:
            said = verdict or "tie"  # a non-answer counted as the judge's tie
            if (ties != "kept" and label == "tie") or (ties == "dropped" and said == "tie"):
                continue
            judge.append(said)
            human.append(label)
            items_used.add(row["idx"])
    return cohen_kappa_score(judge, human), len(judge), len(items_used)


@pytest.fixture
def pandalm(eager_tasks):
    run, sample = pandalm_import()
    agreement_compute(sample_pk=sample.pk)
    return run, pooled(sample)


def test_pandalm_figures_under_each_handling_equal_scikit_learn_on_the_raw_files(pandalm):
    run, result = pandalm
    # The declared handling (the default) on an imported run: its unreadable replies left out, as published.
    kappa, n_pairs, _ = sklearn_kappa("pooled", "kept", "dropped")
    assert result.kappa == pytest.approx(kappa, abs=1e-12) and round(kappa, 3) == 0.478 and n_pairs == 2922
    assert result.n_labels == 2922 and result.n_unreadable == 0
    assert result.handling_words == (
        "pooled labels, ties kept, non-answers dropped (an imported run's unreadable replies are left out, as published)"
    )
    alternatives = {(a["annotators"], a["ties"], a["non_answers"]): a for a in result.sensitivity}
    assert len(alternatives) == 17 and ("pooled", "kept", "dropped") not in alternatives
    for handling, published, n_items in (
        (("majority", "kept", "dropped"), 0.493, 974),
        (("majority", "human ties dropped", "tie"), 0.569, 894),
        (("majority", "dropped", "dropped"), 0.630, 849),
        (("pooled", "human ties dropped", "dropped"), 0.5685, None),
    ):
        kappa, _, items = sklearn_kappa(*handling)
        assert alternatives[handling]["kappa"] == pytest.approx(kappa, abs=1e-12)
        assert round(kappa, len(str(published)) - 2) == published
        assert n_items is None or alternatives[handling]["n_items"] == items == n_items
    assert alternatives[("majority", "human ties dropped", "tie")]["kappa"] == pytest.approx(0.5694, abs=5e-5)

    # 0.478 is below the level 0.6; 0.630 crosses it by the handling alone.
    sensitivity = sensitivity_for_result(result, level_get())
    crossing = {(a["annotators"], a["ties"], a["non_answers"]) for a in sensitivity["alternatives"] if a["crosses"]}
    assert ("majority", "dropped", "dropped") in crossing and ("majority", "kept", "dropped") not in crossing
    report = agreement_for_run(run=run)
    assert report["handling"]["words"] == result.handling_words and len(report["sensitivity"]) == 17


def test_the_handling_is_stated_in_agreement_json_and_on_the_calibration_and_sample_pages(pandalm, client, reviewer):
    _, result = pandalm
    out = io.StringIO()
    call_command("agreement", "--json", stdout=out)
    row = json.loads(out.getvalue())["judges"][0]
    assert row["handling"]["words"].startswith("pooled labels, ties kept, non-answers dropped")
    assert row["handling"]["left_out"]["non_answers"] == 25
    assert any(a["crosses"] and a["crossing"] == "this choice alone crosses the level" for a in row["sensitivity"])

    client.force_login(reviewer)
    for page in (reverse("calibration:overview"), reverse("calibration:sample_detail", args=[result.sample.uuid])):
        html = client.get(page).content.decode()
        assert "pooled labels, ties kept, non-answers dropped" in html, page
        assert "majority labels, ties dropped, non-answers dropped" in html and "this choice alone crosses the level" in html


def test_a_new_declared_handling_recomputes_the_figures_and_says_so(pandalm, lead, django_capture_on_commit_callbacks):
    _, result = pandalm
    with django_capture_on_commit_callbacks(execute=True):
        locks.policy_set(actor=lead, not_calibrated="warn", stale="warn", alpha_floor=0.667, single_annotator_locks=False,
                         corrected_gate=False, annotators="majority", ties="dropped", non_answers="dropped")
    result.refresh_from_db()
    kappa, _, items = sklearn_kappa("majority", "dropped", "dropped")
    assert result.kappa == pytest.approx(kappa, abs=1e-12) and result.n_items == items == 849
    assert result.handling_words == "majority labels, ties dropped, non-answers dropped"
    alternatives = {(a["annotators"], a["ties"], a["non_answers"]): a for a in result.sensitivity}
    assert alternatives[("pooled", "kept", "dropped")]["kappa"] == pytest.approx(
        sklearn_kappa("pooled", "kept", "dropped")[0], abs=1e-12,
    )


def test_a_handling_outside_the_choices_is_refused_and_the_policy_kept(lead):
    with pytest.raises(InputError, match="ties: must be one of"):
        locks.policy_set(actor=lead, not_calibrated="warn", stale="warn", alpha_floor=0.667, single_annotator_locks=False,
                         corrected_gate=False, ties="sometimes")
    assert not CalibrationPolicy.objects.exists()


def test_a_lead_declares_the_handling_and_the_undecided_rule_on_the_calibration_page(client, lead):
    client.force_login(lead)
    page = client.get(reverse("calibration:overview")).content.decode()
    for name in ("undecided", "annotators", "ties", "non_answers"):
        assert f'name="{name}"' in page
    assert "Figures count <strong>pooled labels, ties kept, non-answers counted as disagreements</strong>" in page
    form = {**CalibrationPolicy().as_dict(), "undecided": "block", "annotators": "majority", "ties": "human ties dropped",
            "non_answers": "tie", "reason": "majority labels, as the paper counts them"}
    form = {k: v for k, v in form.items() if v is not False and v is not None}  # an unticked box, an empty field: not sent
    client.post(reverse("calibration:policy_set"), form)
    policy = policy_get()
    assert (
        policy.undecided, policy.annotators, policy.ties, policy.non_answers,
    ) == ("block", "majority", "human ties dropped", "tie")
    audit = AuditLog.objects.get(action=AuditLog.Action.POLICY_SET)
    assert audit.detail["ties"] == "human ties dropped" and audit.detail["previous"]["ties"] == "kept"
    page = client.get(reverse("calibration:overview")).content.decode()
    assert "majority labels, human ties dropped, non-answers counted as the judge&#x27;s ties" in page
    assert "an <strong>undecided</strong> one <strong>block the release</strong>" in page

    client.post(reverse("calibration:policy_set"), {**form, "ties": "sometimes"})
    assert policy_get().ties == "human ties dropped"  # not a choice: refused, the policy kept


def test_the_handling_core_counts_majorities_ties_and_non_answers_as_declared():
    from calibration.core.handling import Handling, handled_pairs, majority_label

    assert majority_label(["A", "A", "tie"]) == "A" and majority_label(["A", "B", "tie"]) is None
    assert majority_label(["A", "A", "B", "tie"]) is None and majority_label(["B"]) == "B"
    humans = {
        1: {"x": "A", "y": "A", "z": "B"}, 2: {"x": "tie", "y": "tie", "z": "A"}, 3: {"x": "B", "y": "A", "z": "tie"},
        4: {"x": "B"},
    }
    judged = {1: "A", 2: "tie", 3: "A", 4: None}
    pairs, counts = handled_pairs(humans, judged, handling=Handling(), label_kind="pairwise")
    assert len(pairs) == 10 and counts["non_answers"] == 1
    assert [p.judge for p in pairs if p.item == 4] == ["A"]  # a non-answer: the far label from B
    pairs, counts = handled_pairs(humans, judged, handling=Handling("majority", "dropped", "tie"), label_kind="pairwise")
    assert [(p.item, p.judge, p.human) for p in pairs] == [(1, "A", "A")]
    assert counts["left_out"] == {"no_majority": 1, "non_answers": 0, "ties": 2}
    pairs, counts = handled_pairs(
        humans, judged, handling=Handling("pooled", "human ties dropped", "dropped"), label_kind="pairwise",
    )
    assert len(pairs) == 6 and counts["left_out"] == {"no_majority": 0, "non_answers": 1, "ties": 3}  # 3 + 1 + 2, item 4 out
