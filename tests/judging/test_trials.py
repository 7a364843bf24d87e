"""`--trials K` over real HTTP to the fake judge, whose Flip fault flips a known share p of verdicts per call:
the changed share holds the share p implies, the verdict used is the trials' majority, the gate says `flaky`
at a threshold inside the noise band (and not far outside it), a re-run of the same trials makes no call,
and K outside 1-10 is refused by the CLI, the form and the API."""

import json
from collections import Counter

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from fakejudge import DemoBrain, Flip
from judgeapp.models import Judgment, Run
from tests import factories
from tests.factories import BAD_REPLY, GOOD_REPLY, RUBRIC_ONE
from tests.pairwise.builders import run_evaluate, write_files

FLIP = 0.2
TRIALS = 5
# Two-way verdicts flipped independently with probability p per call: the trials of one judgment all agree
# when none or all of them flipped.
EXPECTED_CHANGED = 1 - (1 - FLIP) ** TRIALS - FLIP**TRIALS

JURORS = [("llama", "llama-3.1-8b-instruct", "meta"), ("mistral", "mistral-7b-instruct", "mistral"),
          ("gemma", "gemma-2-9b-it", "google")]


def oracle(reply: str, message: str = "") -> float:
    return 1.0 if GOOD_REPLY in reply else 0.0


def mixed(i: int) -> str:
    return GOOD_REPLY if i % 2 else BAD_REPLY


@pytest.mark.usefixtures("transactional_db")
def test_five_trials_of_a_flipping_jury_report_the_expected_changed_share_and_the_majority(
    make_judge, fake_judge, tmp_path, capsys
):
    for name, model, family in JURORS:
        make_judge(name, model=model, family=family)
    fake_judge.action = Flip(DemoBrain(quality=oracle), share=FLIP, seed=3)
    files = write_files(tmp_path, n=30, a={}, b={}, testset_outputs=mixed)
    argv = [
        "jury", "--testset", files["testset"], "--rubric", files["rubric"], "--judges", "llama,mistral,gemma", "--trials",
        str(TRIALS),
    ]
    code, out, err = run_evaluate(capsys, *argv, "--json")
    assert code == 0, err
    report = json.loads(out)
    noise = report["noise"]
    calls = fake_judge.stats()["chat_requests"]
    assert calls == 30 * 3 * TRIALS  # every trial a call of its own
    assert fake_judge.action.flipped == pytest.approx(FLIP * calls, rel=0.35)

    changed = noise["changed_share"]
    assert changed["items"] == 90 and changed["ci95"][0] <= EXPECTED_CHANGED <= changed["ci95"][1]
    assert noise["trials"] == TRIALS and noise["verdict_used"] == "majority"
    assert noise["retest_agreement"]["kappa"] is not None and noise["tie_rule"] == "a tied majority gives 'fail'"

    # The verdict used is each juror's majority over its trials, recounted from the stored trials.
    units = list(Judgment.objects.filter(run__run_id=report["run_id"], purpose="judge").select_related("case"))
    truth_kept = 0
    for unit in units:
        votes = Counter(t["verdict"] for t in unit.trials)
        assert unit.parsed["verdict"] == votes.most_common(1)[0][0]
        truth_kept += unit.parsed["verdict"] == ("pass" if int(unit.case.case_id[1:]) % 2 else "fail")  # mixed(i)
    assert truth_kept >= 0.85 * len(units)  # a majority flips only when 3 of 5 trials did (p ≈ 5.8%)

    # The same trials again: every one answered from the response cache, no request made, the same figures.
    code, out, err = run_evaluate(capsys, *argv, "--json")
    assert code == 0, err
    assert fake_judge.stats()["chat_requests"] == calls
    assert json.loads(out)["noise"]["changed_share"] == changed


