"""Calibrated trust: the judge's status in six words wherever it appears, people checked too, candidates
judged on a sample's labelled items and adopted, the human-corrected mean, and the judge's scorecard."""

import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse

from calibration.models import AgreementResult, Candidate, JudgeLock
from calibration.selectors.candidates import adopted_prompt_for_judge, side_by_side_for_sample
from calibration.selectors.corrected import corrected_for_run
from calibration.selectors.policy import policy_get
from calibration.selectors.run_judges import judge_configurations_for_run
from calibration.selectors.samples import annotator_panel_list
from calibration.selectors.status import calibration_for_run, status_for_judge, status_for_scope
from calibration.services import candidates as candidate_services
from calibration.services import locks
from calibration.services.labels import labels_import
from fakejudge import DemoBrain
from fakejudge.server import When, prompt_contains
from judgeapp.models import AuditLog, Executor, Judge
from tests.calibration.conftest import labels_csv, planted_grade, scores_for, two_annotators

pytestmark = pytest.mark.django_db

N = 30
CANDIDATE_MARKER = "Read each point of the scale literally before you score."


def rows_for(run, labels, *, annotator="ann", criterion="helpfulness"):
    return [(run.run_id, f"c{i:03d}", criterion, annotator, label) for i, label in enumerate(labels)]


@pytest.fixture
def arrive(eager_tasks, django_capture_on_commit_callbacks):
    """Labels arrive (as import-labels brings them), and the agreement task runs when they commit."""

    def arrive(rows):
        with django_capture_on_commit_callbacks(execute=True):
            return labels_import(data=labels_csv(rows), name="labels.csv").samples[0]

    return arrive


def gate_json(run_id) -> tuple[int, dict]:
    out = io.StringIO()
    try:
        call_command("gate", run_id, "--json", stdout=out)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, json.loads(out.getvalue())


def gate_text(run_id) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("gate", run_id, stdout=out)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, out.getvalue()


def set_policy(lead, **changes):
    policy = policy_get().as_dict() | changes
    return locks.policy_set(actor=lead, reason="test", **policy)


# --- 1. The status wherever a judge appears --------------------------------------------------------------


def test_a_judge_with_no_sample_is_not_calibrated_on_the_gate_json_and_page_and_blocks_only_under_the_blocking_policy(
    planted_run, client, reviewer, lead, capsys
):
    run = planted_run(scores_for(N))
    code, gate = gate_json(run.run_id)
    assert code == 0 and gate["passed"] is True
    assert gate["calibration"]["status"] == "not calibrated" and gate["calibration"]["blocks"] is False
    assert any(w.startswith("warning: judge not calibrated: planted-judge") for w in gate["warnings"])
    code, text = gate_text(run.run_id)
    assert code == 0 and "calibration: judge planted-judge" in text and ": not calibrated (warns)" in text

    client.force_login(reviewer)
    page = client.get(reverse("releases:gate", args=[run.run_id])).content.decode()
    assert "warning: judge not calibrated" in page and 'data-calibration="not calibrated"' in page

    set_policy(lead, not_calibrated="block")
    code, gate = gate_json(run.run_id)
    assert code == 1 and gate["passed"] is False and gate["calibration"]["blocks"] is True
    assert any(r.startswith("judge not calibrated: planted-judge") for r in gate["reasons"])
    audit = AuditLog.objects.get(action=AuditLog.Action.POLICY_SET)
    assert (
        audit.actor == lead and audit.detail["not_calibrated"] == "block" and audit.detail["previous"]["not_calibrated"] == "warn"
    )


def test_too_few_labels_says_n_of_the_minimum_and_counts_as_not_calibrated_under_the_blocking_policy(planted_run, arrive, lead):
    run = planted_run(scores_for(N))
    arrive(two_annotators(rows_for(run, scores_for(N)[:12])))
    status = calibration_for_run(run=run)[0]
    assert status["status"] == "too few labels" and "12 of the 20 labelled items" in status["summary"]
    set_policy(lead, not_calibrated="block")
    assert gate_json(run.run_id)[0] == 1  # a few labels are no way round the blocking policy


