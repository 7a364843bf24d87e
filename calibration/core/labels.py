"""What a label may be, for each kind of run, and how a person's answer becomes one."""

from __future__ import annotations

SCORE = "score"
PASS_FAIL = "pass_fail"
PAIRWISE = "pairwise"

_PASS_FAIL = {"pass": "pass", "p": "pass", "fail": "fail", "f": "fail"}
# Pairwise labels name the version: 1 or A is A's reply, 2 or B is B's (CONTRACT §3, import-labels).
_PAIRWISE = {"a": "A", "1": "A", "b": "B", "2": "B", "tie": "tie", "t": "tie", "0": "tie", "equal": "tie"}


def parse_label(raw: object, *, label_kind: str, scale: tuple[int, int] = (1, 5)) -> str:
    """The canonical label ("1".."5", "pass"/"fail", "A"/"B"/"tie"); ValueError saying what is allowed."""
    text = str(raw).strip()
    if label_kind == SCORE:
        low, high = scale
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or str(value) != text.lstrip("+") or not low <= value <= high:
            raise ValueError(f"label {text!r} is not an integer score from {low} to {high}")
        return str(value)
    if label_kind == PASS_FAIL:
        try:
            return _PASS_FAIL[text.lower()]
        except KeyError:
            raise ValueError(f"label {text!r} is not pass or fail") from None
    if label_kind == PAIRWISE:
        try:
            return _PAIRWISE[text.lower()]
        except KeyError:
            raise ValueError(f"label {text!r} is not 1, 2 or tie (or A, B, tie)") from None
    raise ValueError(f"unknown label kind {label_kind!r}")


def label_value(label: str, *, label_kind: str) -> int | str:
    """A stored label in the form the statistics take: an int for scores, the text otherwise."""
    return int(label) if label_kind == SCORE else label


def pairwise_label_from_shown(shown: str, *, swapped: bool) -> str:
    """An annotator's answer about replies shown as 1 and 2, in the run's A/B terms."""
    shown = shown.strip().lower()
    if shown in ("tie", "t", "0"):
        return "tie"
    if shown not in ("1", "2"):
        raise ValueError(f"answer {shown!r} is not 1, 2 or tie")
    first, second = ("B", "A") if swapped else ("A", "B")
    return first if shown == "1" else second


