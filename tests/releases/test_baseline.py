"""The gate's baseline, like for like: the release marked before the run, on the cases both test sets share,
judged the same way (stored scores) or the released replies judged again the run's way (a baseline stage);
the paired difference and its interval; releases kept as decided; the comparison of two runs."""

import json

import numpy as np
import pytest

from judgeapp.judging import content, runs
from judgeapp.models import AuditLog, Purpose, Release, UnitStatus
from judgeapp.releases.core import BASELINE_RESAMPLES, BASELINE_SEED, ScorePair, baseline_reasons, paired_difference
from judgeapp.releases.selectors import decided_gate_for_run, gate_for_run, release_notes_for_release
from judgeapp.releases.services import release_mark, release_policy_set
from tests.factories import BAD_REPLY, GOOD_REPLY, RUBRIC_ONE, RUBRIC_TWO, judge_locked

pytestmark = pytest.mark.django_db

# Another rubric: another criterion, so the runs on it are not judged the way RUBRIC_ONE's are.
RUBRIC_B = b'''
name = "clarity"
[[criteria]]
name = "clarity"
description = "Is the reply easy to follow?"
scale = { 1 = "confusing", 2 = "hard to follow", 3 = "followable", 4 = "clear", 5 = "very clear" }
examples = { 1 = "Uh.", 2 = "Maybe settings.", 3 = "Check settings.", 4 = "Open Settings, then Password.", \
5 = "Open Settings > Password and click Reset." }
'''


@pytest.fixture
def system(make_system):
    return make_system("bot")


def cases(ids, reply=lambda i: GOOD_REPLY, prefix="ticket"):
    return [{"id": f"c{i:03d}", "input": f"I can't reset my password ({prefix} {i}).", "output": reply(i)} for i in ids]


def finished(judge, rows, *, system=None, rubric=RUBRIC_ONE, name="t.jsonl", threshold=1.0, **options):
    run = runs.run_create(
        kind="pointwise",
        executor="inline",
        judge=judge,
        system=system,
        testset=content.testset_store(data="\n".join(json.dumps(r) for r in rows).encode(), name=name),
        rubric=content.rubric_store(data=rubric, name="r.toml"),
        prompt=content.prompt_register(prompt="pointwise"),
        options={"threshold": threshold, **options},
    )
    return runs.run_execute_inline(run=run)


def released(judge, rows, *, system, lead, label, **kwargs):
    run = finished(judge, rows, system=system, **kwargs)
    release_mark(run=run, actor=lead, label=label)
    return run


# --- Like for like -----------------------------------------------------------------------------------------


def test_a_run_on_another_test_set_and_rubric_is_never_blocked_by_a_release_measured_on_others(judge, system, lead):
    released(judge, cases(range(4)), system=system, lead=lead, label="v1.0")
    # Test set B (other cases) and rubric B, with worse replies: nothing is shared, so nothing is compared.
    run = finished(
        judge, cases(range(10, 14), reply=lambda i: BAD_REPLY, prefix="order"), system=system, rubric=RUBRIC_B, name="b.jsonl",
    )
    gate = gate_for_run(run=run)
    assert run.report["baseline"]["how"] == "skipped" and run.report["baseline"]["cases"] == 0
    assert "no case of this run's test set b is in the test set t of bot's release v1.0" in run.report["baseline"]["reason"]
    assert gate["passed"] is True and gate["baseline_mean"] is None
    assert any(note.startswith("no comparable baseline: ") for note in gate["notes"])
    assert not any("v1.0" in reason for reason in gate["reasons"])


def test_a_lead_may_have_a_baseline_that_cannot_be_compared_block(judge, system, lead):
    released(judge, cases(range(4)), system=system, lead=lead, label="v1.0")
    release_policy_set(actor=lead, baseline_rule="mean", skipped_baseline="block", reason="every release is compared")
    run = finished(judge, cases(range(10, 14), prefix="order"), system=system, name="b.jsonl")
    gate = gate_for_run(run=run)
    assert gate["passed"] is False
    assert gate["reasons"][0].startswith("no comparable baseline: no case of this run's test set b is in")
    assert AuditLog.objects.filter(action=AuditLog.Action.RELEASE_POLICY_SET).count() == 1