def test_a_calibrated_judge_shows_figure_interval_n_date_and_versions_and_goes_stale_when_the_prompt_changes(
    planted_run, arrive, lead
):
    run = planted_run(scores_for(N))
    arrive(two_annotators(rows_for(run, scores_for(N))))
    status = calibration_for_run(run=run)[0]
    assert status["status"] == "calibrated" and status["blocks"] is False and status["warns"] is False
    evidence = status["evidence"]
    assert evidence["value"] == pytest.approx(1.0) and evidence["ci"] and evidence["n_items"] == N
    assert evidence["prompt_version"] == run.versions["prompt"] and evidence["rubric_version"] == run.versions["rubric"]
    assert evidence["date"][:4].isdigit() and evidence["alpha"]["value"] == pytest.approx(1.0)

    other = planted_run(scores_for(N), run_id="new-prompt", prompt_text="prompt-v2")
    stale = calibration_for_run(run=other)[0]
    assert stale["status"] == "stale" and stale["changed"] == [
        {"what": "prompt", "calibrated": run.versions["prompt"], "now": "prompt-v2"}
    ]
    code, gate = gate_json(other.run_id)
    assert code == 0 and any("judge calibration stale" in w for w in gate["warnings"])
    set_policy(lead, stale="block")
    code, gate = gate_json(other.run_id)
    assert code == 1 and any("judge calibration stale" in r for r in gate["reasons"])


def test_reports_and_run_pages_carry_the_status(planted_run, arrive, client, reviewer, small_pairwise_run):
    run = planted_run(scores_for(N))
    assert run.report["calibration"][0]["status"] == "not calibrated"
    assert run.report["gate"]["calibration"]["status"] == "not calibrated"
    pairwise = small_pairwise_run()
    client.force_login(reviewer)
    for shown in (run, pairwise):
        page = client.get(reverse("run_detail", args=[shown.run_id])).content.decode()
        assert 'id="run-calibration"' in page and 'data-calibration="not calibrated"' in page
    judges = client.get(reverse("judges")).content.decode()
    assert (
        'data-judge-status="planted-judge"' in judges
        and reverse("judge_scorecard_version", args=["planted-judge", run.judge.version]) in judges
    )


# --- 2. People are checked too ---------------------------------------------------------------------------


def test_a_single_annotator_sample_warns_but_cannot_lock_under_the_default_policy(planted_run, arrive, lead):
    run = planted_run(scores_for(N))
    arrive(rows_for(run, [6 - s for s in scores_for(N)]))  # one person, disagreeing with the judge everywhere
    assert not JudgeLock.objects.filter(locked=True).exists()
    status = calibration_for_run(run=run)[0]
    assert status["status"] == "labels unreliable" and "single-annotator sample" in status["summary"]
    code, gate = gate_json(run.run_id)
    assert code == 0 and any("single-annotator sample" in w for w in gate["warnings"])
    set_policy(lead, single_annotator_locks=True)  # the lead may let such samples lock: evaluated at once
    assert JudgeLock.objects.get().locked is True
    assert gate_json(run.run_id)[0] == 1


def test_a_sample_whose_alpha_is_below_the_floor_neither_locks_nor_unlocks(planted_run, arrive):
    run = planted_run(scores_for(N))
    truth = scores_for(N)
    reversed_ = [6 - s for s in truth]
    # The people disagree with each other (alpha far below 0.667): their labels cannot lock.
    arrive(rows_for(run, reversed_, annotator="ann") + rows_for(run, truth, annotator="bob"))
    assert not JudgeLock.objects.filter(locked=True).exists()
    assert calibration_for_run(run=run)[0]["status"] == "labels unreliable"

    # Reliable people lock it; then an unreliable sample that agrees with the judge does not unlock it.
    arrive(two_annotators(rows_for(run, reversed_, annotator="cy")))
    assert JudgeLock.objects.get().locked is True
    arrive(rows_for(run, truth, annotator="dee") + rows_for(run, reversed_, annotator="eve"))
    assert JudgeLock.objects.get().locked is True
    assert calibration_for_run(run=run)[0]["status"] == "below level — locked"


