"""The strategies beyond the seed with stub judges (plain Python): an oracle gives the exact top k, the call
budget is never exceeded, a comparison that fails is handled, and the order support is counted right."""

import hashlib
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgeapp.ranker.core import EQUAL, A, B, ComparisonFailed, Outcome, insert
from judgeapp.ranker.core.evidence import BudgetExhausted, Evidence, Observation
from judgeapp.ranker.core.robust import robust_insert, robust_settle_cut, robust_verify
from judgeapp.ranker.core.support import CONTESTED, CONTRADICTED, SUPPORTED, UNSUPPORTED, Vote, adjacent_support, support_summary
from judgeapp.ranker.core.tournament import default_budget, tournament


class StubJudge:
    """Compares by known qualities; with `noise` a random verdict, with `bias` "A" whatever the content.
    Deterministic per ordered pair, as a temperature-0 judge behind a cache is. Counts and logs its calls."""

    def __init__(self, quality, *, noise=0.0, bias=0.0, seed=0, failing=()):
        self.quality, self.noise, self.bias, self.seed = quality, noise, bias, seed
        self.failing = set(failing)
        self.calls = []

    def __call__(self, first, second, *, stage=""):
        self.calls.append((first, second))
        if self.failing & {first, second}:
            raise ComparisonFailed(f"{first} vs {second}: HTTP 400", first=first, second=second)
        digest = hashlib.sha256(f"{self.seed}:{first}:{second}".encode()).hexdigest()
        rng = random.Random(int(digest[:16], 16))
        if rng.random() < self.bias:
            return A
        if rng.random() < self.noise:
            return rng.choice([A, B, EQUAL])
        a, b = self.quality[first], self.quality[second]
        return A if a > b else B if a < b else EQUAL


def distinct_qualities(n, rng):
    values = rng.sample(range(10 * n), n)
    return {f"doc{i:03d}": float(v) for i, v in enumerate(values)}


def true_top(quality, k):
    return sorted(quality, key=quality.get, reverse=True)[:k]


def robust_batch(arrival, evidence, k, reserve=5, every=10):
    ranklist = []
    for sequence, candidate in enumerate(arrival):
        ranklist = robust_insert(ranklist, candidate, evidence, max_size=k, reserve=reserve).ranklist
        if (sequence + 1) % every == 0 or sequence == len(arrival) - 1:
            ranklist = robust_verify(ranklist, evidence).ranklist
    return robust_settle_cut(ranklist, evidence, max_size=k).ranklist


# --- robust ---------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), k=st.integers(1, 8), reserve=st.integers(0, 6), seed=st.integers(0, 10**6))
def test_robust_with_an_oracle_gives_the_exact_top_k(n, k, reserve, seed):
    rng = random.Random(seed)
    quality = distinct_qualities(n, rng)
    arrival = list(quality)
    rng.shuffle(arrival)
    judge = StubJudge(quality)
    ranklist = robust_batch(arrival, Evidence(judge), k, reserve=reserve)
    assert ranklist[:k] == true_top(quality, k)
    assert len(judge.calls) == len(set(judge.calls))  # never the same ordered question twice


def test_robust_gate_turns_a_candidate_away_on_one_b_and_asks_the_other_order_before_letting_one_in():
    quality = {"a": 5, "b": 4, "c": 3, "weak": 1, "strong": 4.5}
    judge = StubJudge(quality)
    evidence = Evidence(judge)
    result = robust_insert(["a", "b", "c"], "weak", evidence, max_size=2, reserve=1)
    assert result.outcome == Outcome.DISCARDED and judge.calls == [("weak", "c")]
    result = robust_insert(["a", "b", "c"], "strong", evidence, max_size=2, reserve=1)
    assert result.ranklist == ["a", "strong", "b"] and judge.calls[1:3] == [("strong", "c"), ("c", "strong")]


def test_robust_gate_settles_a_disagreement_with_the_item_above_the_bottom():
    quality = {"a": 5, "b": 4, "c": 3, "x": 4.5}
    judge = StubJudge(quality)
    # The judge contradicts itself on x against the bottom: x wins shown first, and wins shown second too.
    known = [Observation("x", "c", A), Observation("c", "x", A)]
    result = robust_insert(["a", "b", "c"], "x", Evidence(judge, known=known), max_size=2, reserve=1)
    assert result.outcome == Outcome.INSERTED and ("x", "b") in judge.calls and ("b", "x") in judge.calls
    assert result.ranklist.index("x") == 1


