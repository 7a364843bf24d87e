"""`--strategy tournament`: budgeted active ranking with a Bradley–Terry model fitted with `choix`.

1. **Warm-up**: every candidate meets `warmup` others chosen at random.
2. **The cut**: the model is fitted, and while it doubts on which side of the cut at K an item belongs,
   that item meets the item just across the cut (the least sure first, a few per fit). A pair seen in both
   orders is not asked again: the item meets the next one across instead (transitivity).
3. **The contenders** — the model's top K, every item it cannot rule out, and every item that beat one of
   those in both orders — meet each other in both orders (a round robin, the pairs nearest in score first).
   A round robin moves the scores, so the cut is settled again, until a round robin asks nothing new.

It stops there, or when the call budget is spent, or when every doubtful pair has been seen in both
orders. It is *confident* when every item the model doubts is a contender (it has met every other
contender in both orders) and those direct comparisons leave no tie at the cut. The ranking is the
contenders by their wins against each other (Copeland; ties by score) when
their round robin is complete, else by score; the ranklist is its top K.

The fit is choix's ILSR on the matrix of wins (an "Equal" is half a win each way) with the regularisation
`ALPHA`; the doubt about the order of two items is the Laplace approximation at that fit (the inverse of
the Hessian of the log-likelihood plus `ALPHA` on its diagonal). Each ordered pair is asked at most once:
the judge runs at temperature 0 behind a response cache, so a repeated question brings nothing new. A
pair is asked in the order not seen yet (at random when neither is), so a judge's pull towards one
position falls on both sides alike. A pair whose comparison fails is not asked again, and an item whose
comparisons fail against two different opponents is left out of the ranking (unplaced, with the reason).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from judgeapp.ranker.core import EQUAL, A, ComparisonFailed
from judgeapp.ranker.core.evidence import BudgetExhausted, Evidence

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController

ALPHA = 0.025  # keeps the scores finite for a candidate that never lost (or never won)
DEFAULT_CONFIDENCE = 0.9
WARMUP_COMPARISONS = 3
CALLS_PER_CANDIDATE = 10
FAILURES_TO_DROP = 2  # failed comparisons, against different opponents, that leave an item unplaced


def default_budget(new_candidates: int, k: int) -> int:
    """The default --budget: 10 calls per new candidate, and enough for one insert to meet the cut and the
    top of the list (3 (k + 2))."""
    return max(CALLS_PER_CANDIDATE * max(new_candidates, 1), 3 * (k + 2))


@dataclass
class TournamentResult:
    ranking: list[str]  # the top k, best first
    order: list[str]  # every ranked item, best first
    scores: dict[str, float]
    in_top_probability: dict[str, float]  # the model's probability that the item belongs in the top k
    confident: bool
    stopped: str  # confident | budget | exhausted
    calls: int
    uncertain: list[str] = field(default_factory=list)  # items whose side of the cut was still in doubt
    unplaced: dict[str, str] = field(default_factory=dict)  # item -> why it was left out


_controller: ThreadpoolController | None = None


def _blas() -> ThreadpoolController:
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()  # finding the libraries is the slow part: once
    return _controller


def _normal_cdf(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


class _Model:
    """Bradley–Terry scores of the items from every verdict among them, and their Laplace covariance."""

    def __init__(self, items: list[str], evidence: Evidence):
        self.items = list(items)
        import numpy as np  # here, not when `rank --help` imports this module

        index = {item: i for i, item in enumerate(items)}
        n = len(items)
        wins = np.zeros((n, n))  # wins[i, j]: how often i beat j
        for (first, second), winner in evidence.verdicts.items():
            i, j = index.get(first), index.get(second)
            if i is None or j is None:
                continue
            if winner == EQUAL:
                wins[i, j] += 0.5
                wins[j, i] += 0.5
            elif winner == A:
                wins[i, j] += 1
            else:
                wins[j, i] += 1
        # One BLAS thread: the matrices are small, and OpenBLAS's threads cost far more than they save.
        with _blas().limit(limits=1, user_api="blas"):
            import choix  # imports scipy.stats (half a second): loaded by a tournament, not by every command

            self.scores = choix.ilsr_pairwise_dense(wins, alpha=ALPHA) if wins.any() else np.zeros(n)
            games = wins + wins.T
            p = 1 / (1 + np.exp(-(self.scores[:, None] - self.scores[None, :])))
            weight = games * p * (1 - p)
            self.covariance = np.linalg.inv(np.diag(weight.sum(axis=1)) - weight + ALPHA * np.eye(n))
        self.order = sorted(range(n), key=lambda i: (-self.scores[i], items[i]))

    def sure(self, i: int, j: int) -> float:
        """The model's probability that i and j are in the right order by score."""
        variance = self.covariance[i, i] + self.covariance[j, j] - 2 * self.covariance[i, j]
        return _normal_cdf(abs(self.scores[i] - self.scores[j]) / math.sqrt(max(variance, 1e-12)))