def test_the_calibration_page_shows_each_annotators_agreement_with_the_others(planted_run, arrive, client, reviewer):
    run = planted_run(scores_for(N))
    truth = scores_for(N)
    careless = [1 + (i * 3) % 5 for i in range(N)]
    arrive(
        rows_for(run, truth, annotator="ann") + rows_for(run, truth, annotator="bob") + rows_for(run, careless, annotator="zed")
    )
    panel = annotator_panel_list()[0]
    by = {row["annotator"]: row for row in panel["rows"]}
    assert by["ann"]["kappa"] > by["zed"]["kappa"] and by["zed"]["stands_out"] and not by["ann"]["stands_out"]
    assert by["zed"]["alpha_without"] == pytest.approx(1.0)
    client.force_login(reviewer)
    page = client.get(reverse("calibration:overview")).content.decode()
    assert 'data-annotator="zed"' in page and "stands out" in page and 'id="judge-statuses"' in page


# --- 3. Recalibration without new labels -------------------------------------------------------------------


@pytest.fixture
def prompt_sensitive(planted_server):
    """The fake judge scores 'grade N' replies N, except under the candidate's prompt, where it scores 6 - N."""
    planted_server.action = When(
        prompt_contains(CANDIDATE_MARKER), DemoBrain(quality=lambda reply, message="": 1 - planted_grade(reply)),
        DemoBrain(quality=planted_grade)
    )
    return planted_server


def locked_run(planted_run, arrive, *, annotator="ann"):
    """A run whose judge reliable people disagree with: locked."""
    run = planted_run(scores_for(N))
    sample = arrive(two_annotators(rows_for(run, [6 - s for s in scores_for(N)], annotator=annotator)))
    assert JudgeLock.objects.get().locked
    return run, sample


def candidate_prompt(run) -> str:
    return CANDIDATE_MARKER + "\n\n" + run.prompt.text


def test_a_candidate_run_on_a_labelled_sample_reaches_the_level_and_adopted_unlocks_runs_with_its_prompt_audited(
    planted_run, arrive, prompt_sensitive, lead
):
    run, sample = locked_run(planted_run, arrive)
    assert gate_json(run.run_id)[0] == 1
    candidate = candidate_services.candidate_create(
        sample=sample, label="literal scale", prompt_text=candidate_prompt(run), executor=Executor.INLINE, created_by=lead
    )
    from judgeapp.judging.runs import run_execute_inline

    run_execute_inline(run=candidate.run)
    candidate.refresh_from_db()
    assert candidate.run.status == "done" and candidate.changes == ["prompt"]
    pooled = AgreementResult.objects.get(candidate=candidate, criterion="")
    assert pooled.kappa == pytest.approx(1.0) and pooled.n_items == N and pooled.details["confusion"]["total"] == 2 * N
    # Side by side: the current judge's figure beside the candidate's; a candidate speaks for nobody yet.
    board = side_by_side_for_sample(sample=sample)
    assert [c["result"].kappa for c in board["columns"]] == [pytest.approx(-1.0), pytest.approx(1.0)]
    assert board["columns"][0]["disagreements"][0]["reasoning"]
    assert JudgeLock.objects.get().locked

    candidate_services.candidate_adopt(candidate=candidate, actor=lead, reason="literal scale agrees with people")
    adopted_version = candidate.run.versions["prompt"]
    assert adopted_version != run.versions["prompt"]
    assert JudgeLock.objects.get(judge_version=candidate.config_version, prompt_version=adopted_version).locked is False
    adopted = AuditLog.objects.get(action=AuditLog.Action.CANDIDATE_ADOPTED)
    assert (
        adopted.actor == lead and adopted.detail["candidate"] == str(candidate.uuid)
        and adopted.detail["kappa"] == pytest.approx(1.0)
    )
    # The run judged with the old prompt keeps what it was judged with: that prompt's lock.
    assert JudgeLock.objects.get(prompt_version=run.versions["prompt"]).locked
    assert not AuditLog.objects.filter(action=AuditLog.Action.JUDGE_UNLOCKED).exists()
    code, gate = gate_json(run.run_id)
    assert code == 1 and gate["calibration"]["status"] == "below level — locked"
    # Later runs of the judge use the adopted prompt, and are calibrated.
    assert adopted_prompt_for_judge(judge_name="planted-judge").text == candidate_prompt(run)
    later = planted_run(scores_for(N), run_id="adopted-prompt", prompt_text=adopted_version)
    code, gate = gate_json(later.run_id)
    assert (
        code == 0 and gate["calibration"]["status"] == "calibrated"
        and "from candidate literal scale" in gate["calibration"]["summary"]
    )


