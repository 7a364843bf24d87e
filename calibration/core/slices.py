"""Slices: the judge–human agreement and the human-corrected mean again over the items of each tag (a test
set's `tags`, kept on the sample's items), the worst slice first, and the lead's floor for the worst. No Django.

A slice is a smaller sample than the whole, so its interval is wider: a slice with fewer labelled items than
the level's minimum is shown (with its n) but never decides. Each slice is an object keyed by its figures
(`kappa`, `agreement`, `mean`), so another figure of the same tag — a run-to-run `noise` — can sit beside
them later without changing the shape.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

from calibration.core.agreement import LabelPair, judge_human
from calibration.core.ppi import corrected_mean, stratum_weights


def tags_in(tags_of: Mapping[Hashable, Sequence[str]]) -> list[str]:
    return sorted({tag for tags in tags_of.values() for tag in tags or ()})


def agreement_slices(
    pairs: Sequence[LabelPair],
    tags_of: Mapping[Hashable, Sequence[str]],
    *,
    label_kind: str,
    scale: tuple[int, int],
    n_resamples: int,
    seed: int,
) -> list[dict]:
    """[{tag, n_items, n_labels, kappa: {value, ci}, agreement: {value, ci}}] for every tag of the compared
    items, by tag: judge_human (the same figures and bootstrap as the whole) over the pairs of its items."""
    slices = []
    for tag in tags_in({p.item: tags_of.get(p.item, ()) for p in pairs}):
        tagged = [p for p in pairs if tag in tags_of.get(p.item, ())]
        figures = judge_human(tagged, label_kind=label_kind, scale=scale, n_resamples=n_resamples, seed=seed)
        kappa_key = "quadratic_kappa" if "quadratic_kappa" in figures["metrics"] else "kappa"
        agreement_key = "exact" if "exact" in figures["metrics"] else "percent"
        slices.append({
            "tag": tag,
            "n_items": figures["n_items"],
            "n_labels": figures["n_labels"],
            "kappa": figures["metrics"][kappa_key],
            "agreement": figures["metrics"][agreement_key],
        })
    return slices


def worst_first(slices: Sequence[dict], *, figure: str, min_items: int, n_key: str = "n_items") -> list[dict]:
    """The slices, each marked `decides` (it has the level's minimum of items), lowest `figure` first; a
    slice whose figure is undefined last."""

    def value(entry: dict):
        shown = entry.get(figure)
        return shown.get("value") if isinstance(shown, dict) else shown

    marked = [{**entry, "decides": entry.get(n_key, 0) >= min_items} for entry in slices]
    return sorted(marked, key=lambda e: (value(e) is None, value(e) if value(e) is not None else 0.0, e["tag"]))


def worst_deciding(slices: Sequence[dict], *, figure: str, min_items: int) -> dict | None:
    """The worst slice with enough items to decide, or None."""
    for entry in worst_first(slices, figure=figure, min_items=min_items):
        if entry["decides"] and (entry.get(figure) or {}).get("value") is not None:
            return entry
    return None


def slice_floor_line(
    slices: Sequence[dict], *, figure: str, figure_label: str, min_items: int, floor: float | None, judge: str
) -> str | None:
    """One line when the worst deciding slice is below the lead's floor ("judge-a: worst slice 'german':
    Cohen's kappa 0.31 [0.10, 0.52] on 24 items, below the slice floor 0.50"), else None."""
    if floor is None:
        return None
    worst = worst_deciding(slices, figure=figure, min_items=min_items)
    if worst is None or worst[figure]["value"] >= floor:
        return None
    ci = worst[figure].get("ci")
    interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
    return (
        f"worst slice below its floor: {judge} on tag '{worst['tag']}': {figure_label} {worst[figure]['value']:.2f}{interval} "
        f"on {worst['n_items']} items, below the slice floor {floor:.2f}"
    )


def corrected_slices(
    keys: Sequence[Hashable],
    human: Sequence[float],
    judge_labelled: Sequence[float],
    unlabelled: Mapping[Hashable, float],
    tags_of: Mapping[Hashable, Sequence[str]],
    *,
    strata: Sequence[str] | None = None,
    population_of=None,
    min_items: int = 0,
) -> list[dict]:
    """The PPI++ corrected mean of each tag's items, lowest mean first: [{tag, mean: {value, ci}, n_labelled,
    n_unlabelled, decides}] (decides: at least `min_items` labelled; mean null with fewer than 2 labelled or 2
    unlabelled items of the tag: no interval).

    keys/human/judge_labelled: the labelled items as corrected_mean takes them; unlabelled: {key: judge
    score} of the other items; strata and population_of(tag) -> {stratum: count}: the stratum weights of a
    stratified sample, recomputed within the tag."""
    slices = []
    for tag in tags_in(tags_of):
        rows = [i for i, key in enumerate(keys) if tag in tags_of.get(key, ())]
        others = [score for key, score in unlabelled.items() if tag in tags_of.get(key, ())]
        weights = None
        if strata is not None and population_of is not None:
            weights = stratum_weights([strata[i] for i in rows], population_of(tag))
        result = corrected_mean([human[i] for i in rows], [judge_labelled[i] for i in rows], others, weights=weights)
        defined = result is not None and all(math.isfinite(v) for v in [result["mean"], *result["ci95"]])
        slices.append({
            "tag": tag,
            "mean": {"value": result["mean"], "ci": result["ci95"]} if defined else {"value": None, "ci": None},
            "n_labelled": len(rows),
            "n_unlabelled": len(others),
            # ppi_py's power tuning divides by the judge scores' variance: one score on every item leaves it undefined.
            **(
                {} if defined else {
                    "note": "undefined: fewer than 2 labelled or 2 unlabelled items, or one judge score on all of them"
                }
            ),
        })
    return worst_first(slices, figure="mean", min_items=min_items, n_key="n_labelled")
