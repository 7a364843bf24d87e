"""Which items a lead resolves, and how fast each annotator works through a sample. No Django.

An item needs resolving when its annotators disagree by more than the lead's margin: for 1–5 scores, the
highest label minus the lowest is above the margin (1 by default: a 2 beside a 4 is resolved, a 3 beside
a 4 is not); for pass/fail and pairwise labels, any two labels that differ.

Time per item: the median gap between one annotator's consecutive actions (label or skip) in a sample.
A gap over ten minutes is a break, not work, and is left out; with no gap left it cannot be measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from statistics import median

from calibration.core.labels import SCORE

DEFAULT_MARGIN = 1
MAX_MARGIN = 10
BREAK_SECONDS = 10 * 60


def disagrees(labels: Sequence[str], *, label_kind: str, margin: int = DEFAULT_MARGIN) -> bool:
    """Whether the labels of one item (two or more, canonical) differ by more than the margin."""
    if len(labels) < 2:
        return False
    if label_kind == SCORE:
        scores = [int(label) for label in labels]
        return max(scores) - min(scores) > margin
    return len(set(labels)) > 1


def seconds_per_item(acted_at: Sequence[datetime], *, break_seconds: int = BREAK_SECONDS) -> float | None:
    """The median gap in seconds between consecutive actions, breaks left out; None when no gap is left."""
    times = sorted(acted_at)
    gaps = [(later - earlier).total_seconds() for earlier, later in zip(times, times[1:])]
    working = [gap for gap in gaps if gap <= break_seconds]
    return median(working) if working else None


def duration_words(seconds: float | None) -> str:
    """'40 s', '2 min 5 s'; '—' when not measurable."""
    if seconds is None:
        return "—"
    if seconds < 0.5:
        return "under 1 s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, rest = divmod(whole, 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"