def test_adopting_a_model_change_makes_the_judge_row_admin_owned_and_leaves_the_old_configuration_locked(
    planted_run, arrive, prompt_sensitive, lead
):
    run, sample = locked_run(planted_run, arrive)
    judge = run.judge
    Judge.objects.filter(pk=judge.pk).update(source="file")
    candidate = candidate_services.candidate_create(
        sample=sample, model="judge-model-xxl", prompt_text=candidate_prompt(run), executor=Executor.INLINE
    )
    from judgeapp.judging.runs import run_execute_inline

    run_execute_inline(run=candidate.run)
    candidate_services.candidate_adopt(candidate=Candidate.objects.get(pk=candidate.pk), actor=lead)
    judge.refresh_from_db()
    assert judge.model == "judge-model-xxl" and judge.source == "admin" and judge.version == candidate.config_version
    assert status_for_judge(judge=judge)["status"] == "calibrated"
    assert gate_json(run.run_id)[0] == 1  # scores from the locked configuration still do not ship


def test_a_reviewer_cannot_adopt(planted_run, arrive, prompt_sensitive, reviewer, client):
    run, sample = locked_run(planted_run, arrive)
    candidate = candidate_services.candidate_create(sample=sample, prompt_text=candidate_prompt(run), executor=Executor.INLINE)
    client.force_login(reviewer)
    response = client.post(reverse("calibration:candidate_adopt", args=[candidate.uuid]), {"reason": "x"})
    assert response.status_code == 403 and Candidate.objects.get().adopted_at is None


def test_a_candidate_that_changes_nothing_or_breaks_the_prompt_is_refused(planted_run, arrive):
    _, sample = locked_run(planted_run, arrive)
    from judgeapp.judging.errors import InputError

    with pytest.raises(InputError, match="the judge as it is"):
        candidate_services.candidate_create(sample=sample, executor=Executor.INLINE)
    with pytest.raises(InputError, match=r"lacks \{\{output\}\}"):
        candidate_services.candidate_create(sample=sample, prompt_text="Score {{rubric}} {{input}}", executor=Executor.INLINE)
    assert not Candidate.objects.exists()


def test_no_human_label_reaches_a_candidates_prompt(planted_run, arrive, prompt_sensitive):
    """Marker annotators label the sample; every request the fake judge got from the candidate is scanned,
    and a second sample of the same items with the opposite labels sends byte-identical prompts."""
    from judgeapp.judging.runs import run_execute_inline

    run = planted_run(scores_for(N))
    markers = ["LABELMARK-q7x-ann", "LABELMARK-q7x-bob"]
    truth = scores_for(N)
    first = arrive(rows_for(run, truth, annotator=markers[0]) + rows_for(run, truth, annotator=markers[1]))
    second = arrive(two_annotators(rows_for(run, [6 - s for s in truth], annotator="other")))
    prompt_sensitive.reset()
    sent = []
    for sample in (first, second):
        candidate = candidate_services.candidate_create(
            sample=sample, prompt_text=candidate_prompt(run), executor=Executor.INLINE,
        )
        run_execute_inline(run=candidate.run)
        sent.append(sorted(json.dumps(j.messages, sort_keys=True) for j in candidate.run.judgments.all()))
    requests = prompt_sensitive.chat_requests
    assert len(requests) == N  # the second candidate's identical prompts came from the response cache
    for request in requests:
        text = json.dumps(request.body)
        assert "LABELMARK" not in text and "annotator" not in text.lower() and str(first.uuid) not in text
        assert CANDIDATE_MARKER in request.prompt
    assert sent[0] == sent[1]  # the labels changed nothing the candidate was shown


