"""What the strategies beyond the seed know about pairs: every verdict asked so far, one per ordered pair.

An *ask* is one judge call: `ask(first, second, stage=...)` shows `first` as Artifact A and `second` as
Artifact B, and answers "A" | "B" | "Equal" from `first`'s side. The judge runs at temperature 0 behind a
response cache, so asking the same ordered pair again brings no new evidence: each ordered pair is asked
at most once, and a pair can be seen at most twice (both orders). Further evidence about a pair comes
from other pairs (transitivity), never from asking the same question again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from judgeapp.ranker.core import EQUAL, WINNERS, A, B, ComparisonFailed, swap

Ask = Callable[..., str]  # ask(first, second, *, stage) -> A | B | Equal, from first's side


class BudgetExhausted(Exception):
    """The strategy may not make another call (its --budget is spent)."""


@dataclass(frozen=True)
class Observation:
    first: str  # shown as Artifact A
    second: str
    winner: str  # from first's side
    stage: str = ""


@dataclass
class Evidence:
    """Verdicts by ordered pair, asked through `ask` only when not known yet.

    `known`: observations made before (stored comparisons of the ranklist): replayed, not asked again.
    `budget`: the most new asks allowed (None: no limit); `calls` counts the new asks made (failed ones
    included). A pair whose ask failed (ComparisonFailed) is not asked again: the failure is raised again.
    """

    ask: Ask
    known: Iterable[Observation] = ()
    budget: int | None = None
    verdicts: dict[tuple[str, str], str] = field(default_factory=dict)
    asked: list[Observation] = field(default_factory=list)
    failed: dict[tuple[str, str], str] = field(default_factory=dict)  # ordered pair -> why it gave no verdict

    def __post_init__(self):
        for observation in self.known:
            self.verdicts[(observation.first, observation.second)] = observation.winner
        self.known = ()

    @property
    def calls(self) -> int:
        return len(self.asked)

    @property
    def remaining(self) -> int | None:
        return None if self.budget is None else self.budget - self.calls

    def has(self, first: str, second: str) -> bool:
        return (first, second) in self.verdicts

    def get(self, first: str, second: str, *, stage: str) -> str:
        """The verdict on `first` shown first, from `first`'s side; asks the judge when not known."""
        known = self.verdicts.get((first, second))
        if known is not None:
            return known
        if (first, second) in self.failed:
            raise ComparisonFailed(self.failed[(first, second)], first=first, second=second)
        if self.budget is not None and self.calls >= self.budget:
            raise BudgetExhausted(f"the budget of {self.budget} comparator calls is spent")
        try:
            winner = self.ask(first, second, stage=stage)
        except ComparisonFailed as exc:
            self.failed[(first, second)] = exc.reason
            self.asked.append(Observation(first, second, "", stage))  # a call made, without a verdict
            raise
        if winner not in WINNERS:
            raise ValueError(f"comparator answered {winner!r}; expected one of {', '.join(WINNERS)}")
        self.verdicts[(first, second)] = winner
        self.asked.append(Observation(first, second, winner, stage))
        return winner

    def seen_from(self, x: str, y: str) -> list[str]:
        """Every known verdict on x against y, from x's side (0, 1 or 2 of them: one per order)."""
        seen = []
        if (x, y) in self.verdicts:
            seen.append(self.verdicts[(x, y)])
        if (y, x) in self.verdicts:
            seen.append(swap(self.verdicts[(y, x)]))
        return seen

    def tally(self, x: str, y: str) -> tuple[int, int, int]:
        """(for x, against x, equal) over both orders."""
        seen = self.seen_from(x, y)
        return seen.count(A), seen.count(B), seen.count(EQUAL)

    def observations(self) -> list[Observation]:
        return [Observation(first, second, winner) for (first, second), winner in self.verdicts.items()]
