"""The counts every report carries (CONTRACT §6): over all of a run's units, how many replies parsed,
failed to parse after their retry, were cut at the judge's max_tokens, or never came. The four add up to
the units, and the house rule reads the last three together: more than 5% of all units without a usable
reply makes the run invalid (its figures are still shown).

Plain Python: a unit is a Judgment row (`judgment_category`) or its category name.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

CATEGORIES = ("parsed", "parse_failures", "truncated", "no_reply")
UNUSABLE_LIMIT = 0.05


def unit_category(*, usable: bool, unreadable: bool, truncated: bool) -> str:
    """The one count a unit falls in, so that the counts add up to the units: `parsed` when its reply gave a
    verdict; else, when a reply came but could not be read after its retry (`unreadable`), `truncated` if it
    was cut at max_tokens and `parse_failures` if not; else `no_reply`. Every kind's units are counted here
    (a Judgment row's, the pointwise core's items, the agent judge's requirements)."""
    if usable:
        return "parsed"
    if unreadable:
        return "truncated" if truncated else "parse_failures"
    return "no_reply"


def judgment_category(unit) -> str:
    """The count a Judgment row falls in (a finished unit: done, or failed with or without a reply)."""
    return unit_category(usable=unit.status == "done", unreadable=unit.is_parse_failure, truncated=unit.truncated)


def unit_counts(categories: Iterable[str]) -> dict:
    """`counts` from one category name per unit (`unit_category`)."""
    tally = dict.fromkeys(CATEGORIES, 0)
    for category in categories:
        tally[category] += 1
    return tally_counts(tally)


def tally_counts(tally: dict[str, int]) -> dict:
    """`counts` from how many units fell in each category (every one of CATEGORIES)."""
    tally = {category: tally[category] for category in CATEGORIES}
    units = sum(tally.values())
    unusable = units - tally["parsed"]
    share = unusable / units if units else 0.0
    return {
        "units": units,
        **tally,
        "unusable": unusable,
        "unusable_rate": share,
        "invalid": share > UNUSABLE_LIMIT,
    }


def counts_of(units: Iterable) -> dict:
    return unit_counts(judgment_category(unit) for unit in units)


def counts_reason(counts: dict) -> str | None:
    """The one line that says why the counts make a run invalid, or None."""
    if not counts["invalid"]:
        return None
    return (
        f"{counts['unusable']} of {counts['units']} judge replies failed to parse after a retry, were cut at "
        f"max_tokens or never came ({counts['parse_failures']} unparsable, {counts['truncated']} truncated, "
        f"{counts['no_reply']} no reply): {counts['unusable_rate']:.1%} > {UNUSABLE_LIMIT:.0%}"
    )


def counts_line(counts: dict) -> str:
    """The `Units:` line every command's summary prints, in the same words: each judge unit's reply after its
    one parse retry, and the unusable share the 5% rule reads."""
    return (
        f"Units: {counts['units']}: {counts['parsed']} parsed, {counts['parse_failures']} parse failures, "
        f"{counts['truncated']} truncated, {counts['no_reply']} no reply (after one retry each; "
        f"{counts['unusable']} unusable, {counts['unusable_rate']:.1%})."
    )


# --- What the judge calls used and cost (a report's `usage`, judging/costs.py) ---------------------------


def money_text(value: float | Decimal | None) -> str:
    """A cost in words: `$0.0123`, `$12.40`; "no price" when unknown."""
    if value is None:
        return "no price"
    value = Decimal(str(value))
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def usage_line(usage: dict | None) -> str:
    """The report's usage in one line, for a command's summary: "Usage: 24 judge calls (0 cached), 21,310
    tokens in, 1,104 out, cost $0.0032." (CONTRACT's words); "" without usage."""
    if not usage:
        return ""
    return (
        f"Usage: {usage['calls']:,} judge calls ({usage['cached']:,} cached), {usage['input_tokens']:,} tokens in, "
        f"{usage['output_tokens']:,} out, cost {money_text(usage['cost'])}."
    )