def test_the_candidates_page_shows_the_current_judge_beside_each_candidate(
    planted_run, arrive, prompt_sensitive, client, reviewer, lead
):
    from judgeapp.judging.runs import run_execute_inline

    run, sample = locked_run(planted_run, arrive)
    client.force_login(reviewer)
    page = client.get(reverse("calibration:candidate_new", args=[sample.uuid]))
    assert page.status_code == 200 and run.prompt.text[:40] in page.content.decode()
    response = client.post(reverse("calibration:candidate_new", args=[sample.uuid]), {
        "label": "literal", "model": run.judge.model, "structured_output": "none",
        "prompt_text": candidate_prompt(run), "rubric_text": run.rubric.raw,
    })
    assert response.status_code == 302
    candidate = Candidate.objects.get()
    run_execute_inline(run=candidate.run)
    board = client.get(reverse("calibration:candidates", args=[sample.uuid])).content.decode()
    assert 'data-column="current"' in board and f'data-column="{candidate.uuid}"' in board
    assert 'class="confusion small"' in board and "Largest disagreements" in board and "Adopt this candidate" not in board
    client.force_login(lead)
    assert "Adopt this candidate" in client.get(reverse("calibration:candidates", args=[sample.uuid])).content.decode()


def test_a_large_candidate_run_waits_for_the_tick_that_names_its_calls(
    planted_run, arrive, prompt_sensitive, client, reviewer, settings
):
    import re

    run, sample = locked_run(planted_run, arrive)
    settings.LARGE_RUN_CALLS = N - 1  # one call per labelled item
    client.force_login(reviewer)
    data = {"label": "literal", "model": run.judge.model, "structured_output": "none",
            "prompt_text": candidate_prompt(run), "rubric_text": run.rubric.raw}
    refused = client.post(reverse("calibration:candidate_new", args=[sample.uuid]), data)
    assert refused.status_code == 400 and not Candidate.objects.exists()
    assert re.search(
        rf'name="large_run_confirm" value="{N}"[^>]*> Start this run of about {N} judge calls</label>', refused.content.decode(),
    )
    started = client.post(reverse("calibration:candidate_new", args=[sample.uuid]), {**data, "large_run_confirm": str(N)})
    assert started.status_code == 302 and Candidate.objects.count() == 1


# --- 4. The human-corrected mean ------------------------------------------------------------------------


def test_ppi_on_a_biased_judge_covers_the_human_mean_where_the_judge_only_interval_does_not(planted_run, arrive):
    import ppi_py

    n = 200
    human = [1 + (i * 7) % 4 for i in range(n)]  # 1..4
    judged = [h + 1 if i % 2 == 0 else h for i, h in enumerate(human)]  # the judge adds one on half the items
    run = planted_run(judged)
    labelled = list(range(0, n, 3))  # 67 items labelled by people (an import: a simple random-like subset)
    arrive(two_annotators([(run.run_id, f"c{i:03d}", "helpfulness", "ann", human[i]) for i in labelled]))
    run.refresh_from_db()

    corrected = corrected_for_run(run=run)
    truth = float(np.mean(human))
    assert corrected["n_labelled"] == len(labelled) and corrected["n_unlabelled"] == n - len(labelled)
    assert corrected["ci95"][0] <= truth <= corrected["ci95"][1]
    judge_low, judge_high = run.report["mean_ci95"]
    assert not judge_low <= truth <= judge_high  # the judge alone is confidently wrong

    y = np.array([human[i] for i in labelled], dtype=float)
    y_hat = np.array([judged[i] for i in labelled], dtype=float)
    y_hat_unlabelled = np.array([judged[i] for i in range(n) if i not in set(labelled)], dtype=float)
    assert corrected["mean"] == pytest.approx(float(ppi_py.ppi_mean_pointestimate(y, y_hat, y_hat_unlabelled)[0]), abs=1e-9)
    low, high = ppi_py.ppi_mean_ci(y, y_hat, y_hat_unlabelled, alpha=0.05)
    assert corrected["ci95"] == [pytest.approx(float(low[0]), abs=1e-9), pytest.approx(float(high[0]), abs=1e-9)]
    assert corrected["method"].startswith("PPI++")