class _Pool:
    """The items still ranked, the evidence, and the comparisons that failed."""

    def __init__(self, items: list[str], evidence: Evidence, rng: random.Random):
        self.items = items
        self.evidence = evidence
        self.rng = rng
        self.failed: set[frozenset] = set()
        self.failures: dict[str, set[str]] = {}
        self.unplaced: dict[str, str] = {}

    def seen(self, x: str, y: str) -> int:
        return int(self.evidence.has(x, y)) + int(self.evidence.has(y, x))

    def askable(self, x: str, y: str) -> bool:
        return self.seen(x, y) < 2 and frozenset((x, y)) not in self.failed

    def ask(self, x: str, y: str, stage: str) -> bool:
        """Ask x against y in an order not seen yet; False when there is none (both seen, failed, or one
        of them left out)."""
        if x not in self.items or y not in self.items or not self.askable(x, y):
            return False
        orders = [(a, b) for a, b in ((x, y), (y, x)) if not self.evidence.has(a, b)]
        first, second = orders[0] if len(orders) == 1 else self.rng.choice(orders)
        try:
            self.evidence.get(first, second, stage=stage)
        except ComparisonFailed as exc:
            self.failed.add(frozenset((x, y)))
            for item, other in ((x, y), (y, x)):
                self.failures.setdefault(item, set()).add(other)
                if len(self.failures[item]) >= FAILURES_TO_DROP and item in self.items:
                    self.items.remove(item)
                    self.unplaced[item] = exc.reason
        return True


