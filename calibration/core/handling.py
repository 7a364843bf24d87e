"""How labels and verdicts are counted before a judge–human figure is computed: the lead's declared handling,
and the same figure under every other handling (its sensitivity). No Django.

Three choices, each declared on the calibration policy (docs/calibration.md §4):

- annotators: `pooled` — every human label of an item is a pair with the judge's verdict (an item labelled
  by three people counts three times); `majority` — one label per item, the one more than half of its
  annotators gave, an item without such a label left out — or, where a lead resolved the item, the resolved
  label (`resolved`), majority or not;
- ties (pairwise labels only): `kept`; `human ties dropped` — a pair whose human label is a tie is left out;
  `dropped` — a pair where the person or the judge said tie is left out;
- the judge's non-answers (a labelled item the judge gave no usable verdict on): `disagreement` — compared as
  the value farthest from each label (agreement.farthest_label); `dropped` — left out; `tie` — counted as the
  judge's tie (pairwise only; on other labels a non-answer stays a disagreement).

Applied in that order: the people's labels are reduced first, then a non-answer is given its value, then
ties are left out (so a non-answer counted as a tie is left out with the ties when ties are `dropped`).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Hashable
from dataclasses import asdict, dataclass, replace

from calibration.core.agreement import LabelPair, comparison_details, farthest_label, judge_human
from calibration.core.labels import PAIRWISE

POOLED, MAJORITY = "pooled", "majority"
KEPT, HUMAN_TIES_DROPPED, DROPPED = "kept", "human ties dropped", "dropped"
DISAGREEMENT, TIE = "disagreement", "tie"

ANNOTATORS = (POOLED, MAJORITY)
TIES = (KEPT, HUMAN_TIES_DROPPED, DROPPED)
NON_ANSWERS = (DISAGREEMENT, DROPPED, TIE)

MAJORITY_ANNOTATOR = "majority"
# Why an imported run's non-answers are left out when the lead's policy counts them as disagreements: that
# rule stops a judge answering its way out of a lock, and an imported judge was run elsewhere — its figure is
# the published one (PandaLM's 0.478 leaves its 25 unreadable replies out).
IMPORTED_NOTE = "an imported run's unreadable replies are left out, as published"

_ANNOTATOR_WORDS = {POOLED: "pooled labels", MAJORITY: "majority labels"}
_TIE_WORDS = {KEPT: "ties kept", HUMAN_TIES_DROPPED: "human ties dropped", DROPPED: "ties dropped"}
_NON_ANSWER_WORDS = {
    DISAGREEMENT: "non-answers counted as disagreements",
    DROPPED: "non-answers dropped",
    TIE: "non-answers counted as the judge's ties",
}


@dataclass(frozen=True)
class Handling:
    annotators: str = POOLED
    ties: str = KEPT
    non_answers: str = DISAGREEMENT
    note: str = ""  # why the handling differs from the lead's declared one (an imported run)

    def __post_init__(self):
        for name, allowed in (("annotators", ANNOTATORS), ("ties", TIES), ("non_answers", NON_ANSWERS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}")

    @property
    def key(self) -> tuple[str, str, str]:
        return self.annotators, self.ties, self.non_answers

    def words(self, label_kind: str = PAIRWISE) -> str:
        """'pooled labels, ties kept, non-answers counted as disagreements' (no ties part but for pairwise)."""
        parts = [_ANNOTATOR_WORDS[self.annotators]]
        if label_kind == PAIRWISE:
            parts.append(_TIE_WORDS[self.ties])
        parts.append(_NON_ANSWER_WORDS[self.non_answers])
        text = ", ".join(parts)
        return f"{text} ({self.note})" if self.note else text

    def as_dict(self, label_kind: str = PAIRWISE) -> dict:
        return {**asdict(self), "words": self.words(label_kind)}


def effective(declared: Handling, *, label_kind: str, imported: bool = False) -> Handling:
    """The handling a figure is computed with: the declared one, as far as it applies to the labels (ties
    and `tie` non-answers are pairwise only), and an imported run's non-answers left out as published."""
    handling = declared
    if label_kind != PAIRWISE:
        handling = replace(handling, ties=KEPT, non_answers=DISAGREEMENT if handling.non_answers == TIE else handling.non_answers)
    if imported and handling.non_answers == DISAGREEMENT:
        handling = replace(handling, non_answers=DROPPED, note=IMPORTED_NOTE)
    return handling


def answered(judged: dict[Hashable, int | str | None], handling: Handling) -> dict[Hashable, int | str | None]:
    """The judge's verdicts with its non-answers as the handling counts them, for the figures that read
    verdicts item by item (the alternative annotator test): left out when `dropped`, a tie when `tie`, and
    kept as None (a loss) when counted as disagreements."""
    if handling.non_answers == DROPPED:
        return {item: verdict for item, verdict in judged.items() if verdict is not None}
    if handling.non_answers == TIE:
        return {item: "tie" if verdict is None else verdict for item, verdict in judged.items()}
    return judged


def every_handling(label_kind: str) -> list[Handling]:
    """Every handling that means something for these labels, declared order first."""
    if label_kind == PAIRWISE:
        return [Handling(*combo) for combo in itertools.product(ANNOTATORS, TIES, NON_ANSWERS)]
    return [Handling(a, KEPT, n) for a, n in itertools.product(ANNOTATORS, (DISAGREEMENT, DROPPED))]


