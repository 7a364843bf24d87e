"""Pairwise runs through the run machinery, against the fake judge server over real HTTP."""

import json

import pytest

from fakejudge import DemoBrain, PerConversation, Reply, When
from judgeapp.judging import runs
from judgeapp.judging.errors import InputError
from judgeapp.judging.selectors import label_kind_for_run, outputs_for_run, verdicts_for_run
from judgeapp.models import Judgment, Output, Run, RunStatus, UnitStatus
from judgeapp.models import TestSet as StoredTestSet
from tests.factories import GOOD_REPLY
from tests.pairwise.builders import case_ids, good_and_bad, pairwise_run

pytestmark = pytest.mark.django_db


def oracle(reply: str, message: str = "") -> float:
    """The truth the fake judge knows: the good reply is better."""
    return 1.0 if GOOD_REPLY in reply else 0.0


def judge_prompts(server) -> list[str]:
    return [r.prompt for r in server.chat_requests if "<reply_1>" in r.prompt]


def test_every_case_is_judged_in_both_orders_with_the_replies_swapped(judge, fake_judge):
    fake_judge.action = DemoBrain(quality=oracle)
    a, b = good_and_bad(3)
    run = pairwise_run(judge=judge, a=a, b=b, n=3)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    units = {u.key: u for u in run.judgments.all()}
    assert set(units) == {f"{c}/{o}" for c in case_ids(3) for o in ("ab", "ba")}
    assert {u.order for u in units.values()} == {"ab", "ba"}
    prompts = judge_prompts(fake_judge)
    assert len(prompts) == 6
    ab, ba = units["c000/ab"].messages[0]["content"], units["c000/ba"].messages[0]["content"]
    assert ab.index(a["c000"]) < ab.index(b["c000"])
    assert ba.index(b["c000"]) < ba.index(a["c000"])


def test_position_biased_judge_gives_ties_and_an_inconclusive_report(judge, fake_judge):
    fake_judge.action = DemoBrain(quality=oracle, position_bias=1.0)
    run = pairwise_run(judge=judge, n=6)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    report = run.report
    assert report["ties"] == 6 and report["wins_a"] == 0 and report["wins_b"] == 0
    assert report["tie_rate"] == 1.0
    assert report["disagreements"] == case_ids(6)
    assert report["inconclusive"] is True and report["winner"] is None
    assert run.status == RunStatus.DONE


def test_unbiased_judge_names_the_right_winner(judge, fake_judge):
    fake_judge.action = DemoBrain(quality=oracle)
    # B has the better reply on 6 of 8 cases.
    a, b = good_and_bad(8, a_better=lambda i: i in (2, 5))
    run = pairwise_run(judge=judge, a=a, b=b, n=8)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    report = run.report
    assert report["winner"] == "B" and report["inconclusive"] is False
    assert (report["wins_a"], report["wins_b"], report["ties"]) == (2, 6, 0)
    assert report["win_rate_a"] == 0.25 and report["disagreements"] == []
    by_case = {c["case_id"]: c for c in report["cases"]}
    assert by_case["c002"]["verdict"] == "A" and by_case["c002"]["ab"] == by_case["c002"]["ba"] == "A"
    assert by_case["c000"]["verdict"] == "B"
    assert "better" in by_case["c000"]["reasoning_ab"]


def test_no_prompt_sent_to_the_server_names_a_system_or_a_version(judge, make_system, fake_judge):
    fake_judge.action = DemoBrain(quality=oracle)
    first = make_system(
        "support-bot-v1", model="gpt-4o-mini", family="openai", system_prompt="You are a support assistant. Be brief.",
    )
    second = make_system("acme-assist-version-2", model="mistral-small-2501", family="mistral", system_prompt="Be concrete.")
    run = pairwise_run(judge=judge, system_a=first, system_b=second, n=4)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error
    assert len(judge_prompts(fake_judge)) == 8
    forbidden = ["support-bot-v1", "acme-assist-version-2", "gpt-4o-mini", "mistral-small-2501", "version"]
    for request in fake_judge.chat_requests:
        text = request.all_text.lower()
        assert not [word for word in forbidden if word.lower() in text], request.all_text[:300]
    for prompt in judge_prompts(fake_judge):
        assert "<reply_1>" in prompt and "<reply_2>" in prompt
        assert "Reply A" not in prompt and "Reply B" not in prompt


