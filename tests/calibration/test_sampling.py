"""Drawing and assigning samples: pure functions, no database."""

from collections import Counter

import pytest

from calibration.core.sampling import assign, queue_order, reply_order_swapped, stratified_sample


def skewed_items():
    # 36 items the judge scored 5 and only 4 it scored 1: a random draw of 8 would often miss the 1s.
    return [(f"c{i:02d}", "5") for i in range(36)] + [(f"low{i}", "1") for i in range(4)]


def test_stratified_sample_sees_rare_low_scores_as_often_as_common_high_ones():
    chosen = stratified_sample(skewed_items(), size=8, seed=3)
    strata = Counter("1" if key.startswith("low") else "5" for key in chosen)
    assert strata == {"1": 4, "5": 4}


def test_stratified_sample_fills_up_from_the_larger_strata_when_a_small_one_runs_out():
    chosen = stratified_sample(skewed_items(), size=20, seed=3)
    assert len(chosen) == len(set(chosen)) == 20
    assert sum(key.startswith("low") for key in chosen) == 4


def test_same_seed_draws_the_same_sample_and_another_seed_another():
    items = [(f"c{i:03d}", str(1 + i % 5)) for i in range(200)]
    assert stratified_sample(items, size=30, seed=11) == stratified_sample(items, size=30, seed=11)
    assert stratified_sample(items, size=30, seed=11) != stratified_sample(items, size=30, seed=12)


def test_a_sample_larger_than_the_run_takes_every_item_once():
    items = [(f"c{i}", str(i % 2)) for i in range(7)]
    assert sorted(stratified_sample(items, size=50, seed=0)) == sorted(k for k, _ in items)


def test_overlap_gives_each_item_to_k_different_annotators_evenly():
    keys = [f"c{i}" for i in range(30)]
    given = assign(keys, ["ann", "bob", "cy"], overlap=2, seed=5)
    assert all(len(set(people)) == 2 for people in given.values())
    load = Counter(p for people in given.values() for p in people)
    assert sorted(load.values()) == [20, 20, 20]


def test_overlap_larger_than_the_annotators_is_refused():
    with pytest.raises(ValueError):
        assign(["c1"], ["ann"], overlap=2, seed=0)


def test_each_annotator_has_an_order_and_a_reply_order_of_their_own():
    keys = [f"c{i}" for i in range(40)]
    assert queue_order(keys, seed=1, annotator=1) != queue_order(keys, seed=1, annotator=2)
    first = [reply_order_swapped(seed=1, annotator=1, key=k) for k in keys]
    second = [reply_order_swapped(seed=1, annotator=2, key=k) for k in keys]
    assert first != second and 10 < sum(first) < 30
    assert first == [reply_order_swapped(seed=1, annotator=1, key=k) for k in keys]