def test_shared_cases_under_another_rubric_are_judged_again_once_and_a_second_gate_costs_nothing(judge, system, lead, fake_judge):
    base = released(judge, cases(range(6)), system=system, lead=lead, label="v1.0")
    # Test set B shares four of v1.0's cases (c002..c005, same inputs) and adds two; rubric B has two criteria.
    fake_judge.reset()
    run = finished(judge, cases(range(2, 8), reply=lambda i: BAD_REPLY), system=system, rubric=RUBRIC_TWO, name="b.jsonl")
    calls = fake_judge.chat_requests
    baseline = run.report["baseline"]
    assert baseline["how"] == "rejudged" and baseline["run_id"] == base.run_id and baseline["shared"] == 4
    assert baseline["judged_differently"] == ["rubric"]
    # The run's own 6 × 2 judgments, and v1.0's four shared replies × 2 criteria judged this run's way.
    units = run.judgments.filter(purpose=Purpose.BASELINE)
    assert units.count() == 8 and set(units.values_list("status", flat=True)) == {UnitStatus.DONE}
    # Pointwise asks one criterion at a time: v1.0's replies on "helpfulness", a criterion both rubrics word
    # the same, come from the response cache; only "tone" is a new question (12 of the run's own + 4).
    assert len(calls) == 12 + 4
    rejudged = [r for r in calls if GOOD_REPLY in r.prompt]
    assert len(rejudged) == 4 and all("Is the reply polite and calm?" in r.prompt for r in rejudged)
    assert units.filter(cached=True).count() == 4
    assert {u.case.case_id for u in units} == {"c002", "c003", "c004", "c005"}
    # The good released replies beat the bad new ones on the same cases: the gate blocks, naming the release.
    assert baseline["cases"] == 4 and baseline["diff"] < 0 and baseline["n_worse"] == 4
    gate = gate_for_run(run=run)
    assert gate["passed"] is False
    assert any("on the 4 cases shared with bot's release v1.0" in r for r in gate["reasons"])
    # Asking the gate again, or a second run against the same release, costs no new call for the baseline.
    fake_judge.reset()
    gate_for_run(run=run)
    decided_gate_for_run(run=run)
    assert fake_judge.chat_requests == []
    again = finished(judge, cases(range(2, 8), reply=lambda i: BAD_REPLY), system=system, rubric=RUBRIC_TWO, name="b.jsonl")
    assert fake_judge.chat_requests == [] and again.report["baseline"]["how"] == "rejudged"
    assert again.judgments.filter(purpose=Purpose.BASELINE, cached=True).count() == 8


def test_a_case_with_the_same_id_but_another_input_is_not_shared(judge, system, lead):
    released(judge, cases(range(4)), system=system, lead=lead, label="v1.0")
    changed = cases(range(4))
    changed[0]["input"] = "Something else entirely."
    run = finished(judge, changed, system=system, name="b.jsonl")
    assert run.report["baseline"]["how"] == "same" and run.report["baseline"]["shared"] == 3


def test_the_same_way_compares_the_stored_scores_paired_by_case(judge, system, lead, fake_judge):
    base = released(judge, cases(range(6)), system=system, lead=lead, label="v1.0")
    fake_judge.reset()
    run = finished(judge, cases(range(6), reply=lambda i: BAD_REPLY if i < 2 else GOOD_REPLY), system=system, name="v2.jsonl")
    assert not run.judgments.filter(purpose=Purpose.BASELINE).exists()
    # Nothing of the baseline is judged again; only the two changed replies are new questions to the judge.
    assert len(fake_judge.chat_requests) == 2 and all(BAD_REPLY in r.prompt for r in fake_judge.chat_requests)
    baseline = run.report["baseline"]
    assert baseline["how"] == "same" and baseline["run_id"] == base.run_id
    assert [c["case_id"] for c in baseline["worse"]] == ["c000", "c001"] and baseline["n_better"] == 0
    ours = {u.case.case_id: u.parsed["score"] for u in run.judgments.filter(purpose=Purpose.JUDGE)}
    theirs = {u.case.case_id: u.parsed["score"] for u in base.judgments.filter(purpose=Purpose.JUDGE)}
    assert baseline["diff"] == pytest.approx(np.mean([ours[k] - theirs[k] for k in ours]), abs=1e-12)


def test_the_baseline_run_flag_uses_the_same_machinery_and_names_its_run(judge, system):
    base = finished(judge, cases(range(4)), name="a.jsonl")
    run = finished(judge, cases(range(4), reply=lambda i: BAD_REPLY), rubric=RUBRIC_TWO, name="b.jsonl", baseline_run=base.run_id)
    gate = gate_for_run(run=run)
    assert run.report["baseline"]["how"] == "rejudged" and gate["baseline_run"] == base.run_id
    reason = next(r for r in gate["reasons"] if "shared with" in r)
    assert f"run {base.run_id} (--baseline-run)" in reason and "last released" not in reason


