"""The seed's incremental insert with stub comparators: placement, the seed's edge cases, the call bound."""

import math
import random

import pytest

from judgeapp.ranker.core import EQUAL, A, B, Outcome, both_orders, combine_orders, insert, max_comparisons, seed_worst_case


def oracle(quality: dict[str, float], calls: list | None = None):
    """A perfect comparator over known qualities (the candidate is A)."""

    def compare(candidate, incumbent):
        if calls is not None:
            calls.append((candidate, incumbent))
        a, b = quality[candidate], quality[incumbent]
        return A if a > b else B if a < b else EQUAL

    return compare


def never_called(candidate, incumbent):
    raise AssertionError("the comparator must not be called")


def test_insert_into_empty_list_takes_index_0_without_a_call():
    result = insert([], "x", never_called)
    assert result.ranklist == ["x"] and result.position == 0 and result.comparisons == 0


def test_insert_better_than_top_goes_first_after_one_call():
    calls = []
    result = insert(["a", "b", "c"], "x", oracle({"x": 9, "a": 3, "b": 2, "c": 1}, calls))
    assert result.ranklist == ["x", "a", "b", "c"] and calls == [("x", "a")]


def test_insert_equal_with_top_goes_just_below_it():
    calls = []
    result = insert(["a", "b", "c"], "x", oracle({"x": 3, "a": 3, "b": 2, "c": 1}, calls))
    assert result.ranklist == ["a", "x", "b", "c"] and result.position == 1
    assert calls == [("x", "a")]  # Equal with the top ends the insert: no bottom compare


def test_insert_below_worst_at_cap_discards_candidate():
    quality = {"a": 3, "b": 2, "c": 1, "x": 0}
    result = insert(["a", "b", "c"], "x", oracle(quality), max_size=3)
    assert result.outcome == Outcome.DISCARDED and result.ranklist == ["a", "b", "c"]
    assert [s.stage for s in result.steps] == ["top", "bottom"]


def test_insert_below_worst_under_cap_is_appended():
    result = insert(["a", "b"], "x", oracle({"a": 3, "b": 2, "x": 0}), max_size=3)
    assert result.outcome == Outcome.INSERTED and result.ranklist == ["a", "b", "x"]


def test_insert_duplicate_id_is_skipped_at_no_cost():
    result = insert(["a", "x"], "x", never_called)
    assert result.outcome == Outcome.SKIPPED and result.ranklist == ["a", "x"] and result.comparisons == 0


def test_insert_below_the_only_item_goes_after_it_with_one_call():
    calls = []
    result = insert(["a"], "x", oracle({"a": 2, "x": 1}, calls))
    assert result.ranklist == ["a", "x"] and len(calls) == 1


def test_insert_below_the_only_item_at_cap_one_is_discarded():
    result = insert(["a"], "x", oracle({"a": 2, "x": 1}), max_size=1)
    assert result.outcome == Outcome.DISCARDED and result.ranklist == ["a"]


def test_insert_in_the_middle_prunes_the_worst_at_cap():
    quality = {"a": 5, "b": 4, "c": 3, "x": 3.5}
    result = insert(["a", "b", "c"], "x", oracle(quality), max_size=3)
    assert result.ranklist == ["a", "b", "x"] and result.dropped == ["c"]


def test_bisection_searches_between_top_and_bottom_with_low_1_high_len_minus_2():
    ids = [f"i{n}" for n in range(10)]
    quality = {i: 10 - n for n, i in enumerate(ids)} | {"x": 10 - 6.5}  # belongs between i6 and i7
    result = insert(ids, "x", oracle(quality))
    # top 0, bottom 9, then mid = (1 + 8) // 2 = 4 (B: low 5), mid 6 (B: low 7), mid 7 (A: high 6): stop.
    assert [(s.stage, s.index, s.winner) for s in result.steps] == [
        ("top", 0, B), ("bottom", 9, A), ("middle", 4, B), ("middle", 6, B), ("middle", 7, A)
    ]
    assert result.ranklist.index("x") == 7


def test_equal_in_the_middle_places_the_candidate_above_its_equal():
    ids = ["a", "b", "c", "d", "e"]
    quality = {"a": 5, "b": 4, "c": 3, "d": 2, "e": 1, "x": 3}
    assert insert(ids, "x", oracle(quality)).ranklist == ["a", "b", "x", "c", "d", "e"]


@pytest.mark.parametrize("n, cap", [(1, 10), (5, 10), (10, 10), (25, 10), (60, 10), (40, 1), (40, 2), (40, 3), (30, 30)])
def test_random_arrival_orders_always_give_the_true_top_k_in_order(n, cap):
    rng = random.Random(f"{n}-{cap}")
    for _trial in range(60):
        quality = {f"doc{i:03d}": rng.random() for i in range(n)}
        arrival = list(quality)
        rng.shuffle(arrival)
        ranklist: list[str] = []
        for candidate in arrival:
            calls: list = []
            before = len(ranklist)
            ranklist = insert(ranklist, candidate, oracle(quality, calls), max_size=cap).ranklist
            bound = 0 if before == 0 else 2 + math.ceil(math.log2(before))
            assert len(calls) <= bound, f"{len(calls)} calls for a list of {before}"
            assert len(calls) <= max_comparisons(before) <= max(bound, 0)
        truth = sorted(quality, key=quality.get, reverse=True)[:cap]
        assert ranklist == truth


def test_the_bound_is_reached_for_some_candidate():
    """The call bound is tight: some position in a list of 9 needs all 2 + ceil(log2(8)) = 5 calls."""
    ids = [f"i{n}" for n in range(9)]
    counts = []
    for slot in range(9):
        quality = {i: 10 - n for n, i in enumerate(ids)} | {"x": 10 - slot - 0.5}
        counts.append(insert(ids, "x", oracle(quality)).comparisons)
    assert max(counts) == max_comparisons(9) == 5


def test_both_orders_counts_a_disagreement_as_equal():
    # A judge that always picks whatever is shown first: position bias, no signal.
    biased = both_orders(lambda first, second: A)
    assert biased("x", "y") == EQUAL
    # A judge that sees content agrees with itself across orders.
    quality = {"x": 2, "y": 1}
    fair = both_orders(lambda first, second: A if quality[first] > quality[second] else B)
    assert fair("x", "y") == A and fair("y", "x") == B
    assert combine_orders(A, EQUAL) == EQUAL


def test_seed_figures():
    assert seed_worst_case(0) == 0 and seed_worst_case(8) == 5


def test_placement_names_the_place_and_the_neighbours_at_either_end():
    from judgeapp.ranker.core import format_placement

    ranking = [f"r{n}.md" for n in range(1, 13)]
    assert format_placement("r1.md", ranking) == "Placed: r1.md 1st of 12 (above r2.md)"
    assert format_placement("r12.md", ranking) == "Placed: r12.md 12th of 12 (below r11.md, the last)"
    assert format_placement("r2.md", ranking) == "Placed: r2.md 2nd of 12 (between r1.md and r3.md)"
    assert format_placement("solo.md", ["solo.md"]) == "Placed: solo.md 1st of 1 (the only one)"
    assert format_placement("gone.md", ranking) is None  # discarded: the command says "not kept" instead
