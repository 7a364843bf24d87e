"""The jury core with stub judges: pooling, dissent, the panel rules, per-judge agreement."""

import pytest

from judgeapp.judging.errors import InputError
from judgeapp.jury.core import Panelist, deliberate, panel_check, per_judge_agreement, pool_pass_fail, pool_scores, summarize


def stub(verdict):
    return lambda prompt: {"reasoning": f"It should {verdict}.", "verdict": verdict}


def silent(prompt):
    return None


def test_three_stub_judges_pass_pass_fail_pool_to_exactly_pass_with_dissent_for_the_third():
    case = deliberate(
        {"llama": stub("pass"), "mistral": stub("pass"), "gemma": stub("fail")},
        case_id="c1", rubric="Be helpful.", input="Where is my order?", output="It ships today.",
    )
    assert case.pooled == "pass"
    assert case.dissent == ["gemma"]
    assert case.votes == {"llama": "pass", "mistral": "pass", "gemma": "fail"}
    assert case.reasoning["gemma"] == "It should fail."


def test_every_juror_gets_the_identical_prompt():
    seen = []

    def recording(verdict):
        def juror(prompt):
            seen.append(prompt)
            return {"reasoning": "ok", "verdict": verdict}

        return juror

    deliberate({"a": recording("pass"), "b": recording("pass"), "c": recording("fail")},
               case_id="c1", rubric="R", input="I", output="O")
    assert len(seen) == 3 and len(set(seen)) == 1
    assert "You are one of several independent graders" in seen[0]


def test_a_juror_that_does_not_answer_is_left_out_and_the_rest_pool():
    case = deliberate({"a": stub("fail"), "b": stub("fail"), "c": stub("pass"), "d": silent},
                      case_id="c1", rubric="R", input="I", output="O")
    assert case.pooled == "fail" and case.left_out == ["d"] and case.dissent == ["c"]
    assert case.votes["d"] is None


def test_fewer_than_three_answers_leave_the_case_unjudged():
    case = deliberate({"a": stub("pass"), "b": stub("pass"), "c": silent},
                      case_id="c1", rubric="R", input="I", output="O")
    assert case.pooled == "unjudged" and case.dissent == []
    assert "only 2 of 3" in case.reason


def test_a_tied_vote_leaves_the_case_unjudged():
    case = pool_pass_fail("c1", {"a": "pass", "b": "pass", "c": "fail", "d": "fail", "e": None})
    assert case.pooled == "unjudged" and "tied 2-2" in case.reason


def test_numeric_scores_pool_to_their_mean():
    case = pool_scores("c1", {"a": 4, "b": 5, "c": 3})
    assert case.mean == 4.0 and case.dissent == []
    assert pool_scores("c1", {"a": 4, "b": None, "c": 3}).pooled == "unjudged"
    assert pool_scores("c1", {"a": 5, "b": 5, "c": 1}).dissent == ["c"]


@pytest.mark.parametrize(
    "panel, system_family, message",
    [
        ([("a", "meta"), ("b", "mistral")], None, "at least 3"),
        ([("a", "meta"), ("b", "meta"), ("c", "google")], None, "both of the meta family"),
        ([("a", "meta"), ("b", "mistral"), ("c", "openai")], "openai", "family of the system under test"),
        ([("a", "meta"), ("b", "mistral"), ("c", "google"), ("d", "qwen")], None, "use an odd number"),
        ([("a", "meta"), ("a", "meta"), ("c", "google")], None, "named twice"),
    ],
)
def test_a_panel_that_breaks_the_rules_is_refused(panel, system_family, message):
    with pytest.raises(InputError, match=message):
        panel_check([Panelist(n, f) for n, f in panel], system_family=system_family)


def test_a_valid_panel_warns_when_the_system_family_is_unknown():
    panel = [Panelist("a", "meta"), Panelist("b", "mistral"), Panelist("c", "google")]
    assert panel_check(panel, system_family="openai") == []
    assert "unknown" in panel_check(panel, system_family=None)[0]


def test_per_judge_agreement_and_a_juror_far_below_the_others_is_flagged():
    cases = [pool_pass_fail(f"c{i}", {"a": "pass", "b": "pass", "c": "fail"}) for i in range(6)]
    cases += [pool_pass_fail(f"d{i}", {"a": "fail", "b": "fail", "c": "fail"}) for i in range(4)]
    cases.append(pool_pass_fail("u", {"a": "pass", "b": None, "c": None}))
    agreement = per_judge_agreement(cases, ["a", "b", "c"])
    assert agreement == {"a": 1.0, "b": 1.0, "c": 0.4}
    report = summarize(cases, ["a", "b", "c"])
    assert [r["judge"] for r in report["review"]] == ["c"]
    assert report["pass_rate"] == 0.6 and report["unjudged"] == 1 and report["unjudged_cases"] == ["u"]
    assert report["dissent_count"] == {"a": 0, "b": 0, "c": 6}
