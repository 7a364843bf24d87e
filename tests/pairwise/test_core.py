"""The pairwise core with stub judges: both orders, mapping back, ties, the stop rule, the statistics."""

import re

import pytest

from judgeapp.pairwise.core import PairwiseCase, both_orders, judge_case, map_back, sample_case_ids, summarize

RUBRIC = "Criterion: helpfulness\nDoes the reply solve the problem?"


def _replies(prompt: str) -> tuple[str, str]:
    first = re.search(r"<reply_1>(.*?)</reply_1>", prompt, re.S).group(1)
    second = re.search(r"<reply_2>(.*?)</reply_2>", prompt, re.S).group(1)
    return first, second


def always_reply_1(prompt: str) -> dict:
    return {"reasoning": "The first reply is better.", "winner": "1"}


def prefers(better: str):
    """A stub judge that picks whichever reply contains `better`, wherever it is shown."""

    def judge(prompt: str) -> dict:
        first, second = _replies(prompt)
        if better in first:
            return {"reasoning": "Reply 1 is better.", "winner": "1"}
        if better in second:
            return {"reasoning": "Reply 2 is better.", "winner": "2"}
        return {"reasoning": "Equal.", "winner": "tie"}

    return judge


def judge_all(judge, n=8, reply_a=lambda i: f"reply A {i}", reply_b=lambda i: f"reply B {i}"):
    return [
        judge_case(judge, case_id=f"c{i}", rubric=RUBRIC, input=f"question {i}", reply_a=reply_a(i), reply_b=reply_b(i))
        for i in range(n)
    ]


def test_stub_judge_always_picking_reply_1_counts_every_case_as_a_tie_and_is_inconclusive():
    cases = judge_all(always_reply_1, n=8)
    report = summarize(cases)
    assert [c.verdict for c in cases] == ["tie"] * 8
    assert report["ties"] == 8 and report["wins_a"] == 0 and report["wins_b"] == 0
    assert report["tie_rate"] == 1.0
    assert report["disagreements"] == [f"c{i}" for i in range(8)]
    assert report["inconclusive"] is True and report["winner"] is None
    assert report["win_rate_a"] is None


def test_the_swapped_verdict_is_mapped_back_to_the_version_it_names():
    assert map_back("ab", "1") == "A" and map_back("ab", "2") == "B"
    assert map_back("ba", "1") == "B" and map_back("ba", "2") == "A"
    assert map_back("ba", "tie") == "tie"


def test_agreement_is_a_win_and_disagreement_a_tie():
    assert both_orders("A", "A") == ("A", False)
    assert both_orders("B", "B") == ("B", False)
    assert both_orders("tie", "tie") == ("tie", False)
    assert both_orders("A", "B") == ("tie", True)
    assert both_orders("A", "tie") == ("tie", True)


def test_a_single_order_verdict_is_never_counted():
    assert both_orders("A", None) == (None, False)
    report = summarize([PairwiseCase("c1", ab="A", ba=None), PairwiseCase("c2", ab="A", ba="A")])
    assert report["wins_a"] == 1 and report["judged"] == 1
    assert report["unjudged"] == ["c1"]


def test_a_judge_following_content_names_the_better_version_in_both_orders():
    cases = judge_all(prefers("GOOD"), n=6, reply_a=lambda i: "GOOD answer", reply_b=lambda i: "weak answer")
    report = summarize(cases)
    assert all(c.ab == "A" and c.ba == "A" for c in cases)
    assert report["wins_a"] == 6 and report["winner"] == "A" and report["win_rate_a"] == 1.0
    assert report["inconclusive"] is False and report["disagreements"] == []