def test_under_the_regression_rule_only_an_interval_below_zero_blocks(judge, system, lead):
    released(judge, cases(range(8)), system=system, lead=lead, label="v1.0")
    # One case of eight worse: the mean is below the release's on the same cases, the interval reaches zero.
    run = finished(judge, cases(range(8), reply=lambda i: BAD_REPLY if i == 0 else GOOD_REPLY), system=system, name="v2.jsonl")
    baseline = run.report["baseline"]
    assert baseline["diff"] < 0 and baseline["ci95"][1] >= 0
    assert gate_for_run(run=run)["passed"] is False  # the seed's rule, the default
    release_policy_set(actor=lead, baseline_rule="regression", skipped_baseline="warn")
    assert gate_for_run(run=run)["passed"] is True
    # Every case worse: a real regression blocks under either rule.
    worse = finished(judge, cases(range(8), reply=lambda i: BAD_REPLY), system=system, name="v3.jsonl")
    reasons = gate_for_run(run=worse)["reasons"]
    assert (
        worse.report["baseline"]["ci95"][1] < 0
        and any(r.startswith("a regression against bot's release v1.0") for r in reasons)
    )


# --- The paired difference ------------------------------------------------------------------------------


def independent_paired_bootstrap(pairs, *, resamples, seed):
    """The paired bootstrap written out case by case, with plain Python sums and the percentile's linear
    rule by hand: the same generator draws, nothing else of paired_difference's."""
    by_case = {}
    for p in pairs:
        d, n = by_case.get(p.case_id, (0.0, 0))
        by_case[p.case_id] = (d + p.candidate - p.baseline, n + 1)
    keys = list(by_case)
    rng = np.random.default_rng(seed)
    estimates = []
    for _ in range(resamples):
        drawn = rng.integers(0, len(keys), size=len(keys))
        total = sum(by_case[keys[i]][0] for i in drawn)
        count = sum(by_case[keys[i]][1] for i in drawn)
        estimates.append(total / count)
    estimates.sort()

    def percentile(q):
        h = (len(estimates) - 1) * q
        low = int(h)
        return estimates[low] + (h - low) * (estimates[min(low + 1, len(estimates) - 1)] - estimates[low])

    diff = sum(d for d, _ in by_case.values()) / sum(n for _, n in by_case.values())
    return diff, [percentile(0.025), percentile(0.975)]


def test_the_paired_difference_and_its_interval_equal_an_independent_paired_bootstrap():
    rng = np.random.default_rng(7)
    pairs = [
        ScorePair(f"c{case}", criterion, float(rng.integers(1, 6)), float(rng.integers(1, 6)))
        for case in range(137)
        for criterion in ("helpfulness", "tone", "accuracy")[: 1 + case % 3]
    ]
    result = paired_difference(pairs)
    diff, ci = independent_paired_bootstrap(pairs, resamples=BASELINE_RESAMPLES, seed=BASELINE_SEED)
    assert abs(result["diff"] - diff) < 1e-9
    assert abs(result["ci95"][0] - ci[0]) < 1e-9 and abs(result["ci95"][1] - ci[1]) < 1e-9
    assert result["cases"] == 137 and result["pairs"] == len(pairs)
    assert result["candidate_mean"] - result["mean"] == pytest.approx(diff, abs=1e-12)


def test_a_runs_stored_baseline_equals_an_independent_recount_from_the_judgments(judge, system, lead):
    base = released(judge, cases(range(12)), system=system, lead=lead, label="v1.0")
    run = finished(
        judge, cases(range(12), reply=lambda i: BAD_REPLY if i % 3 == 0 else GOOD_REPLY), system=system, rubric=RUBRIC_TWO,
        name="b.jsonl",
    )
    del base
    baseline = run.report["baseline"]
    ours = {
        (u.case.case_id, u.criterion.name): u.parsed["score"] for u in run.judgments.filter(purpose=Purpose.JUDGE, status="done")
    }
    theirs = {
        (u.case.case_id, u.criterion.name): u.parsed["score"]
        for u in run.judgments.filter(purpose=Purpose.BASELINE, status="done")
    }
    order = sorted(ours, key=lambda k: (k[0], ["helpfulness", "tone"].index(k[1])))
    pairs = [ScorePair(k[0], k[1], float(ours[k]), float(theirs[k])) for k in order if k in theirs]
    diff, ci = independent_paired_bootstrap(pairs, resamples=BASELINE_RESAMPLES, seed=BASELINE_SEED)
    assert abs(baseline["diff"] - diff) < 1e-9
    assert abs(baseline["ci95"][0] - ci[0]) < 1e-9 and abs(baseline["ci95"][1] - ci[1]) < 1e-9


def test_worse_cases_come_worst_first_and_a_given_mean_is_compared_as_given():
    pairs = [ScorePair("a", "q", 5, 5), ScorePair("b", "q", 2, 5), ScorePair("c", "q", 4, 5), ScorePair("d", "q", 5, 3)]
    result = paired_difference(pairs)
    assert [c["case_id"] for c in result["worse"]] == ["b", "c"] and [c["case_id"] for c in result["better"]] == ["d"]
    assert result["n_unchanged"] == 1
    given = {"how": "given", "source": "the given baseline mean (--baseline-mean)", "mean": 3.9, "candidate_mean": 3.8}
    assert baseline_reasons(given) == ["mean 3.800 is below the given baseline mean (--baseline-mean) 3.900"]