def majority_label(labels: list) -> object | None:
    """The label more than half of the annotators gave; None when no label has a majority (1-1-1 of three,
    2-2 or 2-1-1 of four)."""
    label, count = Counter(labels).most_common(1)[0]
    return label if count * 2 > len(labels) else None


def handled_pairs(
    humans: dict[Hashable, dict[str, int | str]],
    judged: dict[Hashable, int | str | None],
    *,
    handling: Handling,
    label_kind: str,
    scales: dict[Hashable, tuple[int, int]] | None = None,
    resolved: dict[Hashable, int | str] | None = None,
) -> tuple[list[LabelPair], dict]:
    """The (judge, human) pairs a figure is computed on, and what was left out.

    `humans`: {item: {annotator: label}}; `judged`: {item: the judge's verdict, or None for a non-answer} —
    items missing from `judged` were not put to the judge and are not compared; `resolved`: {item: a lead's
    resolved label}, the item's one label under `majority`. Returns (pairs, counts):
    counts = {non_answers: non-answer items compared, left_out: {no_majority, non_answers, ties}}.
    """
    pairs: list[LabelPair] = []
    left_out = {"no_majority": 0, "non_answers": 0, "ties": 0}
    counted_non_answers = set()
    for item, by in humans.items():
        if item not in judged or not by:
            continue
        labels = dict(by)
        if handling.annotators == MAJORITY:
            winner = (resolved or {}).get(item)
            if winner is None:
                winner = majority_label(list(by.values()))
            if winner is None:
                left_out["no_majority"] += 1
                continue
            labels = {MAJORITY_ANNOTATOR: winner}
        verdict = judged[item]
        if verdict is None and handling.non_answers == DROPPED:
            left_out["non_answers"] += 1
            continue
        scale = (scales or {}).get(item, (1, 5))
        for annotator, human in labels.items():
            value = verdict
            if value is None:
                value = "tie" if handling.non_answers == TIE else farthest_label(human, label_kind=label_kind, scale=scale)
            if (handling.ties != KEPT and human == "tie") or (handling.ties == DROPPED and value == "tie"):
                left_out["ties"] += 1
                continue
            if verdict is None:
                counted_non_answers.add(item)
            pairs.append(LabelPair(item, annotator, value, human))
    return pairs, {"non_answers": len(counted_non_answers), "left_out": left_out}


def sensitivity(
    humans: dict[Hashable, dict[str, int | str]],
    judged: dict[Hashable, int | str | None],
    *,
    declared: Handling,
    label_kind: str,
    figure,
    scales: dict[Hashable, tuple[int, int]] | None = None,
    resolved: dict[Hashable, int | str] | None = None,
) -> list[dict]:
    """The same figures under every other handling, point estimates: [{annotators, ties, non_answers, words,
    n_items, n_labels, **figure(pairs)}]. `figure(pairs)` returns the point figures ({kappa, agreement})."""
    rows = []
    for handling in every_handling(label_kind):
        if handling.key == declared.key:
            continue
        pairs, _ = handled_pairs(humans, judged, handling=handling, label_kind=label_kind, scales=scales, resolved=resolved)
        rows.append(
            {
                **handling.as_dict(label_kind),
                "n_items": len({p.item for p in pairs}),
                "n_labels": len(pairs),
                **figure(pairs),
            }
        )
    return rows


def measured(
    humans: dict[Hashable, dict[str, int | str]],
    judged: dict[Hashable, int | str | None],
    *,
    declared: Handling,
    label_kind: str,
    scale: tuple[int, int] = (1, 5),
    scales: dict[Hashable, tuple[int, int]] | None = None,
    n_resamples: int,
    seed: int,
    resolved: dict[Hashable, int | str] | None = None,
) -> dict | None:
    """A judge's figures against people under the declared handling (agreement.judge_human, with its
    intervals), what it left out, and the same figures under every other handling; None when no pair is
    left to compare. Adds to judge_human's keys: details, n_unreadable, handling, sensitivity."""
    pairs, counts = handled_pairs(humans, judged, handling=declared, label_kind=label_kind, scales=scales, resolved=resolved)
    if not pairs:
        return None
    figures = judge_human(pairs, label_kind=label_kind, scale=scale, n_resamples=n_resamples, seed=seed)
    unreadable = {p.item for p in pairs if judged[p.item] is None}
    figures["details"] = comparison_details(pairs, unreadable=unreadable, label_kind=label_kind, scale=scale)
    figures["n_unreadable"] = counts["non_answers"]
    figures["handling"] = {**declared.as_dict(label_kind), "left_out": counts["left_out"]}

    def points(alternative_pairs: list[LabelPair]) -> dict:
        if not alternative_pairs:
            return {"kappa": None, "agreement": None}
        point = judge_human(alternative_pairs, label_kind=label_kind, scale=scale, n_resamples=0)
        return {"kappa": point["kappa"], "agreement": point["agreement"]}

    figures["sensitivity"] = sensitivity(
        humans, judged, declared=declared, label_kind=label_kind, figure=points, scales=scales, resolved=resolved
    )
    figures["pairs"] = pairs  # what else a result keeps is read from the same pairs (alt_test.judge_beside_people)
    return figures
