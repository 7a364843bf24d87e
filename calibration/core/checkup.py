"""A judge check-up's verdict in words, against the floors a lead sets. No Django.

A check-up (judgeapp/checkup/, docs/checkup.md) measures a judge on public pairs that people labelled, set
by set. Its verdict is `passed`, or `failed: ` and every figure below its floor ("position consistency 0%
(floor 60%)"), or `failed: the check-up is invalid (…)` when too many of its replies were unusable to
trust its figures. A figure that is undefined (no pair to count it on) fails nothing; a note says so.

The default floors come from the published figures the check-up prints beside its own: on MT-Bench's
questions GPT-4 kept its verdict when the replies were swapped 65% of the time and GPT-3.5 46% (Zheng et al.
2023, Table 2), and GPT-4 agreed with the experts on 85% of non-tie votes, the experts with each other on
81% (Table 3). A judge below 60% on either is far below a model teams already use as a judge; and a kappa
below 0.4 with the human label is less than moderate agreement, where PandaLM's annotators reached 0.85.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

POSITION_FLOOR = 0.6
ACCURACY_FLOOR = 0.6
KAPPA_FLOOR = 0.4

PASSED = "passed"
FAILED = "failed"


@dataclass(frozen=True)
class Floors:
    """The least each figure of every set must reach (the figure's value, not its interval)."""

    position_consistency: float = POSITION_FLOOR
    accuracy_consistent: float = ACCURACY_FLOOR
    kappa: float = KAPPA_FLOOR


# (the report's key, its name in a verdict, a share shown in percent, else a number like kappa)
FLOORED = (
    ("position_consistency", "position consistency", True),
    ("accuracy_consistent", "accuracy over consistent verdicts", True),
    ("kappa", "kappa", False),
)


@dataclass(frozen=True)
class CheckupVerdict:
    passed: bool
    text: str  # "passed", or "failed: …"
    failures: tuple[str, ...] = ()  # "position consistency 0% (floor 60%)", one per figure below its floor
    notes: tuple[str, ...] = ()  # the figures that could not be compared with their floor, and why


def _number(value: float, share: bool, digits: int) -> str:
    """A share in percent with `digits` decimals (60%, 59.5%); a kappa with two more (0.40, 0.395)."""
    text = f"{value * 100:.{digits}f}" if share else f"{value:.{digits + 2}f}"
    if text.startswith("-") and float(text) == 0:
        text = text[1:]  # -0.00 reads as a sign that is not there
    return text + "%" if share else text


def _floor_text(floor: float, share: bool) -> str:
    """The floor as a lead would write it: 60%, 62.5%, 0.40."""
    for digits in range(0, 4):
        text = _number(floor, share, digits)
        if abs(float(text.rstrip("%")) / (100 if share else 1) - floor) < 1e-9:
            return text
    return _number(floor, share, 3)


def _value_text(value: float, floor: float, share: bool) -> str:
    """The figure rounded as usual (0%, 0.12), with more digits where rounding would make a figure below its
    floor read as reaching it (59.5%, not 60%, under a floor of 60%)."""
    for digits in range(0, 4):
        text = _number(value, share, digits)
        if float(text.rstrip("%")) / (100 if share else 1) < floor - 1e-12:
            return text
    return _number(value, share, 4)


def _figures(entry: Mapping) -> Mapping:
    """A set's figures: the report's set entry holds them under `figures`; a judge's record holds them bare."""
    return entry.get("figures", entry)


def checkup_verdict(
    sets: Mapping[str, Mapping],
    *,
    floors: Floors,
    invalid: bool = False,
    invalid_reasons: Sequence[str] = (),
) -> CheckupVerdict:
    """The verdict of one check-up: `sets` is its report's `sets` ({set name: {figures: {key: {value, …}}}},
    or the figures bare), `invalid` and `invalid_reasons` its report's. The sets are named in the verdict
    when there are several."""
    if invalid:
        reasons = "; ".join(r for r in invalid_reasons if r)
        return CheckupVerdict(passed=False, text=f"{FAILED}: the check-up is invalid" + (f" ({reasons})" if reasons else ""))
    if not sets:
        return CheckupVerdict(passed=False, text=f"{FAILED}: the check-up measured no set")
    failures, notes = [], []
    several = len(sets) > 1
    for name, entry in sets.items():
        figures = _figures(entry)
        where = f" on {name}" if several else ""
        for key, label, share in FLOORED:
            floor = getattr(floors, key)
            value = (figures.get(key) or {}).get("value")
            if value is None:
                notes.append(
                    f"{label} is undefined on {name}, so it was not compared with its floor ({_floor_text(floor, share)})"
                )
            elif value < floor:
                failures.append(f"{label} {_value_text(value, floor, share)} (floor {_floor_text(floor, share)}){where}")
    if failures:
        return CheckupVerdict(
            passed=False, text=f"{FAILED}: " + "; ".join(failures), failures=tuple(failures), notes=tuple(notes)
        )
    return CheckupVerdict(passed=True, text=PASSED, notes=tuple(notes))