def test_robust_verify_repairs_a_pair_both_orders_call_the_wrong_way_round():
    quality = {"a": 5, "b": 4, "c": 3, "d": 2}
    result = robust_verify(["a", "c", "b", "d"], Evidence(StubJudge(quality)))
    assert result.ranklist == ["a", "b", "c", "d"] and [r.moved for r in result.repairs] == ["b"]


def test_robust_verify_sinks_an_intruder_by_transitivity_when_its_pair_is_disputed():
    quality = {"a": 5, "b": 4, "c": 3, "bad": 0}
    known = [Observation("bad", "b", A), Observation("b", "bad", B)]  # bad "beat" b in both orders: wrong
    judge = StubJudge(quality)
    # ...and one look says bad beats a: disputed with the other order, settled by c (below) beating bad.
    known = [Observation("a", "bad", B), Observation("bad", "a", B)]
    result = robust_verify(["bad", "a", "b", "c"], Evidence(judge, known=known))
    assert result.ranklist == ["a", "b", "c", "bad"]
    assert any("transitivity" in r.evidence or r.evidence == "both orders" for r in result.repairs)


def test_robust_settles_a_disputed_cut_by_a_round_robin_and_asks_nothing_when_it_is_clear():
    quality = {"a": 6, "b": 5, "c": 4, "d": 3, "e": 2, "f": 1}
    judge = StubJudge(quality)
    known = [Observation("e", "b", A)]  # one wrong look: e "beat" b when shown first
    result = robust_settle_cut(["a", "b", "e", "c", "d", "f"], Evidence(judge, known=known), max_size=3)
    assert result.ranklist == ["a", "b", "c", "d", "e", "f"] and result.window
    clear = Evidence(StubJudge(quality))
    assert robust_settle_cut(["a", "b", "c", "d", "e", "f"], clear, max_size=3).window == []
    assert clear.calls == 10  # the five adjacent pairs in both orders, no round robin


def test_robust_insert_raises_a_failed_comparison_and_verify_skips_the_pair():
    quality = {"a": 3, "b": 2, "bad": 1}
    judge = StubJudge(quality, failing={"bad"})
    with pytest.raises(ComparisonFailed):
        robust_insert(["a", "b"], "bad", Evidence(judge), max_size=2, reserve=0)
    result = robust_verify(["a", "bad", "b"], Evidence(judge))
    assert result.skipped and result.ranklist == ["a", "bad", "b"]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), noise=st.sampled_from([0.1, 0.3]))
def test_robust_with_a_noisy_judge_still_returns_every_candidate_at_most_once(seed, noise):
    rng = random.Random(seed)
    quality = distinct_qualities(30, rng)
    arrival = list(quality)
    rng.shuffle(arrival)
    ranklist = robust_batch(arrival, Evidence(StubJudge(quality, noise=noise, seed=seed)), 5)
    assert len(ranklist) == len(set(ranklist)) == 10 and set(ranklist) <= set(quality)


# --- tournament -----------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 30), k=st.integers(1, 6), seed=st.integers(0, 10**6))
def test_tournament_with_an_oracle_and_room_in_the_budget_gives_the_exact_top_k(n, k, seed):
    rng = random.Random(seed)
    quality = distinct_qualities(n, rng)
    items = list(quality)
    rng.shuffle(items)
    result = tournament(items, Evidence(StubJudge(quality), budget=n * n), k=k, seed=seed)
    assert result.ranking == true_top(quality, k)
    assert result.confident and result.stopped == "confident"


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 40),
    k=st.integers(1, 8),
    budget=st.integers(0, 150),
    noise=st.sampled_from([0.0, 0.2, 0.5]),
    bias=st.sampled_from([0.0, 0.3]),
    seed=st.integers(0, 10**6),
)
def test_tournament_never_exceeds_its_call_budget(n, k, budget, noise, bias, seed):
    rng = random.Random(seed)
    quality = distinct_qualities(n, rng)
    judge = StubJudge(quality, noise=noise, bias=bias, seed=seed)
    result = tournament(list(quality), Evidence(judge, budget=budget), k=k, seed=seed)
    assert len(judge.calls) == result.calls <= budget
    assert len(result.ranking) == min(k, n) and len(set(result.order)) == n
    if result.stopped == "budget":
        assert result.calls == budget and not result.confident


