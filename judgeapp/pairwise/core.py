"""Pairwise A/B in both orders (seed: LLM-as-Judge, Pairwise).

Every input is judged twice: A's reply shown first ("ab"), then B's first ("ba"). The swapped call's
"1"/"2" is mapped back to the version it names. Agreement is a win for that version (or an agreed tie);
disagreement is a tie, because the judge followed the order rather than the content. A case with only
one usable order is never counted. More than a quarter of the judged cases in disagreement makes the
comparison inconclusive: no winner is named.

Beyond the seed: an exact two-sided sign test (binomial, ties excluded) and its Clopper-Pearson interval
on A's win rate, and the win rate split by which reply was longer, so that a length bias shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# The both-order helpers and the seeded sample are shared with the judge check-up (judgeapp/judging/pairs.py).
from judgeapp.judging.pairs import ORDERS, both_orders, map_back, render_pairwise_prompt, sample_case_ids, shown_first  # noqa: F401
from judgeapp.judging.prompts import Prompt
from judgeapp.judging.stats import sign_test

# Stop rule: more than a quarter of cases ending in disagreement -> inconclusive, no winner named.
DISAGREEMENT_LIMIT = 0.25
# Beyond the seed: a judge that gives no usable verdict (after its one parse retry, or its server's
# retries) on more than this share of cases is not measuring the comparison; the run is invalid.
UNJUDGED_LIMIT = 0.05
CONFIDENCE = 0.95

# A judge callable: the rendered prompt in, the parsed reply ({"reasoning", "winner"}) out, or None when
# the judge gave no usable verdict.
PairwiseJudge = Callable[[str], "dict | None"]


@dataclass
class PairwiseCase:
    case_id: str
    ab: str | None  # mapped back to "A" | "B" | "tie"; None: no usable verdict in that order
    ba: str | None
    reasoning_ab: str = ""
    reasoning_ba: str = ""
    len_a: int = 0  # characters
    len_b: int = 0
    error_ab: str = ""
    error_ba: str = ""

    @property
    def verdict(self) -> str | None:
        return both_orders(self.ab, self.ba)[0]

    @property
    def disagreement(self) -> bool:
        return both_orders(self.ab, self.ba)[1]

    @property
    def longer(self) -> str:
        """Which reply was longer: "A", "B" or "same"."""
        if self.len_a > self.len_b:
            return "A"
        if self.len_b > self.len_a:
            return "B"
        return "same"

    def as_report(self) -> dict:
        return {
            "case_id": self.case_id,
            "ab": self.ab,
            "ba": self.ba,
            "verdict": self.verdict,
            "disagreement": self.disagreement,
            "reasoning_ab": self.reasoning_ab,
            "reasoning_ba": self.reasoning_ba,
            "len_a": self.len_a,
            "len_b": self.len_b,
            "longer": self.longer,
            **({"error_ab": self.error_ab} if self.error_ab else {}),
            **({"error_ba": self.error_ba} if self.error_ba else {}),
        }


def order_prompt(order: str, *, rubric: str, input: str, reply_a: str, reply_b: str, prompt: Prompt | None = None) -> str:
    """The prompt of one order: in "ab" A's reply is Reply 1, in "ba" B's. The judge sees only the two
    replies, never which version each is."""
    first, second = (reply_a, reply_b) if shown_first(order)[0] == "A" else (reply_b, reply_a)
    return render_pairwise_prompt(rubric=rubric, input=input, first=first, second=second, prompt=prompt)


def case_from_replies(
    case_id: str,
    replies: dict[str, dict | None],
    *,
    len_a: int = 0,
    len_b: int = 0,
    errors: dict[str, str] | None = None,
) -> PairwiseCase:
    """One input's case from each order's parsed reply ({"reasoning", "winner"}, or None when that order
    gave no usable verdict), its "1"/"2" mapped back to the version it names; `len_a`, `len_b`: the two
    replies' lengths (a report reads those, not the replies)."""
    verdicts: dict[str, tuple[str | None, str]] = {}
    for order in ORDERS:
        parsed = replies.get(order)
        verdicts[order] = (map_back(order, parsed["winner"]), parsed.get("reasoning", "")) if parsed else (None, "")
    errors = errors or {}
    return PairwiseCase(
        case_id=case_id,
        ab=verdicts["ab"][0],
        ba=verdicts["ba"][0],
        reasoning_ab=verdicts["ab"][1],
        reasoning_ba=verdicts["ba"][1],
        len_a=len_a,
        len_b=len_b,
        error_ab=errors.get("ab", ""),
        error_ba=errors.get("ba", ""),
    )