# --- History as it was decided ------------------------------------------------------------------------------


def test_an_earlier_releases_decision_is_unchanged_by_a_later_release_and_a_lock(judge, system, lead, client):
    first = released(
        judge, cases(range(4), reply=lambda i: BAD_REPLY if i == 0 else GOOD_REPLY), system=system, lead=lead, label="v1.0",
    )
    stored = Release.objects.get(run=first)
    decided = json.loads(json.dumps(stored.gate))
    assert decided["passed"] is True and decided["decided_by"] == "leo" and decided["mean"] == first.report["mean"]
    assert stored.measured_on["rubric"] == first.versions["rubric"] and stored.measured_on["judge_name"] == judge.name
    # A better v2.0 is released later: v1.0's gate is not compared with it (it came after v1.0's run).
    released(judge, cases(range(4)), system=system, lead=lead, label="v2.0")
    assert gate_for_run(run=first)["passed"] is True
    # Then the judge is locked by calibration, in the scope v1.0 was judged in.
    judge_locked(first)
    stored.refresh_from_db()
    assert stored.gate == decided
    as_decided = decided_gate_for_run(run=first)
    assert as_decided["passed"] is True and as_decided["released"]["label"] == "v1.0"
    assert as_decided["now"]["passed"] is False and "judge locked" in as_decided["now"]["reasons"][0]
    texts = [note["text"] for note in release_notes_for_release(release=stored)]
    assert texts[0] == "superseded by v2.0"
    assert texts[1].startswith(f"judge {judge.name} locked: this release was gated by a judge now below level")
    assert texts[-1].startswith("asked today, the gate would block: judge locked")
    # The releases page shows the decision as it was, with the later events as dated notes.
    client.force_login(lead)
    page = client.get("/pointwise/releases/").content.decode()
    row = page[page.index('data-release="v1.0"'):]
    row = row[: row.index("</tbody>")]
    assert "gate passed" in row and "gate blocked" not in row
    assert "superseded by v2.0" in row and "this release was gated by a judge now below level" in row


def test_gate_json_of_a_released_run_gives_the_stored_decision_and_now_apart(judge, system, lead, capsys):
    from django.core.management import call_command

    run = released(judge, cases(range(4)), system=system, lead=lead, label="v1.0")
    judge_locked(run)
    call_command("gate", run.run_id, "--json")
    gate = json.loads(capsys.readouterr().out)
    assert gate["passed"] is True and gate["released"]["label"] == "v1.0" and gate["decided_by"] == "leo"
    assert gate["now"]["passed"] is False and gate["now"]["reasons"][0].startswith("judge locked")


# --- Two runs side by side ------------------------------------------------------------------------------------


def test_compare_runs_prints_the_regressions_first_in_markdown(judge, system, capsys):
    from django.core.management import call_command

    base = finished(judge, cases(range(5)), name="a.jsonl")
    run = finished(judge, cases(range(5), reply=lambda i: BAD_REPLY if i in (1, 3) else GOOD_REPLY), name="b.jsonl")
    call_command("compare-runs", run.run_id, base.run_id)
    out = capsys.readouterr().out
    assert out.startswith(f"## Run `{run.run_id}` against `{base.run_id}`")
    rows = [line for line in out.splitlines() if line.startswith("| c0")]
    assert [row.split(" | ")[0][2:] for row in rows[:2]] == ["c001", "c003"] and "| -" in rows[0]
    assert "2 worse, 0 better, 3 unchanged" in out


def test_the_comparison_page_sorts_regressions_first_and_filters_by_criterion(judge, reviewer, client):
    base = finished(judge, cases(range(5)), rubric=RUBRIC_TWO, name="a.jsonl")
    run = finished(judge, cases(range(5), reply=lambda i: BAD_REPLY if i == 4 else GOOD_REPLY), rubric=RUBRIC_TWO, name="b.jsonl")
    client.force_login(reviewer)
    page = client.get("/pointwise/compare/", {"run": run.run_id, "baseline": base.run_id}).content.decode()
    table = page[page.index('id="compare-table"'):]
    assert table.index("c004") < table.index("c000")
    assert 'class="worse"' in table
    only_tone = client.get(
        "/pointwise/compare/", {"run": run.run_id, "baseline": base.run_id, "criterion": "tone"},
    ).content.decode()
    body = only_tone[only_tone.index("<tbody>"):only_tone.index("</tbody>")]
    assert "tone" in body and "helpfulness" not in body
    bad = client.get("/pointwise/compare/", {"run": run.run_id, "baseline": "no-such-run"})
    assert bad.status_code == 400 and "No run &#x27;no-such-run&#x27;" in bad.content.decode()