def test_the_judge_sees_both_replies_once_each_and_never_a_version_label():
    prompts = []

    def recording(prompt):
        prompts.append(prompt)
        return always_reply_1(prompt)

    judge_case(recording, case_id="c1", rubric=RUBRIC, input="q", reply_a="alpha reply", reply_b="beta reply")
    assert _replies(prompts[0]) == ("alpha reply", "beta reply")
    assert _replies(prompts[1]) == ("beta reply", "alpha reply")
    assert all("version" not in p.lower() and "Reply A" not in p for p in prompts)


def _cases(wins_a=0, wins_b=0, agreed_ties=0, disagreements=0):
    cases = []
    for verdict, count in (("A", wins_a), ("B", wins_b), ("tie", agreed_ties)):
        cases += [PairwiseCase(f"{verdict}{i}", ab=verdict, ba=verdict) for i in range(count)]
    cases += [PairwiseCase(f"d{i}", ab="A", ba="B") for i in range(disagreements)]
    return cases


def test_more_than_a_quarter_in_disagreement_is_inconclusive_and_a_quarter_is_not():
    at_limit = summarize(_cases(wins_a=6, wins_b=0, disagreements=2))  # 2 of 8 = 25%
    assert at_limit["inconclusive"] is False and at_limit["winner"] == "A"
    over = summarize(_cases(wins_a=6, wins_b=0, disagreements=3))  # 3 of 9 > 25%
    assert over["inconclusive"] is True and over["winner"] is None
    assert "disagreed on 3 of 9" in over["inconclusive_reasons"][0]


def test_win_rate_excludes_ties_and_tie_rate_counts_all_ties():
    report = summarize(_cases(wins_a=6, wins_b=2, agreed_ties=1, disagreements=1))
    assert report["win_rate_a"] == 0.75
    assert report["ties"] == 2 and report["tie_rate"] == 0.2
    assert report["agreed_ties"] == 1 and report["losses_a"] == 2


def test_sign_test_and_interval_on_the_win_rate():
    report = summarize(_cases(wins_a=15, wins_b=5))
    sign = report["sign_test"]
    assert sign["n"] == 20
    assert sign["p_value"] == pytest.approx(0.04139, abs=1e-4)  # two-sided binomial, 15 of 20
    assert sign["significant"] is True
    assert sign["ci_low"] < 0.75 < sign["ci_high"]
    assert sign["ci_low"] == pytest.approx(0.5090, abs=1e-3)  # Clopper-Pearson
    even = summarize(_cases(wins_a=5, wins_b=5))["sign_test"]
    assert even["p_value"] == pytest.approx(1.0) and even["significant"] is False


def test_win_rate_split_by_the_longer_reply_shows_a_length_bias():
    # A judge that always prefers the longer reply: A wins when A is longer, loses when B is.
    cases = [PairwiseCase(f"a{i}", ab="A", ba="A", len_a=300, len_b=100) for i in range(4)]
    cases += [PairwiseCase(f"b{i}", ab="B", ba="B", len_a=100, len_b=300) for i in range(4)]
    split = summarize(cases)["length_split"]
    assert split["A_longer"]["win_rate_a"] == 1.0 and split["B_longer"]["win_rate_a"] == 0.0
    assert split["longer_won"] == 8 and split["longer_win_rate"] == 1.0


def test_too_many_cases_without_a_both_order_verdict_make_the_comparison_invalid():
    cases = _cases(wins_a=18) + [PairwiseCase("x1", ab=None, ba="A"), PairwiseCase("x2", ab=None, ba=None)]
    report = summarize(cases)
    assert report["invalid"] is True and report["inconclusive"] is True and report["winner"] is None
    assert report["unjudged_count"] == 2


def test_sampling_is_fixed_by_the_seed_and_keeps_test_set_order():
    ids = [f"c{i:03d}" for i in range(100)]
    first = sample_case_ids(ids, sample=10, seed=7)
    assert first == sample_case_ids(ids, sample=10, seed=7)
    assert first != sample_case_ids(ids, sample=10, seed=8)
    assert first == sorted(first) and len(first) == 10
    assert sample_case_ids(ids, sample=None, seed=None) == ids