def judge_case(
    judge: PairwiseJudge, *, case_id: str, rubric: str, input: str, reply_a: str, reply_b: str, prompt: Prompt | None = None
) -> PairwiseCase:
    """Judge one input in both orders with a judge callable. A run does the same steps with one unit per
    order (so that the two calls run in parallel and survive a crash apart): `order_prompt` for each
    unit's prompt, `case_from_replies` for the report."""
    replies = {
        order: judge(order_prompt(order, rubric=rubric, input=input, reply_a=reply_a, reply_b=reply_b, prompt=prompt))
        for order in ORDERS
    }
    return case_from_replies(case_id, replies, len_a=len(reply_a), len_b=len(reply_b))


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _length_split(judged: list[PairwiseCase]) -> dict:
    """A's win rate among the cases where A's reply was longer, where B's was, and where they were equal;
    and how often the longer reply won a decisive case (far from 0.5 on many cases: a length bias)."""
    split = {}
    for longer in ("A", "B", "same"):
        group = [c for c in judged if c.longer == longer]
        wins_a = sum(c.verdict == "A" for c in group)
        wins_b = sum(c.verdict == "B" for c in group)
        split[f"{longer}_longer" if longer != "same" else "same_length"] = {
            "cases": len(group),
            "wins_a": wins_a,
            "wins_b": wins_b,
            "ties": len(group) - wins_a - wins_b,
            "win_rate_a": _rate(wins_a, wins_a + wins_b),
        }
    decisive_unequal = [c for c in judged if c.verdict in ("A", "B") and c.longer != "same"]
    longer_won = sum(c.verdict == c.longer for c in decisive_unequal)
    return {
        "measure": "characters",
        **split,
        "longer_won": longer_won,
        "shorter_won": len(decisive_unequal) - longer_won,
        "longer_win_rate": _rate(longer_won, len(decisive_unequal)),
    }


def summarize(cases: list[PairwiseCase], *, total_cases: int | None = None) -> dict:
    """The pairwise report's figures (CONTRACT §4 keys and more) from the cases judged.

    `total_cases`: how many inputs were meant to be compared (cases with a missing reply count as
    unjudged); defaults to len(cases).
    """
    total = total_cases if total_cases is not None else len(cases)
    judged = [c for c in cases if c.verdict is not None]
    unjudged = [c.case_id for c in cases if c.verdict is None]
    missing = max(0, total - len(cases))
    wins_a = sum(c.verdict == "A" for c in judged)
    wins_b = sum(c.verdict == "B" for c in judged)
    ties = len(judged) - wins_a - wins_b
    disagreements = [c.case_id for c in judged if c.disagreement]
    agreed_ties = sum(1 for c in judged if c.verdict == "tie" and not c.disagreement)
    disagreement_rate = _rate(len(disagreements), len(judged))
    unjudged_count = len(unjudged) + missing
    unjudged_rate = _rate(unjudged_count, total) or 0.0

    reasons = []
    if not judged:
        reasons.append("no case was judged in both orders")
    elif disagreement_rate > DISAGREEMENT_LIMIT:
        reasons.append(
            f"the two orders disagreed on {len(disagreements)} of {len(judged)} cases "
            f"({disagreement_rate:.0%} > {DISAGREEMENT_LIMIT:.0%}): the judge followed the order, not the content"
        )
    invalid_reasons = []
    if total and unjudged_rate > UNJUDGED_LIMIT:
        invalid_reasons.append(
            f"{unjudged_count} of {total} cases have no verdict in both orders ({unjudged_rate:.0%} > {UNJUDGED_LIMIT:.0%})"
        )
    inconclusive = bool(reasons or invalid_reasons)
    win_rate_a = _rate(wins_a, wins_a + wins_b)
    if inconclusive or win_rate_a is None or wins_a == wins_b:
        winner = None
    else:
        winner = "A" if wins_a > wins_b else "B"
    return {
        "wins_a": wins_a,
        "wins_b": wins_b,
        "ties": ties,
        "losses_a": wins_b,
        "win_rate_a": win_rate_a,
        "win_rate_b": _rate(wins_b, wins_a + wins_b),
        "tie_rate": _rate(ties, len(judged)),
        "agreed_ties": agreed_ties,
        "disagreements": disagreements,
        "disagreement_rate": disagreement_rate,
        "inconclusive": inconclusive,
        "inconclusive_reasons": reasons + invalid_reasons,
        "invalid": bool(invalid_reasons),
        "winner": winner,
        "judged": len(judged),
        "total": total,
        "unjudged": unjudged,
        "unjudged_count": unjudged_count,
        "sign_test": sign_test(wins_a, wins_b),
        "length_split": _length_split(judged),
        "cases": [c.as_report() for c in cases],
    }