@pytest.mark.usefixtures("transactional_db")
def test_the_gate_says_flaky_at_a_threshold_inside_the_trials_band_and_not_far_below_it(judge, fake_judge, tmp_path, capsys):
    fake_judge.action = Flip(DemoBrain(quality=lambda reply, message="": 1.0), share=FLIP, seed=5)
    testset, rubric = tmp_path / "t.jsonl", tmp_path / "r.toml"
    testset.write_bytes(factories.testset_bytes(24, output=lambda i: GOOD_REPLY))
    rubric.write_bytes(RUBRIC_ONE)
    base = [
        "pointwise", "--testset", str(testset), "--rubric", str(rubric), "--judge", judge.name, "--trials", str(TRIALS),
        "--format", "json",
    ]
    code, out, err = run_evaluate(capsys, *base, "--threshold", "1.5")
    report = json.loads(out)
    band = report["noise"]["band"]
    assert band[0] < band[1] and report["noise"]["verdict_used"] == "mean"
    means = [
        sum(t["verdict"] for t in trials) / len(trials)
        for trials in zip(*(u.trials for u in Judgment.objects.filter(run__run_id=report["run_id"], purpose="judge")))
    ]
    assert band == [pytest.approx(min(means), abs=1e-4), pytest.approx(max(means), abs=1e-4)]
    assert report["gate"]["flaky"] == [] and code == 0, err
    assert report["mean_ci95"] == report["noise"]["interval"]
    assert sum(report["histogram"].values()) == report["judged"]  # a mean score counts at its nearest point
    calls = fake_judge.stats()["chat_requests"]

    inside = round((band[0] + band[1]) / 2, 2)
    code, out, err = run_evaluate(capsys, *base, "--threshold", str(inside))
    gate = json.loads(out)["gate"]
    assert fake_judge.stats()["chat_requests"] == calls  # a re-run of the same trials makes no call
    expected = f"trial means ranged {band[0]:.2f}–{band[1]:.2f}; the threshold {inside:g} lies inside: flaky"
    assert gate["flaky"] == [expected]
    assert f"warning: {expected}" in gate["warnings"]  # the default policy warns
    assert gate["release_policy"]["flaky"] == "warn"


@pytest.mark.usefixtures("transactional_db")
def test_under_a_blocking_policy_flaky_blocks_the_gate(judge, lead, fake_judge, tmp_path, capsys):
    from judgeapp.releases.services import release_policy_set

    release_policy_set(actor=lead, baseline_rule="mean", skipped_baseline="warn", flaky="block", reason="noise must settle")
    fake_judge.action = Flip(DemoBrain(quality=lambda reply, message="": 1.0), share=FLIP, seed=5)
    testset, rubric = tmp_path / "t.jsonl", tmp_path / "r.toml"
    testset.write_bytes(factories.testset_bytes(24, output=lambda i: GOOD_REPLY))
    rubric.write_bytes(RUBRIC_ONE)
    base = [
        "pointwise", "--testset", str(testset), "--rubric", str(rubric), "--judge", judge.name, "--trials", str(TRIALS),
        "--format", "json",
    ]
    band = json.loads(run_evaluate(capsys, *base, "--threshold", "1.5")[1])["noise"]["band"]
    code, out, _ = run_evaluate(capsys, *base, "--threshold", str(round(band[0] + 0.01, 2)))
    gate = json.loads(out)["gate"]
    assert code == 1 and gate["passed"] is False
    assert any(reason.endswith("lies inside: flaky") for reason in gate["reasons"])


