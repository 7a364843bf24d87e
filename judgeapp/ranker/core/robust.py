"""`--strategy robust`: the seed's insertion made to survive a noisy or position-biased judge.

Binary insertion trusts every verdict: one wrong "A" against the top puts a weak candidate first, one
wrong "B" against the bottom loses a good one for good. Robust keeps the shape of the seed's insert (a
gate at the bottom of a full list, then bisection) and changes four things, each measured by
bench/ranker.py:

1. **A reserve below the cut.** The list it keeps is `max_size + reserve` long; the ranklist file holds
   the first `max_size`. A good candidate placed a little too low, or pushed down by an intruder, is still
   in the list, and the verification pass can bring it back above the cut.
2. **The gate asks both orders before letting a candidate in.** Against the bottom of a full list the
   candidate is shown first; "B" (worse) is final (a judge biased towards the first position never says
   it wrongly), and anything else is asked again with the candidate shown second. A disagreement is
   settled by further evidence: the candidate against the items just above the bottom, both orders, where
   beating one of them means beating the bottom (transitivity).
3. **Bisection alternates the orders**, so a judge's pull towards the first (or second) position pushes the
   candidate up on one step and down on the next instead of the same way every time.
4. **A verification pass over the kept list** (reserve included), after every 10th candidate and at the
   end: every adjacent pair is judged in both orders; a pair both orders call the wrong way round is
   repaired by re-inserting the lower item above it; a pair the two orders dispute is settled by
   transitivity (the item below it, or above it, judged against it in both orders). A repair puts the
   pairs it changed back to check.
5. **Settling the cut**, at the end of a batch: when a pair around the cut (5 above it, the reserve under
   it) is still in doubt, those items meet each other in both orders and take their places by wins minus
   losses.

With a perfect judge the gate answers in one call ("B") for every candidate that does not belong, so robust
spends fewer calls than the seed on those and a few more on the candidates that do get in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from judgeapp.ranker.core import EQUAL, A, B, ComparisonFailed, InsertResult, Outcome, Step, swap
from judgeapp.ranker.core.evidence import Evidence

DEFAULT_RESERVE = 5
TIEBREAKS = 2  # items above the bottom consulted when the gate's two orders disagree


ABOVE, BELOW, LEVEL, DISPUTED = "above", "below", "level", "disputed"


def _relation(seen: list[str]) -> str:
    """What the verdicts on x against y (from x's side) say: above, below, level or disputed."""
    wins, losses = seen.count(A), seen.count(B)
    if wins and losses:
        return DISPUTED
    if wins:
        return ABOVE
    if losses:
        return BELOW
    return LEVEL if seen else DISPUTED


def both_orders_relation(evidence: Evidence, x: str, y: str, *, stage: str) -> str:
    """x against y in both orders (x shown first, then second): above, below, level or disputed."""
    evidence.get(x, y, stage=stage)
    evidence.get(y, x, stage=stage)
    return _relation(evidence.seen_from(x, y))


def _gate(evidence: Evidence, current: list[str], candidate: str, steps: list[Step]) -> bool:
    """May the candidate into a full list? It must beat the bottom (see the module's docstring)."""
    bottom_index = len(current) - 1
    bottom = current[bottom_index]
    first = evidence.get(candidate, bottom, stage="bottom")
    if first == B:
        steps.append(Step("bottom", bottom, bottom_index, B))
        return False
    second = swap(evidence.get(bottom, candidate, stage="bottom"))
    if second != B:
        steps.append(Step("bottom", bottom, bottom_index, A if A in (first, second) else EQUAL))
        return True
    # The orders disagree: consult the items just above the bottom.
    for index in range(bottom_index - 1, max(bottom_index - 1 - TIEBREAKS, -1), -1):
        relation = both_orders_relation(evidence, candidate, current[index], stage="bottom")
        if relation in (ABOVE, LEVEL):
            steps.append(Step("bottom", current[index], index, A if relation == ABOVE else EQUAL))
            return True
        if relation == BELOW:
            steps.append(Step("bottom", current[index], index, B))
            return False
    # Still disputed: let it in; it lands near the bottom, in the reserve, where the next gates and the
    # verification pass see it again.
    steps.append(Step("bottom", bottom, bottom_index, EQUAL))
    return True


def _bisect(
    evidence: Evidence, current: list[str], candidate: str, low: int, high: int, insertion_point: int, steps: list[Step]
) -> int:
    """The seed's bisection over current[low..high], the candidate shown first and second in turn."""
    flip = False
    while low <= high:
        mid = (low + high) // 2
        incumbent = current[mid]
        if flip:
            winner = swap(evidence.get(incumbent, candidate, stage="middle"))
        else:
            winner = evidence.get(candidate, incumbent, stage="middle")
        flip = not flip
        steps.append(Step("middle", incumbent, mid, winner))
        if winner in (A, EQUAL):
            insertion_point = mid
            high = mid - 1
        else:
            low = mid + 1
    return insertion_point


def robust_insert(
    ranklist: list[str], candidate: str, evidence: Evidence, *, max_size: int, reserve: int = DEFAULT_RESERVE
) -> InsertResult:
    """Place `candidate` in `ranklist` (best first, `max_size + reserve` long at most)."""
    if max_size < 1:
        raise ValueError("max_size must be at least 1")
    cap = max_size + max(reserve, 0)
    current = list(ranklist)
    if candidate in current:
        return InsertResult(current, Outcome.SKIPPED)
    steps: list[Step] = []
    if not current:
        return _kept(current, candidate, 0, cap, steps)
    high = len(current) - 1
    insertion_point = len(current)
    if len(current) >= cap:
        if not _gate(evidence, current, candidate, steps):
            return InsertResult(current[:cap], Outcome.DISCARDED, dropped=current[cap:], steps=steps)
        high, insertion_point = len(current) - 2, len(current) - 1
    insertion_point = _bisect(evidence, current, candidate, 0, high, insertion_point, steps)
    return _kept(current, candidate, insertion_point, cap, steps)


def _kept(current: list[str], candidate: str, index: int, cap: int, steps: list[Step]) -> InsertResult:
    new = current[:index] + [candidate] + current[index:]
    kept, dropped = new[:cap], new[cap:]
    if candidate in dropped:
        return InsertResult(kept, Outcome.DISCARDED, dropped=[d for d in dropped if d != candidate], steps=steps)
    return InsertResult(kept, Outcome.INSERTED, position=index, dropped=dropped, steps=steps)


@dataclass
class Repair:
    """A pair of the kept list found the wrong way round, and where the misplaced item went."""

    above: str  # the pair as it stood: `above` over `below`
    below: str
    moved: str
    moved_to: int
    evidence: str  # "both orders" or "transitivity via <id>"


@dataclass
class VerifyResult:
    ranklist: list[str]
    repairs: list[Repair] = field(default_factory=list)
    checked: int = 0
    skipped: list[str] = field(default_factory=list)  # pairs left unchecked: their comparison failed


def robust_verify(
    ranklist: list[str], evidence: Evidence, *, start: int = 0, stop: int | None = None, max_repairs: int | None = None
) -> VerifyResult:
    """Check the adjacent pairs of ranklist[start:stop] (default: all) in both orders and repair the ones
    found the wrong way round, until every checked pair holds.

    A pair both orders call the wrong way round is repaired by re-inserting the lower item above it. A pair
    whose two orders disagree is settled by transitivity: if the item below the pair beats the upper one in
    both orders, the upper one sinks; if the lower one beats the item above the pair, it rises. A repair
    puts the pairs it changed back on the list to check.
    """
    current = list(ranklist)
    result = VerifyResult(current)
    stop = len(current) if stop is None else min(stop, len(current))
    budget_repairs = max_repairs if max_repairs is not None else 3 * len(current)
    todo = list(range(max(start, 0), stop - 1))
    while todo:
        index = todo.pop(0)
        if index + 1 >= len(current) or index + 1 >= stop:
            continue
        result.checked += 1
        upper, lower = current[index], current[index + 1]
        try:
            move = _violation(evidence, current, index)
            if move is None or len(result.repairs) >= budget_repairs:
                continue
            item, direction, why = move
            rest = [x for x in current if x != item]
            if direction == "rise":
                target = _place(evidence, rest, item, 0, index - 1, default=index)
            else:
                target = _place(evidence, rest, item, index + 1, len(rest) - 1, default=len(rest))
        except ComparisonFailed as exc:
            result.skipped.append(f"{upper} / {lower}: {exc.reason}")  # the pair stays as it is
            continue
        current[:] = rest[:target] + [item] + rest[target:]
        result.repairs.append(Repair(above=upper, below=lower, moved=item, moved_to=target, evidence=why))
        low, high = min(index, target), max(index, target)
        for changed in range(max(low - 1, start), min(high + 1, stop - 1)):
            if changed not in todo:
                todo.append(changed)
        todo.sort()
    result.ranklist = current
    return result


def _violation(evidence: Evidence, current: list[str], index: int) -> tuple[str, str, str] | None:
    """(item, "rise" | "sink", why) when the pair at index is the wrong way round, else None."""
    upper, lower = current[index], current[index + 1]
    relation = both_orders_relation(evidence, lower, upper, stage="verify")
    if relation == ABOVE:
        return lower, "rise", "both orders"
    if relation == DISPUTED:
        if index + 2 < len(current) and both_orders_relation(evidence, current[index + 2], upper, stage="verify") == ABOVE:
            return upper, "sink", f"transitivity via {current[index + 2]}"
        if index >= 1 and both_orders_relation(evidence, lower, current[index - 1], stage="verify") == ABOVE:
            return lower, "rise", f"transitivity via {current[index - 1]}"
    return None


def _place(evidence: Evidence, current: list[str], item: str, low: int, high: int, *, default: int) -> int:
    """Where `item` goes among current[low..high] by bisection, each step in both orders; a step the
    orders dispute counts as "not above" (the item goes lower)."""
    insertion_point = default
    while low <= high:
        mid = (low + high) // 2
        if both_orders_relation(evidence, item, current[mid], stage="verify") in (ABOVE, LEVEL):
            insertion_point = mid
            high = mid - 1
        else:
            low = mid + 1
    return insertion_point


CUT_WINDOW_ABOVE = 5  # items above the cut that the final settling reconsiders


@dataclass
class CutResult:
    ranklist: list[str]
    window: list[str] = field(default_factory=list)  # the items reconsidered, empty when the cut was clear
    skipped: list[str] = field(default_factory=list)


def robust_settle_cut(ranklist: list[str], evidence: Evidence, *, max_size: int, above: int = CUT_WINDOW_ABOVE) -> CutResult:
    """The last step of a batch: the items around the cut (`above` over it, the reserve under it) when
    one of their adjacent pairs is not clearly ordered in both orders (a disagreement, only "Equal"): they
    meet each other in both orders (a round robin) and take their places by wins minus losses (ties keep
    their order). With a clear cut nothing is asked. A judge biased towards one position disputes many
    pairs; a verdict against the position it favours is then what tells the items apart."""
    current = list(ranklist)
    start, stop = max(0, max_size - above), len(current)
    if stop - start < 2 or stop <= max_size:
        return CutResult(current)
    window = current[start:stop]
    result = CutResult(current)
    try:
        clear = all(
            both_orders_relation(evidence, window[i], window[i + 1], stage="verify") == ABOVE for i in range(len(window) - 1)
        )
        if clear:
            return result
        for i, x in enumerate(window):
            for y in window[i + 1 :]:
                both_orders_relation(evidence, x, y, stage="verify")
    except ComparisonFailed as exc:
        result.skipped.append(exc.reason)
        return result  # leave the cut as it is
    score = {x: sum(evidence.tally(x, y)[0] - evidence.tally(x, y)[1] for y in window if y != x) for x in window}
    settled = sorted(window, key=lambda x: -score[x])  # stable: ties keep the list's order
    result.ranklist = current[:start] + settled
    result.window = window
    return result
