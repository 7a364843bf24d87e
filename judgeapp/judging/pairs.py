"""Two replies judged in both orders with the seed's Pairwise prompt (seed: LLM-as-Judge, Pairwise), and the
seeded sample of cases both orders see. Shared by pairwise A/B and the judge check-up; plain Python.

Order "ab" shows A's reply as Reply 1, "ba" shows B's. The judge's "1" | "2" | "tie" in an order is mapped
back to the reply it names; two orders that disagree make a tie (the judge followed the order, not the
content); a pair with only one usable order has no verdict at all.
"""

from __future__ import annotations

import random

from judgeapp.judging.prompts import Prompt, load_prompt

ORDERS = ("ab", "ba")


def shown_first(order: str) -> tuple[str, str]:
    """(version shown as Reply 1, version shown as Reply 2) for an order."""
    if order == "ab":
        return "A", "B"
    if order == "ba":
        return "B", "A"
    raise ValueError(f"unknown order {order!r}")


def map_back(order: str, winner: str) -> str:
    """The judge's "1" | "2" | "tie" in one order, as the version it names: "A" | "B" | "tie"."""
    if winner == "tie":
        return "tie"
    first, second = shown_first(order)
    if winner == "1":
        return first
    if winner == "2":
        return second
    raise ValueError(f"unknown winner {winner!r}")


def both_orders(ab: str | None, ba: str | None) -> tuple[str | None, bool]:
    """(the case's verdict, whether the two orders disagreed) from the mapped-back verdicts.

    None when either order has no verdict: a single-order verdict is never counted.
    """
    if ab is None or ba is None:
        return None, False
    if ab == ba:
        return ab, False
    return "tie", True


def render_pairwise_prompt(*, rubric: str, input: str, first: str, second: str, prompt: Prompt | None = None) -> str:
    """The seed prompt, verbatim (a run passes the version it recorded). Only the rubric, the customer
    message and the two replies go in: no system, version or model name ever reaches the judge."""
    return (prompt or load_prompt("pairwise")).render(rubric=rubric, input=input, first=first, second=second)


def sample_case_ids(case_ids: list[str], *, sample: int | None, seed: int | None) -> list[str]:
    """The cases to judge, in their given order: all of them, or `sample` of them drawn with `seed`.

    The draw depends only on the ids, the size and the seed, never on any reply, so both versions see
    identical inputs, and the same command draws the same sample again.
    """
    if sample is None or sample >= len(case_ids):
        return list(case_ids)
    chosen = set(random.Random(seed if seed is not None else 0).sample(sorted(case_ids), sample))
    return [c for c in case_ids if c in chosen]