def test_systems_generate_both_versions_before_the_judge_compares_them(judge, make_system, fake_judge):
    brief = make_system("bot-v1", system_prompt="Be brief.")
    full = make_system("bot-v2", system_prompt="Give concrete next steps.")
    run = pairwise_run(judge=judge, system_a=brief, system_b=full, n=3)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    outputs = list(outputs_for_run(run=run))
    assert [(o.case.case_id, o.slot) for o in outputs] == [(c, s) for c in case_ids(3) for s in ("A", "B")]
    assert {o.system.name for o in outputs if o.slot == "A"} == {"bot-v1"}
    assert run.judgments.filter(purpose="generate").count() == 6
    assert run.report["version_sources"]["A"]["system"] == "bot-v1"
    assert run.report["versions"]["a"] == brief.version


def test_a_sample_with_a_seed_gives_both_versions_identical_inputs(judge, make_system, fake_judge):
    one, two = make_system("bot-one", system_prompt="Be thorough."), make_system("bot-two", system_prompt="Be brief.")
    run = pairwise_run(judge=judge, system_a=one, system_b=two, n=20, sample=5, seed=11)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    generated = {}
    for request in fake_judge.chat_requests:
        if "<reply_1>" not in request.prompt:
            generated.setdefault(request.messages[0]["content"], set()).add(request.messages[-1]["content"])
    inputs_a, inputs_b = generated.values()
    assert inputs_a == inputs_b and len(inputs_a) == 5
    sampled = run.config["options"]["case_ids"]
    assert len(sampled) == 5
    again = pairwise_run(judge=judge, system_a=one, system_b=two, n=20, sample=5, seed=11)
    assert again.config["options"]["case_ids"] == sampled
    assert {c["case_id"] for c in run.report["cases"]} == set(sampled)
    assert run.report["sample"] == {"size": 5, "seed": 11, "of": 20}


def test_a_reply_unparseable_after_the_retry_leaves_that_case_unjudged_not_single_order(judge, fake_judge):
    brain = DemoBrain(quality=oracle)
    # Case 1's swapped order never parses; its first order is fine.
    fake_judge.action = When(
        lambda r: "(case 1)" in r.prompt and r.prompt.index("No idea") < r.prompt.index("Sorry for the trouble"),
        Reply("I prefer the first one."),
        brain,
    )
    run = pairwise_run(judge=judge, n=4, a=good_and_bad(4)[0], b=good_and_bad(4)[1])
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    failed = run.judgments.get(key="c001/ba")
    assert failed.status == UnitStatus.FAILED and failed.parse_attempts == 2
    report = run.report
    assert report["unjudged"] == ["c001"] and report["judged"] == 3 and report["wins_a"] == 3
    assert report["parse_failures"] == 1
    # 1 of 4 cases without a both-order verdict is more than 5%: the comparison is not trusted.
    assert run.status == RunStatus.INVALID and report["inconclusive"] is True
    case = next(c for c in report["cases"] if c["case_id"] == "c001")
    assert case["ab"] == "A" and case["ba"] is None and case["verdict"] is None
    assert "after one retry" in case["error_ba"]


def test_a_parse_failure_then_a_valid_retry_counts_normally(judge, fake_judge):
    fake_judge.action = PerConversation(Reply("Reply 1 is better."), DemoBrain(quality=oracle))
    run = pairwise_run(judge=judge, n=3)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.report["wins_a"] == 3
    assert set(run.judgments.values_list("parse_attempts", flat=True)) == {2}