def test_tournament_replays_what_it_knows_for_free():
    rng = random.Random(3)
    quality = distinct_qualities(20, rng)
    first_judge = StubJudge(quality)
    first = Evidence(first_judge, budget=400)
    result = tournament(list(quality), first, k=5)
    again_judge = StubJudge(quality)
    again = tournament(list(quality), Evidence(again_judge, known=first.observations(), budget=400), k=5)
    assert again.ranking == result.ranking and again_judge.calls == []


def test_tournament_leaves_an_artifact_whose_comparisons_keep_failing_unplaced():
    rng = random.Random(5)
    quality = distinct_qualities(15, rng)
    broken = true_top(quality, 1)[0]  # even the best: a candidate no comparison can be made with
    result = tournament(list(quality), Evidence(StubJudge(quality, failing={broken}), budget=400), k=4)
    assert broken in result.unplaced and "HTTP 400" in result.unplaced[broken]
    assert result.ranking == true_top({d: q for d, q in quality.items() if d != broken}, 4)


def test_tournament_default_budget():
    assert default_budget(100, 10) == 1000 and default_budget(1, 10) == 36


def test_evidence_asks_each_ordered_pair_once_and_raises_when_the_budget_is_spent():
    judge = StubJudge({"x": 1, "y": 2})
    evidence = Evidence(judge, budget=2)
    assert evidence.get("x", "y", stage="t") == B and evidence.get("x", "y", stage="t") == B
    assert evidence.get("y", "x", stage="t") == A and len(judge.calls) == 2
    assert evidence.tally("x", "y") == (0, 2, 0)
    with pytest.raises(BudgetExhausted):
        Evidence(judge, budget=0).get("x", "y", stage="t")


# --- the seed keeps its own behaviour -------------------------------------------------------------------


def test_the_seed_insert_is_untouched_by_the_strategies():
    quality = {"a": 3, "b": 2, "c": 1, "x": 0}
    calls = []

    def compare(candidate, incumbent):
        calls.append((candidate, incumbent))
        return A if quality[candidate] > quality[incumbent] else B

    assert insert(["a", "b", "c"], "x", compare, max_size=3).outcome == Outcome.DISCARDED
    assert calls == [("x", "a"), ("x", "c")]  # top, then bottom: the seed's order


# --- order support --------------------------------------------------------------------------------------


def test_adjacent_support_counts_every_vote_in_both_orders():
    votes = [
        Vote("a", "b", A), Vote("b", "a", B),  # a over b, both orders: supported 2-0
        Vote("b", "c", B), Vote("c", "b", A),  # c beat b both times: contradicted 0-2
        Vote("c", "d", A), Vote("d", "c", A),  # one each way: contested
        Vote("d", "e", EQUAL),  # only Equal: unsupported
    ]
    pairs = adjacent_support(["a", "b", "c", "d", "e", "f"], votes)
    assert [(p.votes_for, p.votes_against, p.votes_equal, p.status) for p in pairs] == [
        (2, 0, 0, SUPPORTED), (0, 2, 0, CONTRADICTED), (1, 1, 0, CONTESTED), (0, 0, 1, UNSUPPORTED), (0, 0, 0, UNSUPPORTED)
    ]
    summary = support_summary(pairs)
    assert summary["supported"] == 1 and summary["contradicted"] == 1 and summary["unsupported"] == 2
    assert (
        summary["line"].startswith("4 of 5 adjacent pairs not supported")
        and "#2 b over #3 c: contradicted (0 for, 2 against)" in summary["line"]
    )
    assert (
        support_summary(adjacent_support(["a", "b"], votes))["line"]
        == "every adjacent pair of the 2 is supported by its own comparisons"
    )