def tournament(
    items: list[str],
    evidence: Evidence,
    *,
    k: int,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    warmup: int = WARMUP_COMPARISONS,
) -> TournamentResult:
    """Rank `items` for their top `k` with at most `evidence.budget` new calls (the module's docstring).

    `evidence` may hold earlier verdicts (an incremental insert, a resumed run): they count, and cost
    nothing. For a given `seed` and the same answers the same questions are asked.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    pool = _Pool(list(dict.fromkeys(items)), evidence, random.Random(seed))
    stopped = "confident"
    try:
        _warm_up(pool, warmup)
        while True:
            model = _settle_cut(pool, k, confidence)
            if not _round_robin(pool, model, _contenders(pool, model, k, confidence)):
                break
    except BudgetExhausted:
        stopped = "budget"
    model = _Model(pool.items, evidence)
    contenders = _contenders(pool, model, k, confidence)
    names = pool.items
    complete = all(not pool.askable(names[i], names[j]) for n, i in enumerate(contenders) for j in contenders[n + 1 :])
    clear_cut = True
    if complete:
        group = list(contenders)
        wins = {i: _copeland(evidence, names, i, group) for i in group}
        contenders = sorted(group, key=lambda i: (-wins[i], -model.scores[i], names[i]))
        clear_cut = len(contenders) <= k or wins[contenders[k - 1]] > wins[contenders[k]]
    chosen = set(contenders)
    order = [names[i] for i in contenders + [i for i in model.order if i not in chosen]]
    doubtful = _membership_questions(model, k, confidence)
    # Confident: every item the model doubts has met every contender in both orders, and those direct
    # comparisons leave no tie at the cut.
    confident = complete and clear_cut and all(i in chosen for _sure, i, _j in doubtful)
    if stopped == "confident" and not confident:
        stopped = "exhausted"
    elif stopped == "budget" and confident:
        stopped = "confident"  # the last call the budget allowed was the one that settled it
    return TournamentResult(
        ranking=order[:k],
        order=order,
        scores={names[i]: round(float(model.scores[i]), 4) for i in range(len(names))},
        in_top_probability=_in_top(model, k),
        confident=confident,
        stopped=stopped,
        calls=evidence.calls,
        uncertain=sorted({names[i] for _sure, i, _j in doubtful}),
        unplaced=dict(pool.unplaced),
    )


def _in_top(model: _Model, k: int) -> dict[str, float]:
    names = model.items
    if len(model.order) <= k:
        return {name: 1.0 for name in names}
    last_in, first_out = model.order[k - 1], model.order[k]
    probability = {}
    for position, i in enumerate(model.order):
        other = first_out if position < k else last_in
        sure = model.sure(i, other)
        probability[names[i]] = round(sure if position < k else 1 - sure, 4)
    return probability


def _membership_questions(model: _Model, k: int, confidence: float) -> list[tuple[float, int, int]]:
    """(sureness, item, the item just across the cut) for every item the model is not sure is on its
    side of the cut at k, least sure first."""
    order = model.order
    if len(order) <= k:
        return []
    last_in, first_out = order[k - 1], order[k]
    questions = []
    for position, i in enumerate(order):
        other = first_out if position < k else last_in
        if i != other:
            sure = model.sure(i, other)
            if sure < confidence:
                questions.append((sure, i, other))
    questions.sort()
    return questions


def _contenders(pool: _Pool, model: _Model, k: int, confidence: float) -> list[int]:
    """The model's top k, every item it cannot rule out of the top k, and (transitivity) every item that
    beat one of those in both orders; by score."""
    order = model.order
    if len(order) <= k:
        return list(order)
    names = model.items
    last_in = order[k - 1]
    chosen = set(order[:k]) | {i for i in order[k:] if model.sure(i, last_in) < confidence}
    while True:
        beaters = {
            i for i in order if i not in chosen and any(pool.evidence.tally(names[i], names[c])[:2] == (2, 0) for c in chosen)
        }
        if not beaters:
            return [i for i in order if i in chosen]
        chosen |= beaters


def _warm_up(pool: _Pool, warmup: int) -> None:
    """Until every item has `warmup` comparisons: the items short of them meet each other at random,
    opponents not met yet first."""
    for _round in range(warmup):
        count = dict.fromkeys(pool.items, 0)
        for first, second in pool.evidence.verdicts:
            if first in count and second in count:
                count[first] += 1
                count[second] += 1
        waiting = [item for item in pool.items if count[item] < warmup]
        if not waiting or len(pool.items) < 2:
            return
        pool.rng.shuffle(waiting)
        while waiting:
            x = waiting.pop()
            if x not in pool.items:
                continue
            fresh = [y for y in waiting if y in pool.items and pool.seen(x, y) == 0 and pool.askable(x, y)]
            others = fresh or [y for y in pool.items if y != x and pool.askable(x, y)]
            if not others:
                continue
            y = others[0] if fresh else pool.rng.choice(others)
            if y in waiting:
                waiting.remove(y)
            pool.ask(x, y, "warmup")


def _settle_cut(pool: _Pool, k: int, confidence: float) -> _Model:
    """Ask the membership questions, a few per fit, until the model doubts no item's side of the cut (or
    none of its doubts can be asked)."""
    while True:
        model = _Model(pool.items, pool.evidence)
        questions = _membership_questions(model, k, confidence)
        if not questions or not _ask_batch(pool, model, questions):
            return model


def _ask_batch(pool: _Pool, model: _Model, questions: list[tuple[float, int, int]]) -> int:
    """The least sure questions, at most one per item, N/25 per fit (fits are cheap, not free). A pair
    seen in both orders is replaced by the doubtful item against the next items on the other side,
    nearest in score first."""
    names = model.items
    batch = max(1, len(names) // 25)
    busy: set[int] = set()
    asked = 0
    for _sure, i, j in questions:
        if i in busy:
            continue
        above = model.scores[j] > model.scores[i]
        opponents = [j] + sorted(
            (o for o in range(len(names)) if o not in (i, j) and (model.scores[o] > model.scores[i]) == above),
            key=lambda o: abs(model.scores[o] - model.scores[j]),
        )
        for o in opponents:
            if o not in busy and pool.ask(names[i], names[o], "cut"):
                busy |= {i, o}
                asked += 1
                break
        if asked >= batch:
            break
    return asked


def _round_robin(pool: _Pool, model: _Model, contenders: list[int]) -> int:
    """Every pair of contenders in both orders, the pairs nearest in score first (the ones that matter
    most when the budget runs out). Returns how many questions it asked."""
    names = model.items
    pairs = sorted(
        ((i, j) for n, i in enumerate(contenders) for j in contenders[n + 1 :]),
        key=lambda pair: abs(model.scores[pair[0]] - model.scores[pair[1]]),
    )
    asked = 0
    for i, j in pairs:
        while names[i] in pool.items and names[j] in pool.items and pool.ask(names[i], names[j], "roundrobin"):
            asked += 1
    return asked


def _copeland(evidence: Evidence, names: list[str], i: int, group: list[int]) -> int:
    """Wins minus losses of item i against the group, each order one vote, Equal none."""
    total = 0
    for j in group:
        if j != i:
            wins, losses, _equal = evidence.tally(names[i], names[j])
            total += wins - losses
    return total
