"""How well a ranklist's order is supported by the comparisons behind it.

For each adjacent pair (upper above lower), every verdict stored for the ranklist on those two artifacts,
in either order, is a vote: *for* the order (the upper one won), *against* it (the lower one won), or
*equal*. A pair is

- **supported** when it has more votes for than against;
- **unsupported** when no verdict decides between the two (never compared, or only "Equal"): its order
  comes from other comparisons (transitivity, a model's scores) or from where the bisection stopped;
- **contested** when the votes for and against are as many;
- **contradicted** when more verdicts put the lower one first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

from judgeapp.ranker.core import EQUAL, A, B, swap

SUPPORTED, UNSUPPORTED, CONTESTED, CONTRADICTED = "supported", "unsupported", "contested", "contradicted"
WEAK = (UNSUPPORTED, CONTESTED, CONTRADICTED)


@dataclass(frozen=True)
class Vote:
    first: str  # shown as Artifact A
    second: str
    winner: str  # from first's side


@dataclass(frozen=True)
class PairSupport:
    upper: str
    lower: str
    position: int  # of the upper one, 0 = best
    votes_for: int
    votes_against: int
    votes_equal: int
    status: str

    def as_dict(self) -> dict:
        return asdict(self)


def pair_status(votes_for: int, votes_against: int) -> str:
    if votes_for > votes_against:
        return SUPPORTED
    if votes_against > votes_for:
        return CONTRADICTED
    return CONTESTED if votes_for else UNSUPPORTED


def adjacent_support(ranking: list[str], votes: Iterable[Vote]) -> list[PairSupport]:
    """Each adjacent pair of `ranking` (best first) with its votes, in list order."""
    by_pair: dict[tuple[str, str], list[str]] = {}
    for vote in votes:
        by_pair.setdefault((vote.first, vote.second), []).append(vote.winner)
    pairs = []
    for position, (upper, lower) in enumerate(zip(ranking, ranking[1:])):
        seen = by_pair.get((upper, lower), []) + [swap(w) for w in by_pair.get((lower, upper), [])]
        votes_for, votes_against, votes_equal = seen.count(A), seen.count(B), seen.count(EQUAL)
        pairs.append(
            PairSupport(upper, lower, position, votes_for, votes_against, votes_equal, pair_status(votes_for, votes_against))
        )
    return pairs


def support_summary(pairs: list[PairSupport]) -> dict:
    """Counts by status, and one line naming the pairs whose order is not supported (empty when all are)."""
    counts = {status: sum(1 for p in pairs if p.status == status) for status in (SUPPORTED, *WEAK)}
    weak = [p for p in pairs if p.status in WEAK]
    if not pairs:
        line = ""
    elif not weak:
        line = f"every adjacent pair of the {len(pairs) + 1} is supported by its own comparisons"
    else:
        named = "; ".join(
            f"#{p.position + 1} {p.upper} over #{p.position + 2} {p.lower}: {p.status} "
            f"({p.votes_for} for, {p.votes_against} against{f', {p.votes_equal} equal' if p.votes_equal else ''})"
            for p in weak
        )
        line = f"{len(weak)} of {len(pairs)} adjacent pairs not supported by their comparisons: {named}"
    return {"pairs": len(pairs), **counts, "line": line}