def test_verdicts_for_calibration_are_one_both_order_result_per_case(judge, fake_judge):
    fake_judge.action = DemoBrain(quality=oracle)
    run = pairwise_run(
        judge=judge, n=4, a=good_and_bad(4, a_better=lambda i: i < 3)[0], b=good_and_bad(4, a_better=lambda i: i < 3)[1],
    )
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert label_kind_for_run(run=run) == "pairwise"
    verdicts = sorted(verdicts_for_run(run=run), key=lambda v: v.case_id)
    assert [(v.case_id, v.criterion, v.judge, v.value) for v in verdicts] == [
        ("c000", "", judge.name, "A"), ("c001", "", judge.name, "A"), ("c002", "", judge.name, "A"),
        ("c003", "", judge.name, "B"),
    ]
    # A disagreement is a tie for calibration too; a case with one order only gives no verdict.
    Judgment.objects.filter(run=run, key="c000/ba").update(parsed={"reasoning": "x", "winner": "1"})
    Judgment.objects.filter(run=run, key="c001/ba").update(status=UnitStatus.FAILED, parsed=None)
    values = {v.case_id: v.value for v in verdicts_for_run(run=run)}
    assert values["c000"] == "tie" and "c001" not in values


def test_outputs_missing_for_a_case_are_refused_and_nothing_is_stored(judge):
    a, b = good_and_bad(4)
    del b["c002"]
    before = (Run.objects.count(), StoredTestSet.objects.count(), Output.objects.count())
    with pytest.raises(InputError, match=r"out_b.jsonl: no output for case\(s\) c002 of the test set \(version B\)"):
        pairwise_run(judge=judge, a=a, b=b, n=4)
    assert (Run.objects.count(), StoredTestSet.objects.count(), Output.objects.count()) == before


def test_a_taken_run_id_is_refused_and_nothing_more_is_stored(judge):
    pairwise_run(judge=judge, n=2, run_id="ab-1")
    before = (Run.objects.count(), StoredTestSet.objects.count(), Output.objects.count())
    with pytest.raises(InputError, match="already taken"):
        pairwise_run(judge=judge, n=3, run_id="ab-1")
    assert (Run.objects.count(), StoredTestSet.objects.count(), Output.objects.count()) == before


@pytest.mark.parametrize(
    "sample, seed, message", [(0, None, "positive"), (50, 1, "more than the test set"), (None, 3, "without --sample")],
)
def test_a_bad_sample_is_refused(judge, sample, seed, message):
    with pytest.raises(InputError, match=message):
        pairwise_run(judge=judge, n=4, sample=sample, seed=seed)
    assert Run.objects.count() == 0


def test_the_report_has_the_contract_keys(judge, fake_judge):
    run = pairwise_run(judge=judge, n=2)
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    report = json.loads(json.dumps(run.report))
    for key in (
        "run_id", "kind", "wins_a", "wins_b", "ties", "win_rate_a", "tie_rate", "disagreements", "inconclusive", "winner",
        "versions",
    ):
        assert key in report
    assert report["kind"] == "pairwise" and report["run_id"] == run.run_id
    assert set(report["versions"]) >= {"testset", "rubric", "prompt", "judge", "a", "b"}
    assert report["versions"]["prompt"] == run.prompt.version


@pytest.mark.parametrize("kind", ["pairwise", "jury"])
def test_the_prompt_sent_is_the_version_the_run_recorded_not_the_file_of_today(kind, make_judge, fake_judge, monkeypatch):
    """A run resumed after a deploy that changed the prompt file still sends the prompt its judgments and
    report name."""
    from judgeapp.judging import prompts
    from tests.pairwise.builders import jury_run

    if kind == "pairwise":
        run = pairwise_run(judge=make_judge(), n=2)
    else:
        run = jury_run(judges=[make_judge(f"juror-{f}", family=f) for f in ("meta", "mistral", "google")], n=2)
    recorded = run.prompt.text
    monkeypatch.setattr(prompts, "PROMPTS_DIR", prompts.PROMPTS_DIR.parent / "no-such-prompts")  # today's files gone
    runs.run_execute_inline(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error
    sent = [u.messages[0]["content"] for u in run.judgments.filter(purpose="judge")]
    head = recorded.split("{", 1)[0]
    assert sent and all(text.startswith(head) for text in sent)
    assert run.report["versions"]["prompt"] == run.prompt.version