def test_the_report_has_corrected_null_without_a_sample_and_the_live_report_fills_it(planted_run, arrive, lead):
    from judgeapp.pointwise.services import report_current

    human = [1 + (i * 7) % 4 for i in range(60)]
    run = planted_run([h + 1 if i % 2 == 0 else h for i, h in enumerate(human)])
    assert run.report["corrected"] is None
    arrive(two_annotators([(run.run_id, f"c{i:03d}", "helpfulness", "ann", human[i]) for i in range(0, 60, 2)]))
    report = report_current(run=run)
    assert set(report["corrected"]) >= {"mean", "ci95", "n_labelled", "n_unlabelled", "method"}
    # Under the lead's corrected-gate policy the lower bound is compared with the threshold.
    run.config["options"]["threshold"] = 3.0
    run.save()
    set_policy(lead, corrected_gate=True)
    gate = gate_json(run.run_id)[1]
    assert gate["corrected_low"] == pytest.approx(report["corrected"]["ci95"][0])
    assert gate["passed"] is (report["corrected"]["ci95"][0] >= 3.0 and (run.report["mean"] >= 3.0))


def test_a_stratified_sample_is_weighted_back_to_its_runs_mix_of_scores(planted_run):
    from calibration.core.ppi import stratum_weights

    weights = stratum_weights(["1", "1", "5", "5"], {"1": 10, "5": 90})
    assert weights == [pytest.approx(0.2), pytest.approx(0.2), pytest.approx(1.8), pytest.approx(1.8)]
    assert stratum_weights(["", ""], {}) is None


# --- 5. The scorecard ----------------------------------------------------------------------------------


def test_the_pandalm_scorecard_shows_kappa_0478_and_locked(settings, eager_tasks, client, reviewer):
    from calibration.services.agreement import agreement_compute
    from calibration.services.pandalm import pandalm_import

    settings.CALIBRATION_BOOTSTRAP_RESAMPLES = 1000  # the published figure's interval
    run, sample = pandalm_import()
    agreement_compute(sample_pk=sample.pk)
    version = judge_configurations_for_run(run=run)["gpt-3.5-turbo"]["version"]
    status = status_for_scope(judge_name="gpt-3.5-turbo", judge_version=version)
    assert status["status"] == "below level — locked"
    client.force_login(reviewer)
    page = client.get(reverse("judge_scorecard_version", args=["gpt-3.5-turbo", version])).content.decode()
    assert "Cohen&#x27;s kappa <strong>0.478</strong> [0.43, 0.52]" in page
    assert 'data-calibration="below level — locked"' in page and "calibration.locked" in page
    assert page.count("pandalm-gpt-3.5-turbo") >= 1


def test_the_scorecard_shows_position_consistency_calls_and_the_gates_relying_on_it(planted_run, client, reviewer):
    run = planted_run(scores_for(10))
    client.force_login(reviewer)
    response = client.get(reverse("judge_scorecard", args=["planted-judge"]))
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert 'id="calls"' in page and "Parse failures" in page and "Tokens per call" in page
    assert run.run_id in page and 'id="position-consistency"' in page and 'id="lock-history"' in page
    assert client.get(reverse("judge_scorecard_version", args=["no-such-judge", "abc"])).status_code == 404


def test_position_consistency_counts_agreeing_orders_and_the_favoured_position():
    from judgeapp.web.selectors import _position_of

    # The judge's raw "1" | "2" | "tie" in each order: "1" in ab and "2" in ba name the same reply (A).
    assert _position_of({"ab": "1", "ba": "2"}) == (True, 0, 0)
    assert _position_of({"ab": "1", "ba": "1"}) == (False, 2, 0)  # the first position both times
    assert _position_of({"ab": "2", "ba": "2"}) == (False, 0, 2)
    assert _position_of({"ab": "1", "ba": "tie"}) == (False, 1, 0)
    assert _position_of({"ab": "tie", "ba": "tie"}) == (True, 0, 0)
    assert _position_of({"ab": "A", "ba": "2"}) is None  # not a Pairwise reply: no evidence