@pytest.mark.usefixtures("transactional_db")
@pytest.mark.parametrize("value", ["0", "11"])
def test_trials_outside_one_to_ten_is_one_line_and_exit_2_nothing_stored(judge, tmp_path, capsys, value):
    files = write_files(tmp_path, n=2, a={}, b={}, testset_outputs=mixed)
    code, _, err = run_evaluate(
        capsys, "pointwise", "--testset", files["testset"], "--rubric", files["rubric"], "--trials", value,
    )
    assert code == 2 and err.strip().count("\n") == 0 and "--trials must be a whole number from 1 to 10" in err, err
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_the_form_refuses_eleven_trials_with_a_form_error(client, reviewer, judge):
    client.force_login(reviewer)
    response = client.post(
        reverse("pointwise:new"),
        {
            "judge": judge.pk, "threshold": "3.5", "trials": "11",
            "testset_file": SimpleUploadedFile("t.jsonl", factories.testset_bytes(2, output=lambda i: GOOD_REPLY)),
            "rubric_file": SimpleUploadedFile("r.toml", RUBRIC_ONE),
        },
    )
    assert response.status_code == 400
    assert "less than or equal to 10" in response.content.decode()
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_the_run_page_shows_each_judgments_trials_and_the_scorecard_the_judges_latest_noise(
    client, reviewer, make_judge, fake_judge
):
    from judgeapp.judging import runs
    from tests.pairwise.builders import jury_run

    jurors = [make_judge(name, model=model, family=family) for name, model, family in JURORS]
    fake_judge.action = Flip(DemoBrain(quality=oracle), share=0.3, seed=11)
    run = runs.run_execute_inline(run=jury_run(judges=jurors, n=6, trials=3), concurrency=1)
    noise = run.report["noise"]
    assert set(noise["per_judge"]) == {"llama", "mistral", "gemma"}
    client.force_login(reviewer)
    page = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    assert "Noise across trials" in page and "3 trials per judgment" in page
    unit = Judgment.objects.filter(run=run, purpose="judge").order_by("id").first()
    assert "trials: " + " · ".join(t["verdict"] for t in unit.trials) in page
    detail = client.get(reverse("judgment_detail", args=[run.run_id, unit.uuid])).content.decode()
    assert 'id="trials"' in detail

    llama = noise["per_judge"]["llama"]
    card = client.get(reverse("judge_scorecard_version", args=["llama", jurors[0].version])).content.decode()
    assert 'id="scorecard-noise"' in card and run.run_id in card
    assert f"of {llama['changed_share']['items']} judgments changed verdict" in card


@pytest.mark.usefixtures("transactional_db")
def test_the_noise_is_given_per_tag_of_the_cases_each_equal_to_a_recount_of_its_stored_trials(
    judge, client, reviewer, fake_judge, tmp_path, capsys
):
    fake_judge.action = Flip(DemoBrain(quality=lambda reply, message="": 1.0), share=FLIP, seed=7)
    tags = {i: (["billing"] if i % 3 else ["billing", "refunds"]) if i % 2 else ["login"] for i in range(24)}
    rows = [{"id": f"c{i:03d}", "input": f"ticket {i}", "output": GOOD_REPLY, "tags": tags[i]} for i in range(24)]
    testset, rubric = tmp_path / "t.jsonl", tmp_path / "r.toml"
    testset.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    rubric.write_bytes(RUBRIC_ONE)
    argv = [
        "pointwise", "--testset", str(testset), "--rubric", str(rubric), "--judge", judge.name, "--trials", "3", "--format",
        "json",
    ]
    code, out, err = run_evaluate(capsys, *argv)
    assert code == 0, err
    report = json.loads(out)
    slices = {s["tag"]: s for s in report["noise"]["slices"]}
    assert set(slices) == {"billing", "refunds", "login"}

    units = Judgment.objects.filter(run__run_id=report["run_id"], purpose="judge").select_related("case")
    changed = {tag: [0, 0] for tag in slices}
    for unit in units:
        moved = len({t["verdict"] for t in unit.trials}) > 1
        for tag in tags[int(unit.case.case_id[1:])]:
            changed[tag][0] += moved
            changed[tag][1] += 1
    for tag, (moved, n) in changed.items():
        assert slices[tag]["items"] == n and slices[tag]["changed_share"]["share"] == pytest.approx(moved / n, abs=1e-4)
    shares = [s["changed_share"]["share"] for s in report["noise"]["slices"]]
    assert shares == sorted(shares, reverse=True)  # the noisiest tag first

    client.force_login(reviewer)
    page = client.get(reverse("run_detail", args=[report["run_id"]])).content.decode()
    assert 'id="run-noise-slices"' in page and "refunds:" in page
