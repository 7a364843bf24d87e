"""What a run decided, in one word, as the runs page, the dashboard and the API's run list say it:
`{key, word, tone, detail}`. Each run kind's handler gives its finished runs' outcome (`RunHandler.outcome`);
`run_outcome` adds the words every kind shares (not finished, failed, cancelled).

`key` is the runs page's outcome filter; `tone` one of ok, bad, warn, info, neutral.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgeapp.judging.memo import shared_read
from judgeapp.judging.runkind import handler_for

if TYPE_CHECKING:
    from judgeapp.models import Run

OUTCOMES = (
    ("passed", "gate passed"),
    ("blocked", "gate blocked"),
    ("winner", "a winner"),
    ("inconclusive", "inconclusive"),
    ("result", "other results"),
    ("running", "not finished"),
    ("failed", "failed or cancelled"),
)


def outcome(key: str, word: str, tone: str, detail: str = "", **extra) -> dict:
    return {"key": key, "word": word, "tone": tone, "detail": detail, **extra}


def mean_words(value) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def share_words(numerator: int, denominator: int) -> str:
    return f"{numerator / denominator:.0%}" if denominator else "n/a"


def p_words(value) -> str:
    if value is None:
        return "n/a"
    return "p < 0.0001" if value < 0.0001 else f"p = {value:.2g}"


@shared_read
def run_outcome(run: Run) -> dict:
    """What a run decided: not finished, failed or cancelled alike for every kind, else its handler's word.
    Read once per run within a page view (judging/memo.py): the runs page's outcome filter reads it to find
    the matches, and their rows say it again (a pointwise run's gate reads the baseline and the calibration)."""
    if not run.is_finished:
        return outcome("running", run.get_status_display(), "info")
    if run.status in ("failed", "cancelled"):
        return outcome("failed", run.get_status_display(), "bad" if run.status == "failed" else "warn",
                       (run.error or "").splitlines()[0][:160] if run.error else "")
    return handler_for(run.kind).outcome(run)
