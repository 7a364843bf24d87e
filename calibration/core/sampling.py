"""Drawing a human-scoring sample and handing it to annotators. Deterministic for a given seed."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Hashable, Sequence


def stratified_sample(items: Sequence[tuple[Hashable, str]], *, size: int, seed: int) -> list[Hashable]:
    """Draw `size` keys from (key, stratum) pairs so that every stratum is seen.

    Strata are the judge's verdicts (1..5, pass/fail, A/B/tie). Allocation is equal, not proportional:
    the draw takes one item from each stratum in turn (a stratum that runs out drops out), so a rare low
    score is seen as often as the common high one — agreement on a sample of nothing but 5s says little.
    Within a stratum the order is a seeded shuffle of the items in their given order.
    """
    if size < 1:
        raise ValueError("the sample size must be at least 1")
    rng = random.Random(seed)
    strata: dict[str, list[Hashable]] = defaultdict(list)
    for key, stratum in items:
        strata[stratum].append(key)
    names = sorted(strata)
    for name in names:
        rng.shuffle(strata[name])
    # The stratum that starts each round is drawn too, so a size that is not a multiple of the strata
    # does not always favour the same verdicts.
    rng.shuffle(names)
    chosen: list[Hashable] = []
    depth = 0
    while len(chosen) < size:
        took = False
        for name in names:
            if depth < len(strata[name]):
                chosen.append(strata[name][depth])
                took = True
                if len(chosen) == size:
                    break
        if not took:
            break
        depth += 1
    return chosen


def assign(
    keys: Sequence[Hashable], annotators: Sequence[Hashable], *, overlap: int, seed: int
) -> dict[Hashable, list[Hashable]]:
    """Give each key to `overlap` different annotators, spreading the work evenly.

    Item i goes to annotators i*k .. i*k+k-1 (mod m) of a seeded order of the annotators: every annotator
    gets the same number of items (±1) and consecutive items overlap with different colleagues.
    """
    if not annotators:
        raise ValueError("no annotators to assign the sample to")
    if not 1 <= overlap <= len(annotators):
        raise ValueError(f"overlap must be between 1 and the number of annotators ({len(annotators)})")
    order = list(annotators)
    random.Random(f"assign:{seed}").shuffle(order)
    m = len(order)
    return {key: [order[(i * overlap + j) % m] for j in range(overlap)] for i, key in enumerate(keys)}


def queue_order(keys: Sequence[Hashable], *, seed: int, annotator: Hashable) -> list[Hashable]:
    """Each annotator sees their items in an order of their own (seeded), so no two share a sequence."""
    order = list(keys)
    random.Random(f"queue:{seed}:{annotator}").shuffle(order)
    return order


def reply_order_swapped(*, seed: int, annotator: Hashable, key: Hashable) -> bool:
    """Whether this annotator sees reply B first on this pairwise item: a coin per annotator and item."""
    return random.Random(f"swap:{seed}:{annotator}:{key}").random() < 0.5
